// The web app: sign in with a token, then reminders, logging, the NoAlc calendar and live
// notifications, each from the gateway's ops (PROTOCOL "HTTP gateway").

import { ApiError, Unauthorized, call, token, uuid } from "./api.js";
import { follow } from "./events.js";
import { formatDay, formatMonth, t, translatePage } from "./i18n.js";
import { addDays, monthDays, monthOf, shiftMonth, todayIn } from "./days.js";
import { calendarSVG } from "./calendar.js";
import { loadCauses } from "./causes.js";
import { markAnswered, renderNotification, renderStreak, renderUpcoming, setStatus } from "./ui.js";

const $ = (id) => document.getElementById(id);
const shortDay = { weekday: "short", day: "numeric", month: "short" };

const state = {
  user: null, zone: "UTC", month: null,
  // A log that failed on the way keeps its id, so a retry is stored once (the id is the idempotency key).
  pending: null,
  stopEvents: null, retry: null, shown: new Set(), timers: new Map(),
};

const today = () => todayIn(state.zone);

/** Runs `work`; a 401 brings back the sign-in, any other failure is shown. Returns work's result or undefined. */
async function guarded(work) {
  try {
    return await work();
  } catch (error) {
    if (error instanceof Unauthorized) return void showSignIn(t("tokenRefused"));
    const text = error instanceof ApiError ? t("failed", { message: error.message }) : t("offline");
    setStatus(text, true);
    if (!$("signin").hidden) $("signin-error").textContent = text;
    if (!(error instanceof ApiError)) console.error(error);
  }
}

function showView(name) {
  $("signin").hidden = name !== "signin";
  $("app").hidden = name !== "app";
  $("connection").hidden = name !== "app";
  document.body.dataset.view = name;
}

function showSignIn(message = "") {
  token.clear();
  stopEvents();
  state.user = null;
  showView("signin");
  $("signin-error").textContent = message;
  $("token-input").value = "";
  $("token-input").focus();
}

/** Checks the token with user.get, then shows and fills the app. */
async function enter() {
  const user = await call("user.get");
  state.user = user.userId;
  state.zone = user.timeZone ?? "UTC";
  state.month = monthOf(today());
  showView("app");
  $("user-name").textContent = t("signedInAs", { user: user.userId });
  startEvents();
  await Promise.all([loadUpcoming(), loadCalendar(), loadStreak(), loadNotifications()]);
  document.body.dataset.ready = "true";
}

// MARK: Reminders

async function loadUpcoming() {
  $("checkin-title").textContent = t("checkInTitle", { day: formatDay(addDays(today(), -1), shortDay) });
  const { occurrences = [] } = await call("reminder.upcoming", { days: 8 });
  const causes = await loadCauses(occurrences, today());
  renderUpcoming($("upcoming"), occurrences, { today: today(), zone: state.zone, causes, onRestore: restore });
}

async function restore(occurrence, button) {
  button.disabled = true;
  const done = await guarded(async () => {
    await call("reminder.restore", { reminderId: occurrence.reminderId, at: occurrence.at });
    setStatus(t("restored"));
    await loadUpcoming();
    return true;
  });
  if (!done) button.disabled = false;
}

// MARK: Logging

/** The pending log for `key`, or a new one with a fresh id and end. */
function pendingLog(key) {
  if (state.pending?.key !== key) state.pending = { key, id: uuid(), at: new Date() };
  return state.pending;
}

async function log(op, key, data, message) {
  const pending = pendingLog(key);
  const done = await guarded(async () => {
    try {
      await call(op, { id: pending.id, ...data(pending.at), source: "web" });
    } catch (error) {
      // Refused for good (not lost on the way): the next try is a new log.
      if (error instanceof ApiError) state.pending = null;
      throw error;
    }
    state.pending = null;
    setStatus(message);
    return true;
  });
  return done === true;
}

async function logSession(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const activity = form.elements.activity.value;
  const minutes = Number(form.elements.minutes.value);
  const button = $("log-session");
  button.disabled = true;
  const logged = await log("session.log", `session/${activity}/${minutes}`, (end) => ({
    activity, start: new Date(end.getTime() - minutes * 60_000).toISOString(), end: end.toISOString(),
  }), t("loggedSession", { activity: t(activity), minutes }));
  button.disabled = false;
  // The planner cancels what the session covers once it has the session: its event refreshes the
  // list; these refreshes are for a stream that is down.
  if (logged) refreshSoon(["upcoming", "calendar"], [1500, 4000]);
}

async function checkIn(level, button) {
  const day = addDays(today(), -1);
  button.disabled = true;
  const logged = await log("noalc.log", `noalc/${day}/${level}`, () => ({ day, level }),
    t("loggedCheckIn", { level: t(level), day: formatDay(day, shortDay) }));
  button.disabled = false;
  if (logged) refreshSoon(["calendar", "streak", "upcoming"], [0, 1500, 4000]);
}

// MARK: Calendar and streak

async function loadCalendar() {
  const month = state.month;
  const days = monthDays(month);
  const [calendar, summary] = await Promise.all([
    call("calendar.get", { month }),
    call("daily.summary", { from: days[0], until: days.at(-1), timeZone: state.zone }),
  ]);
  if (month !== state.month) return;
  // As `lht calendar`: the level and colour from calendar.get, the rings from daily.summary.
  const info = new Map();
  for (const day of summary.days ?? []) {
    info.set(day.day, { level: day.noalc, mindfulnessMinutes: day.mindfulnessMinutes, workoutMinutes: day.workoutMinutes });
  }
  for (const day of calendar.days ?? []) {
    const entry = info.get(day.day) ?? {};
    if (day.level) Object.assign(entry, { level: day.level, color: day.color });
    info.set(day.day, entry);
  }
  const labels = {
    title: `${formatMonth(month)} · ${state.user}`,
    weekdays: t("weekdays").split(" "),
    legend: ["legendSteady", "legendEasy", "legendWild", "legendWorkout", "legendMindfulness"].map((key) => t(key)),
  };
  $("calendar").innerHTML = calendarSVG(month, info, labels, today());
  const count = (level) => [...info.values()].filter((day) => day.level === level).length;
  $("calendar-month").textContent = formatMonth(month);
  $("calendar-summary").textContent = t("calendarSummary", { month: formatMonth(month), steady: count("steady"), easy: count("easy"), wild: count("wild") });
}

async function loadStreak() {
  renderStreak(await call("streak.get", { asOf: today() }));
}

async function changeMonth(delta) {
  state.month = shiftMonth(state.month, delta);
  await guarded(loadCalendar);
}

const loaders = { upcoming: loadUpcoming, calendar: loadCalendar, streak: loadStreak };

/** Reloads each part after each delay, a later request for a part replacing an earlier one not yet run. */
function refreshSoon(parts, delays = [300]) {
  for (const part of parts) {
    for (const timer of state.timers.get(part) ?? []) clearTimeout(timer);
    state.timers.set(part, delays.map((delay) => setTimeout(() => state.user && guarded(loaders[part]), delay)));
  }
}

// MARK: Notifications

async function loadNotifications() {
  const { notifications = [] } = await call("notification.list", {});
  // The latest few of the last day: the ones a person may still act on.
  const since = Date.now() - 86_400_000;
  const recent = notifications.filter((item) => Date.parse(item.sentAt) >= since).slice(-3);
  // A check-in already logged for its day shows as answered.
  const days = recent.map((item) => item.targetDay).filter(Boolean).sort();
  const { entries = [] } = days.length ? await call("noalc.list", { from: days[0], until: days.at(-1) }) : {};
  const logged = new Map(entries.map((entry) => [entry.day, entry]));
  recent.forEach((item) => showNotification(item, logged.get(item.targetDay)));
}

function showNotification(notification, answer) {
  if (state.shown.has(notification.notificationId)) return;
  state.shown.add(notification.notificationId);
  const list = $("notifications");
  const item = renderNotification(notification, runAction);
  if (answer && notification.activity === "noalc") markAnswered(item, answer);
  list.prepend(item);
  while (list.children.length > 20) list.lastElementChild.remove();
  $("notifications-empty").hidden = true;
}

async function runAction(notification, action, item) {
  const buttons = [...item.querySelectorAll("button")];
  buttons.forEach((each) => { each.disabled = true; });
  const reply = await guarded(() => call("notification.action", { notificationId: notification.notificationId, actionId: action.id }));
  const outcome = item.querySelector(".outcome");
  if (reply?.entry) {
    markAnswered(item, reply.entry);
    // Show the month the check-in went into.
    state.month = monthOf(reply.entry.day);
    return refreshSoon(["calendar", "streak", "upcoming"], [0, 1500, 4000]);
  }
  buttons.forEach((each) => { each.disabled = false; });
  if (reply?.deepLink) {
    // lht://open/meditation or lht://open/workout: the log form, set to that activity.
    const activity = reply.deepLink.includes("workout") ? "workout" : "mindfulness";
    document.querySelector(`input[name=activity][value=${activity}]`).checked = true;
    $("minutes-input").focus();
    outcome.textContent = t("openedActivity", { activity: t(activity) });
  }
}

// MARK: Live events

function startEvents() {
  stopEvents();
  state.stopEvents = follow({
    "notify": (envelope) => showNotification(envelope.data),
    "reminder.cancelled": () => refreshSoon(["upcoming"]),
    "reminder.restored": () => refreshSoon(["upcoming"]),
    "session.logged": () => refreshSoon(["calendar"]),
    "noalc.logged": () => refreshSoon(["calendar", "upcoming"]),
    "streak.updated": () => refreshSoon(["calendar", "streak"]),
  }, setConnection, () => {
    // The stream refused the token: so does user.get (and the sign-in comes back), or it was revoked
    // and added again meanwhile: follow again.
    state.retry = setTimeout(() => guarded(async () => { await call("user.get"); if (state.user) startEvents(); }), 5000);
  });
}

function stopEvents() {
  clearTimeout(state.retry);
  state.stopEvents?.();
  state.stopEvents = null;
}

function setConnection(live) {
  const line = $("connection");
  line.textContent = live ? `● ${t("live")}` : t("connecting");
  line.classList.toggle("live", live);
}

// MARK: Start

translatePage();
$("signin-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("token-input").value.trim();
  if (!value) return;
  token.set(value);
  $("signin-error").textContent = "";
  guarded(enter);
});
$("signout").addEventListener("click", () => showSignIn());
$("session-form").addEventListener("submit", logSession);
for (const button of document.querySelectorAll("#checkin .level")) {
  button.addEventListener("click", () => checkIn(button.dataset.level, button));
}
$("month-previous").addEventListener("click", () => changeMonth(-1));
$("month-next").addEventListener("click", () => changeMonth(1));
// Statuses change at each occurrence's time (sent, not needed): keep the list current.
setInterval(() => state.user && !document.hidden && guarded(loadUpcoming), 60_000);

if (token.get()) {
  showView("app");
  guarded(enter);
} else {
  showSignIn();
}
