// Local days (YYYY-MM-DD) and months (YYYY-MM) as the wire writes them, computed in UTC so that no
// browser zone or DST shift moves a day; "today" is the user's, in the zone the planner keeps.

const dayMs = 86_400_000;

function toUTC(day) {
  const [year, month, date] = day.split("-").map(Number);
  return Date.UTC(year, month - 1, date);
}

function fromUTC(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Today in the IANA zone `zone` at `now` (a Date). */
export function todayIn(zone, now = new Date()) {
  // en-CA writes dates as YYYY-MM-DD.
  return new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }).format(now);
}

export function addDays(day, count) {
  return fromUTC(toUTC(day) + count * dayMs);
}

export function monthOf(day) {
  return day.slice(0, 7);
}

export function shiftMonth(month, delta) {
  const [year, number] = month.split("-").map(Number);
  const index = year * 12 + (number - 1) + delta;
  return `${Math.floor(index / 12)}-${String((index % 12) + 1).padStart(2, "0")}`;
}

/** Every day of `month`, first to last. */
export function monthDays(month) {
  const first = `${month}-01`;
  const next = `${shiftMonth(month, 1)}-01`;
  const days = [];
  for (let day = first; day !== next; day = addDays(day, 1)) days.push(day);
  return days;
}

/** 0 for Monday … 6 for Sunday. */
export function weekdayIndex(day) {
  return (new Date(toUTC(day)).getUTCDay() + 6) % 7;
}

/** Minutes between two instants (RFC 3339 strings), rounded. */
export function minutesBetween(start, end) {
  return Math.round((Date.parse(end) - Date.parse(start)) / 60_000);
}
