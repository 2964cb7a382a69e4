/**
 * What a failed statement tells of what it wrote: each engine's `wroteNothing` reads its driver's
 * error. Shared here: the errors of a connection that was never made (nothing was sent).
 */

/** Node's socket errors of a connect that failed: no session, so no statement reached a server. */
const CONNECT_FAILURES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/**
 * True when `error` is a connect that never succeeded: the socket's refusal, no such host, or
 * `pg`'s pool giving up on a connect (`timeout exceeded when trying to connect`).
 */
export function neverConnected(error: unknown): boolean {
  if (error === null || typeof error !== "object") return false;
  const e = error as { code?: unknown; message?: unknown };
  return (typeof e.code === "string" && CONNECT_FAILURES.has(e.code)) || (typeof e.message === "string" && e.message.startsWith("timeout exceeded when trying to connect"));
}
