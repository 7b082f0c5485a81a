// The caller's events as Server-Sent Events. The browser reconnects by itself with Last-Event-ID;
// a stream it gave up on (an error status) is opened again with ?since=, so nothing is missed.

import { eventsURL } from "./api.js";

let lastEventId = null;

/**
 * Follows `handlers`' event types (type → function of the envelope). `onLive(bool)` tells whether
 * the stream is open; `onClosed()` runs when the browser will not reconnect by itself.
 * Returns a function that stops following.
 */
export function follow(handlers, onLive, onClosed) {
  const source = new EventSource(eventsURL(Object.keys(handlers), lastEventId));
  onLive(false);
  source.onopen = () => onLive(true);
  source.onerror = () => {
    onLive(false);
    if (source.readyState === EventSource.CLOSED) onClosed();
  };
  for (const [type, handle] of Object.entries(handlers)) {
    source.addEventListener(type, (event) => {
      if (event.lastEventId) lastEventId = event.lastEventId;
      handle(JSON.parse(event.data));
    });
  }
  return () => source.close();
}
