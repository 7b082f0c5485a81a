// The caller's events as Server-Sent Events, read with fetch rather than EventSource: fetch sends
// the token in the Authorization header (EventSource cannot send headers, and a token in a URL
// ends up in logs). A dropped stream is opened again with Last-Event-ID: nothing is missed.

import { token } from "./api.js";

let lastEventId = null;

/** Feeds `onMessage({type, id, data})` from SSE text arriving in pieces; returns the function taking each piece. */
export function sseParser(onMessage) {
  let buffer = "", type = "", data = [], id = null;
  return (piece) => {
    buffer += piece;
    // A \r at the end may be the first half of a \r\n: it waits for the next piece.
    const held = buffer.endsWith("\r") ? "\r" : "";
    const lines = (held ? buffer.slice(0, -1) : buffer).split(/\r\n|\r|\n/);
    // The last part has no line end yet.
    buffer = lines.pop() + held;
    for (const line of lines) {
      if (line === "") {
        if (id !== null) lastEventId = id;
        if (data.length > 0) onMessage({ type: type || "message", id: lastEventId, data: data.join("\n") });
        type = "";
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = value;
    }
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Follows `handlers`' event types (type → function of the envelope). `onLive(bool)` tells whether
 * the stream is open; `onRefused()` runs on a 401 (the stream then stops). Other failures are
 * retried, waiting longer each time. Returns a function that stops following.
 */
export function follow(handlers, onLive, onRefused) {
  const controller = new AbortController();
  const types = encodeURIComponent(Object.keys(handlers).join(","));
  const dispatch = (message) => {
    const handle = handlers[message.type];
    if (handle) handle(JSON.parse(message.data));
  };
  (async () => {
    for (let delay = 1000; !controller.signal.aborted; delay = Math.min(delay * 2, 30_000)) {
      try {
        const headers = { Accept: "text/event-stream", Authorization: `Bearer ${token.get() ?? ""}` };
        if (lastEventId) headers["Last-Event-ID"] = lastEventId;
        const response = await fetch(`v1/events?types=${types}`, { headers, cache: "no-store", signal: controller.signal });
        if (response.status === 401) {
          onLive(false);
          return onRefused();
        }
        if (response.ok) {
          onLive(true);
          delay = 500;
          const feed = sseParser(dispatch);
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          for (let part = await reader.read(); !part.done; part = await reader.read()) feed(part.value);
        }
      } catch (error) {
        if (controller.signal.aborted) return;
        console.warn("event stream:", error);
      }
      onLive(false);
      await sleep(delay);
    }
  })();
  return () => controller.abort();
}
