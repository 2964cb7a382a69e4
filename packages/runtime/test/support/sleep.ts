/** Waits `ms` on the host's clock: the one `sleep` of the runtime's tests and their worker processes. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
