// German or English, by the browser's preferred languages (the first of them that is either).

const strings = {
  en: {
    appTitle: "Lean Health Timer", signInTitle: "Sign in", tokenLabel: "Access token", signIn: "Sign in",
    signInHint: "Ask for a token, or make one with: lht tokens add <your user id>",
    tokenRefused: "This token was not accepted. Sign in again.", signOut: "Sign out", signedInAs: "Signed in as {user}",
    logTitle: "Log", activity: "Activity", mindfulness: "Mindfulness", workout: "Workout", noalc: "NoAlc",
    minutes: "Minutes", logSession: "Log session", loggedSession: "Logged: {activity}, {minutes} min",
    checkInTitle: "NoAlc check-in for yesterday ({day})", loggedCheckIn: "Logged {level} for {day}",
    steady: "Steady", easy: "Easy", wild: "Wild",
    upcomingTitle: "Reminders", noReminders: "No reminders in the next 8 days.",
    today: "Today", tomorrow: "Tomorrow",
    scheduled: "scheduled", cancelled: "cancelled", fired: "sent", suppressed: "not needed", missed: "missed", skipped: "paused",
    cancelledBySession: "Done: {activity}, {minutes} min at {time}", cancelledByEntry: "Checked in: {level} for {day}",
    cancelledByOther: "Covered by {id}", restore: "Restore", restoreLabel: "Restore the {activity} reminder at {time} on {day}",
    restored: "Restored: the reminder will come.",
    calendarTitle: "NoAlc calendar", previousMonth: "Previous month", nextMonth: "Next month",
    streak: "Streak", streakDays: "{count} day", streakDaysPlural: "{count} days", jokers: "Jokers",
    jokersDetail: "earned {earned}, used {used}, lost {lost}",
    legendSteady: "NoAlc steady", legendEasy: "easy", legendWild: "wild", legendWorkout: "workout", legendMindfulness: "mindfulness",
    calendarSummary: "{month}: {steady} steady, {easy} easy, {wild} wild days",
    weekdays: "Mo Tu We Th Fr Sa Su",
    notificationsTitle: "Notifications", noNotifications: "Notifications appear here as they arrive.",
    live: "live", connecting: "connecting…", test: "test", done: "Done",
    openedActivity: "Log your {activity} below.", failed: "Did not work: {message}", offline: "The server cannot be reached.",
  },
  de: {
    appTitle: "Lean Health Timer", signInTitle: "Anmelden", tokenLabel: "Zugangs-Token", signIn: "Anmelden",
    signInHint: "Frag nach einem Token oder erstelle eines mit: lht tokens add <deine User-ID>",
    tokenRefused: "Dieses Token wurde nicht angenommen. Bitte neu anmelden.", signOut: "Abmelden", signedInAs: "Angemeldet als {user}",
    logTitle: "Eintragen", activity: "Aktivität", mindfulness: "Meditation", workout: "Workout", noalc: "NoAlc",
    minutes: "Minuten", logSession: "Einheit eintragen", loggedSession: "Eingetragen: {activity}, {minutes} Min.",
    checkInTitle: "NoAlc Check-in für gestern ({day})", loggedCheckIn: "{level} für {day} eingetragen",
    steady: "Steady", easy: "Easy", wild: "Wild",
    upcomingTitle: "Erinnerungen", noReminders: "Keine Erinnerungen in den nächsten 8 Tagen.",
    today: "Heute", tomorrow: "Morgen",
    scheduled: "geplant", cancelled: "entfällt", fired: "gesendet", suppressed: "nicht nötig", missed: "verpasst", skipped: "pausiert",
    cancelledBySession: "Erledigt: {activity}, {minutes} Min. um {time}", cancelledByEntry: "Eingecheckt: {level} für {day}",
    cancelledByOther: "Erledigt durch {id}", restore: "Wiederherstellen", restoreLabel: "Erinnerung {activity} um {time} am {day} wiederherstellen",
    restored: "Wiederhergestellt: die Erinnerung kommt.",
    calendarTitle: "NoAlc-Kalender", previousMonth: "Voriger Monat", nextMonth: "Nächster Monat",
    streak: "Serie", streakDays: "{count} Tag", streakDaysPlural: "{count} Tage", jokers: "Joker",
    jokersDetail: "verdient {earned}, eingesetzt {used}, verloren {lost}",
    legendSteady: "NoAlc steady", legendEasy: "easy", legendWild: "wild", legendWorkout: "Workout", legendMindfulness: "Meditation",
    calendarSummary: "{month}: {steady} Tage steady, {easy} easy, {wild} wild",
    weekdays: "Mo Di Mi Do Fr Sa So",
    notificationsTitle: "Benachrichtigungen", noNotifications: "Benachrichtigungen erscheinen hier, sobald sie kommen.",
    live: "live", connecting: "verbinde…", test: "Test", done: "Erledigt",
    openedActivity: "Trag deine {activity} unten ein.", failed: "Hat nicht geklappt: {message}", offline: "Der Server ist nicht erreichbar.",
  },
};

/** "de" or "en" for a list of language tags such as navigator.languages. */
export function pickLanguage(tags) {
  for (const tag of tags ?? []) {
    const primary = String(tag).toLowerCase().split("-")[0];
    if (primary in strings) return primary;
  }
  return "en";
}

export const lang = pickLanguage(globalThis.navigator?.languages?.length ? navigator.languages : [globalThis.navigator?.language]);

/** The string `key` with `{name}` replaced from `values`. */
export function t(key, values = {}) {
  const text = strings[lang][key] ?? strings.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

/** "Wednesday, 25 November" (de: "Mittwoch, 25. November") for a YYYY-MM-DD day. */
export function formatDay(day, options = { weekday: "long", day: "numeric", month: "long" }) {
  return new Intl.DateTimeFormat(lang, { ...options, timeZone: "UTC" }).format(new Date(`${day}T12:00:00Z`));
}

/** "December 2026" for YYYY-MM. */
export function formatMonth(month) {
  return new Intl.DateTimeFormat(lang, { month: "long", year: "numeric", timeZone: "UTC" }).format(new Date(`${month}-15T12:00:00Z`));
}

/** The wall-clock time (HH:mm) of an instant in `zone`. */
export function formatTime(instant, zone) {
  return new Intl.DateTimeFormat(lang, { hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone: zone }).format(new Date(instant));
}

/** Fills every element's text from data-i18n, and its aria-label/placeholder from data-i18n-label/-placeholder. */
export function translatePage(root = document) {
  document.documentElement.lang = lang;
  for (const element of root.querySelectorAll("[data-i18n]")) element.textContent = t(element.dataset.i18n);
  for (const element of root.querySelectorAll("[data-i18n-label]")) element.setAttribute("aria-label", t(element.dataset.i18nLabel));
}
