// The gateway's HTTP API (PROTOCOL "HTTP gateway"): POST v1/<op> with the bearer token. URLs are
// relative, so the app also works behind a proxy that mounts the gateway under a path.

const tokenKey = "lht.token";

/** The gateway refused the token (401): the app asks for one again. */
export class Unauthorized extends Error {}

/** A reply with ok:false or a status other than 2xx, with the service's error code and field. */
export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? "internal";
    this.field = error?.field;
  }
}

export const token = {
  get: () => localStorage.getItem(tokenKey),
  set: (value) => localStorage.setItem(tokenKey, value),
  clear: () => localStorage.removeItem(tokenKey),
};

/** Calls `op` with `data` (the token's user is filled in by the gateway) and returns the reply's data. */
export async function call(op, data = {}) {
  const response = await fetch(`v1/${op}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token.get() ?? ""}` },
    body: JSON.stringify(data),
  });
  if (response.status === 401) throw new Unauthorized();
  let reply;
  try {
    reply = await response.json();
  } catch {
    throw new ApiError(response.status, null);
  }
  if (!response.ok || reply?.ok === false) throw new ApiError(response.status, reply?.error);
  return reply.data ?? {};
}

/** A random (version 4) UUID: an idempotency key, so a retried log is stored once. */
export function uuid() {
  // randomUUID exists only in secure contexts (https, localhost); getRandomValues everywhere.
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
