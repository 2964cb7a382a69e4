/** Waits `ms` on the host's clock: the one `sleep` of the runtime's tests and their worker processes. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `predicate` every 5 ms on the host's clock; whether it held within `timeoutMs`. */
export async function waitFor(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (predicate()) return true;
    await sleep(5);
  }
  return predicate();
}
