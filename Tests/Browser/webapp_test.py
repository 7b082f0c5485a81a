#!/usr/bin/env python3
"""The web app in a real browser: headless Debian chromium driven by Selenium, against a running
http-gateway and the services behind it. Each step saves a PNG screenshot (375 px wide) into
--artefacts. Exit status 0 when every step held; otherwise the failed step, the browser's console
and a screenshot of the moment. Usage:

    webapp_test.py --url http://127.0.0.1:7380/ --token lht_... --artefacts DIR
"""
import argparse
import datetime
import json
import os
import sys
import time
import urllib.error
import urllib.request
import zoneinfo

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

WIDTH, HEIGHT = 375, 812
STEADY = "#0EBF6E"


class StepFailed(Exception):
    pass


class API:
    """POST /v1/<op> with the bearer token, as any HTTP client does."""

    def __init__(self, url, token):
        self.url, self.token = url.rstrip("/"), token

    def call(self, op, data):
        request = urllib.request.Request(f"{self.url}/v1/{op}", data=json.dumps(data).encode(), method="POST", headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                reply = json.load(response)
        except urllib.error.HTTPError as error:
            raise StepFailed(f"{op}: HTTP {error.code} {error.read().decode(errors='replace')}")
        if not reply.get("ok"):
            raise StepFailed(f"{op}: {reply}")
        return reply["data"]


class Browser:
    def __init__(self, artefacts, language):
        self.artefacts = artefacts
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars",
                         f"--window-size={WIDTH},{HEIGHT}", f"--lang={language}"]:
            options.add_argument(argument)
        options.add_experimental_option("prefs", {"intl.accept_languages": language})
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))
        self.driver.set_window_size(WIDTH, HEIGHT)

    def wait(self, what, condition, timeout=15):
        """Polls `condition` (a function of the driver) until it returns something truthy."""
        deadline = time.monotonic() + timeout
        last_error = None
        while time.monotonic() < deadline:
            try:
                value = condition(self.driver)
                if value:
                    return value
            except Exception as error:  # an element replaced while read: try again
                last_error = error
            time.sleep(0.1)
        raise StepFailed(f"waited {timeout} s for {what}" + (f" (last error: {last_error})" if last_error else ""))

    def css(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def visible(self, element_id):
        return self.driver.execute_script(f"return !document.getElementById('{element_id}').hidden")

    def screenshot(self, name):
        """The whole page at the phone's width: the window grows to the page's height for the picture."""
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(WIDTH, max(HEIGHT, height))
        path = os.path.join(self.artefacts, f"{name}.png")
        self.driver.save_screenshot(path)
        self.driver.set_window_size(WIDTH, HEIGHT)
        print(f"screenshot {path}", flush=True)

    def console(self):
        try:
            return [entry["message"] for entry in self.driver.get_log("browser")]
        except Exception:
            return []

    def fits_the_phone(self):
        width = self.driver.execute_script("return document.documentElement.scrollWidth")
        if width > WIDTH:
            raise StepFailed(f"the page is {width} px wide on a {WIDTH}-px screen")

    def sign_in(self, token):
        field = self.wait("the sign-in form", lambda d: self.visible("signin") and d.find_element(By.ID, "token-input"))
        field.clear()
        field.send_keys(token)
        self.driver.find_element(By.CSS_SELECTOR, "#signin-form button[type=submit]").click()


def step(name):
    print(f"step: {name}", flush=True)


def occurrence_of(browser, reminder_id):
    """The first upcoming occurrence of the reminder: its status, cause, and the element."""
    items = browser.css(f'li.occurrence[data-reminder-id="{reminder_id}"]')
    return items[0] if items else None


def run(arguments):
    api = API(arguments.url, arguments.token)
    user = api.call("user.get", {})
    zone = zoneinfo.ZoneInfo(user["timeZone"])
    # A mindfulness reminder two hours from now: a session logged now covers it (look-back 12 h).
    due = datetime.datetime.now(zone) + datetime.timedelta(hours=2)
    mindfulness = api.call("reminder.put", {"activity": "mindfulness", "time": due.strftime("%H:%M"), "lookbackHours": 12})["id"]
    # A NoAlc reminder at 21:00 asks about its own day: a test firing's check-in is for today.
    noalc = api.call("reminder.put", {"activity": "noalc", "time": "21:00"})["id"]
    today = datetime.datetime.now(zone).date().isoformat()

    browser = Browser(arguments.artefacts, "en")
    try:
        step("sign in with a token")
        browser.driver.get(arguments.url)
        browser.wait("the sign-in form", lambda d: browser.visible("signin"))
        browser.screenshot("01-sign-in")
        browser.sign_in(arguments.token)
        browser.wait("the app, loaded", lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
        browser.wait("the mindfulness reminder, scheduled", lambda d: (occurrence_of(browser, mindfulness) or None)
                     and occurrence_of(browser, mindfulness).get_attribute("data-status") == "scheduled")
        browser.wait("the stream, live", lambda d: "live" in d.find_element(By.ID, "connection").text)
        browser.fits_the_phone()
        check_labels(browser)
        browser.screenshot("02-signed-in")

        step("log a session: the upcoming reminder shows as cancelled, with the session as its cause")
        browser.driver.find_element(By.CSS_SELECTOR, "input[name=activity][value=mindfulness]").click()
        minutes = browser.driver.find_element(By.ID, "minutes-input")
        minutes.clear()
        minutes.send_keys("20")
        browser.driver.find_element(By.ID, "log-session").click()
        browser.wait("the logged message", lambda d: "Logged: Mindfulness, 20 min" in d.find_element(By.ID, "status").text)
        sessions = api.call("session.list", {
            "from": (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)).isoformat(),
            "until": (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=10)).isoformat()})["sessions"]
        if len(sessions) != 1 or sessions[0]["activity"] != "mindfulness":
            raise StepFailed(f"the session logger holds {sessions}, not the one mindfulness session")
        session_id = sessions[0]["id"]
        item = browser.wait("the reminder, cancelled by the session", lambda d: (
            (element := occurrence_of(browser, mindfulness)) is not None and element.get_attribute("data-status") == "cancelled"
            and element.get_attribute("data-cause").lower() == session_id.lower() and element))
        cause = item.find_element(By.CSS_SELECTOR, ".cause").text
        if "Mindfulness, 20 min" not in cause:
            raise StepFailed(f"the cause reads {cause!r}")
        browser.screenshot("03-session-cancels-reminder")

        step("restore the cancelled reminder")
        item.find_element(By.CSS_SELECTOR, "button.restore").click()
        browser.wait("the reminder, scheduled again", lambda d: occurrence_of(browser, mindfulness).get_attribute("data-status") == "scheduled")
        browser.screenshot("04-restored")

        step("a notification arrives live; its quick action logs a check-in that the calendar shows")
        api.call("reminder.test", {"reminderId": noalc})
        notification = browser.wait("the test notification", lambda d: (found := browser.css("li.notification.noalc")) and found[0])
        browser.wait("the notification's actions", lambda d: len(notification.find_elements(By.CSS_SELECTOR, "button.action")) == 3)
        browser.screenshot("05-notification")
        notification.find_element(By.CSS_SELECTOR, 'button[data-action-id="noalc.steady"]').click()
        browser.wait("the check-in's outcome", lambda d: "Logged Steady" in notification.find_element(By.CSS_SELECTOR, ".outcome").text)
        entries = api.call("noalc.list", {"from": today, "until": today})["entries"]
        if [entry["level"] for entry in entries] != ["steady"]:
            raise StepFailed(f"noalc.list for {today} gives {entries}")
        fill = browser.wait("today steady in the calendar", lambda d: (marks := browser.css(f"#day-{today} circle.noalc.steady"))
                            and marks[0].get_attribute("fill"))
        if fill.upper() != STEADY:
            raise StepFailed(f"today's mark is {fill}, not {STEADY}")
        browser.wait("the streak of 1 day", lambda d: d.find_element(By.ID, "streak-days").text == "1 day")
        browser.fits_the_phone()
        browser.screenshot("06-check-in-in-calendar")
        # Until the wrong token (whose 401s the browser logs), the page logged no error.
        errors = [entry["message"] for entry in browser.driver.get_log("browser") if entry["level"] == "SEVERE"]
        if errors:
            raise StepFailed(f"the browser logged errors: {errors}")

        step("a wrong token brings back the sign-in")
        # Set it from a same-origin page that runs no app: a timer of the open app would otherwise
        # meet the wrong token first, get its 401 and clear it before the reload reads it.
        browser.driver.get(f"{arguments.url.rstrip('/')}/app.css")
        browser.driver.execute_script("localStorage.setItem('lht.token', 'lht_' + 'x'.repeat(43))")
        browser.driver.get(arguments.url)
        browser.wait("the sign-in, with the refusal", lambda d: browser.visible("signin") and not browser.visible("app")
                     and "not accepted" in d.find_element(By.ID, "signin-error").text)
        if browser.driver.execute_script("return localStorage.getItem('lht.token')") is not None:
            raise StepFailed("the refused token is still stored")
        browser.sign_in("lht_" + "y" * 43)
        # Refused: the form is empty again (it held the token until the reply came), with the refusal.
        browser.wait("the sign-in form refusing a wrong token", lambda d: browser.visible("signin")
                     and d.find_element(By.ID, "token-input").get_attribute("value") == ""
                     and "not accepted" in d.find_element(By.ID, "signin-error").text)
        browser.screenshot("07-wrong-token")
    except Exception:
        fail(browser, "failed-en")
        raise
    finally:
        browser.driver.quit()

    step("German when the browser asks for de")
    german = Browser(arguments.artefacts, "de")
    try:
        german.driver.get(arguments.url)
        german.sign_in(arguments.token)
        german.wait("the app, loaded", lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
        texts = {
            "html lang": german.driver.execute_script("return document.documentElement.lang"),
            "reminders": german.driver.find_element(By.ID, "upcoming-title").text,
            "log button": german.driver.find_element(By.ID, "log-session").text,
            "streak": german.driver.find_element(By.ID, "streak-days").text,
        }
        expected = {"html lang": "de", "reminders": "Erinnerungen", "log button": "Einheit eintragen", "streak": "1 Tag"}
        if texts != expected:
            raise StepFailed(f"the German page reads {texts}, not {expected}")
        # The notification of the English session, from notification.list, shows its check-in as done.
        answered = german.wait("the earlier notification, answered", lambda d: (found := german.css("li.notification.noalc.done")) and found[0])
        outcome = answered.find_element(By.CSS_SELECTOR, ".outcome").text
        chosen = [button.get_attribute("data-action-id") for button in answered.find_elements(By.CSS_SELECTOR, "button.action.chosen")]
        if "Steady für" not in outcome or chosen != ["noalc.steady"]:
            raise StepFailed(f"the answered notification reads {outcome!r} with {chosen} chosen")
        german.fits_the_phone()
        german.screenshot("08-german")
    except Exception:
        fail(german, "failed-de")
        raise
    finally:
        german.driver.quit()


def check_labels(browser):
    """Every field has a label, every button a name, and notifications are announced."""
    unlabelled = browser.driver.execute_script("""
        const missing = [];
        for (const input of document.querySelectorAll('input')) if (input.labels.length === 0) missing.push(input.outerHTML);
        for (const button of document.querySelectorAll('button'))
            if (!button.textContent.trim() && !button.getAttribute('aria-label')) missing.push(button.outerHTML);
        if (document.getElementById('notifications').getAttribute('aria-live') !== 'polite') missing.push('aria-live on #notifications');
        return missing;""")
    if unlabelled:
        raise StepFailed(f"without a label: {unlabelled}")


def fail(browser, name):
    try:
        browser.screenshot(name)
    except Exception as error:
        print(f"no screenshot of the failure: {error}", file=sys.stderr)
    for line in browser.console():
        print(f"console: {line}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--artefacts", required=True)
    arguments = parser.parse_args()
    os.makedirs(arguments.artefacts, exist_ok=True)
    try:
        run(arguments)
    except StepFailed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    print("all steps passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
