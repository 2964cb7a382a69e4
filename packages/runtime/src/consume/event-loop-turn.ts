/**
 * A claim loop that never waits for I/O never lets the event loop turn. On SQLite (better-sqlite3
 * answers synchronously) a handler that returns `retry()` at once releases its row, and the next
 * claim takes it again, promise after promise: timers (the handler's own, a timeout, `stop()`'s
 * grace) and I/O would never run. Each claim asks `eventLoopTurned()` first: the first ask marks
 * the loop and lets it go on; an ask that finds the mark still there — no macrotask ran since — waits
 * for one (`setImmediate`) before claiming. A server engine's claim waits for its socket, so the mark
 * is gone by the next claim and nothing waits.
 */
let marked = false;

function unmark(): void {
  marked = false;
}

/** Resolves at once when the event loop has turned since the last call; otherwise after one turn. */
export function eventLoopTurned(): Promise<void> | undefined {
  if (!marked) {
    marked = true;
    setImmediate(unmark);
    return undefined;
  }
  return new Promise<void>((resolve) => setImmediate(resolve));
}
