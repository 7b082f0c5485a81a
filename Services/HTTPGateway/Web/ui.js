// Builds the page's changing parts from replies: plain DOM, text set as text (never as HTML).

import { formatDay, formatTime, t } from "./i18n.js";
import { addDays } from "./days.js";

/** An element with attributes (`on…` functions become listeners) and children (strings become text). */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else element.setAttribute(name, value === true ? "" : value);
  }
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}

/** Today, tomorrow, or the weekday and date. */
export function dayHeading(day, today) {
  if (day === today) return t("today");
  if (day === addDays(today, 1)) return t("tomorrow");
  return formatDay(day);
}

/** What covers an occurrence, in words: the session or check-in behind its `cause`. */
export function describeCause(id, causes, zone) {
  const cause = causes.get(id?.toLowerCase());
  if (cause?.kind === "session") {
    return t("cancelledBySession", { activity: t(cause.activity), minutes: cause.minutes, time: formatTime(cause.start, zone) });
  }
  if (cause?.kind === "entry") return t("cancelledByEntry", { level: t(cause.level), day: formatDay(cause.day, { day: "numeric", month: "long" }) });
  return t("cancelledByOther", { id });
}

/** The upcoming occurrences, by day; a cancelled one names its cause and offers restore. */
export function renderUpcoming(container, occurrences, { today, zone, causes, onRestore }) {
  container.replaceChildren();
  if (occurrences.length === 0) return container.append(el("p", { class: "hint" }, t("noReminders")));
  const byDay = new Map();
  for (const occurrence of occurrences) {
    if (!byDay.has(occurrence.day)) byDay.set(occurrence.day, []);
    byDay.get(occurrence.day).push(occurrence);
  }
  for (const [day, list] of byDay) {
    const heading = dayHeading(day, today);
    container.append(el("h3", { class: "day" }, heading));
    container.append(el("ul", { class: "occurrences" }, ...list.map((occurrence) => {
      const activity = t(occurrence.activity);
      const cancelled = occurrence.status === "cancelled";
      return el("li", {
        class: `occurrence status-${occurrence.status}`,
        dataset: { reminderId: occurrence.reminderId, at: occurrence.at, status: occurrence.status, cause: occurrence.cause ?? "" },
      },
      el("span", { class: "time" }, occurrence.localTime),
      el("span", { class: `what ${occurrence.activity}` }, activity),
      el("span", { class: "badge" }, t(occurrence.status)),
      occurrence.cause ? el("p", { class: "cause" }, describeCause(occurrence.cause, causes, zone)) : null,
      cancelled ? el("button", {
        type: "button", class: "restore",
        "aria-label": t("restoreLabel", { activity, time: occurrence.localTime, day: heading }),
        onclick: (event) => onRestore(occurrence, event.currentTarget),
      }, t("restore")) : null);
    })));
  }
}

/** One notification with its quick actions; `onAction(notification, action, item, button)` runs them. */
export function renderNotification(notification, onAction) {
  const item = el("li", { class: `notification ${notification.activity}`, dataset: { notificationId: notification.notificationId } },
    el("p", { class: "title" }, notification.title, notification.test ? el("span", { class: "badge" }, t("test")) : null),
    notification.body ? el("p", { class: "body" }, notification.body) : null,
    el("div", { class: "actions" }, ...(notification.actions ?? []).map((action) => el("button", {
      type: "button", class: `action ${action.id.replace(/\./g, "-")}`, dataset: { actionId: action.id },
      onclick: (event) => onAction(notification, action, item, event.currentTarget),
    }, action.title))),
    el("p", { class: "outcome", "aria-live": "polite" }));
  return item;
}

/** A NoAlc notification whose check-in is logged: the entry's level chosen, its buttons done. */
export function markAnswered(item, entry) {
  item.querySelector(".outcome").textContent = t("loggedCheckIn", { level: t(entry.level), day: formatDay(entry.day, { weekday: "short", day: "numeric", month: "short" }) });
  item.classList.add("done");
  for (const button of item.querySelectorAll("button.action")) {
    button.disabled = true;
    button.classList.toggle("chosen", button.dataset.actionId === `noalc.${entry.level}`);
  }
}

/** The streak and jokers from streak.get. */
export function renderStreak(state) {
  const days = state.streakDays;
  document.getElementById("streak-days").textContent = t(days === 1 ? "streakDays" : "streakDaysPlural", { count: days });
  document.getElementById("streak-jokers").textContent = String(state.rewardsAvailable);
  document.getElementById("streak-jokers-detail").textContent = t("jokersDetail", {
    earned: state.rewardsEarned, used: state.rewardsUsed, lost: state.rewardsLost,
  });
}

/** The status line: a success, or an error with class "error". */
export function setStatus(text, isError = false) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.classList.toggle("error", isError);
}
