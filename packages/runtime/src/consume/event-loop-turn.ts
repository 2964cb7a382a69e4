/**
 * A claim loop that never waits for I/O never lets the event loop turn. On SQLite (better-sqlite3
 * answers synchronously) a handler that returns `retry()` at once releases its row, and the next
 * claim takes it again, promise after promise: timers (the handler's own, a timeout, `stop()`'s
 * grace) and I/O would never run. Each claim asks `eventLoopTurned()` first. The first ask marks
 * the loop (and the time) and lets it go on; later asks go on too while the mark is younger than
 * `TURNLESS_MS`; an ask that finds an older mark — no macrotask ran for that long — waits for one
 * (`setImmediate`) before claiming. A server engine's claim waits for its socket, so the mark is
 * gone by the next claim and nothing waits.
 *
 * Why not wait at the second claim of a turn: on SQLite a busy queue claims several times a turn,
 * and each wait is a turn in which the acks gathered so far are written, so a turn per claim wrote
 * about 1.7 times as many ack statements, each with fewer rows (the lease drain, batch 64 × 8
 * workers: about 7% fewer jobs a second). A timer is late by at most `TURNLESS_MS` this way.
 */
const TURNLESS_MS = 5;

/** When the mark was set (`performance.now()`), or -1: a macrotask ran since the last claim. */
let markedAt = -1;

function unmark(): void {
  markedAt = -1;
}

/** Resolves at once when the event loop has turned in the last `TURNLESS_MS`; otherwise after one turn. */
export function eventLoopTurned(): Promise<void> | undefined {
  if (markedAt < 0) {
    markedAt = performance.now();
    setImmediate(unmark);
    return undefined;
  }
  if (performance.now() - markedAt < TURNLESS_MS) return undefined;
  return new Promise<void>((resolve) => setImmediate(resolve));
}
