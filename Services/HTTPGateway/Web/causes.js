// What covers an occurrence: the sessions and check-ins its `cause` names, looked up by id.

import { call } from "./api.js";
import { addDays, minutesBetween } from "./days.js";

/** The sessions and check-ins that occurrences name as their cause, by id (lower case). */
export async function loadCauses(occurrences, today) {
  const causes = new Map();
  if (!occurrences.some((occurrence) => occurrence.cause)) return causes;
  // A cause overlaps its occurrence's look-back window (at most 48 h), and nothing starts in the future.
  const now = Date.now(), day = 86_400_000;
  const [sessions, entries] = await Promise.all([
    call("session.list", { from: new Date(now - 3 * day).toISOString(), until: new Date(now + day).toISOString() }),
    call("noalc.list", { from: addDays(today, -3), until: addDays(today, 8) }),
  ]);
  for (const session of sessions.sessions ?? []) {
    causes.set(session.id.toLowerCase(), { kind: "session", activity: session.activity, start: session.start, minutes: minutesBetween(session.start, session.end) });
  }
  for (const entry of entries.entries ?? []) causes.set(entry.id.toLowerCase(), { kind: "entry", level: entry.level, day: entry.day });
  return causes;
}
