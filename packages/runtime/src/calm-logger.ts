import type { Clock, Timer } from "./clock.js";
import { childLogger, type LogFields, type Logger } from "./logger.js";

/** A failure that keeps repeating is summarised at most this often. */
const REPEAT_SUMMARY_MS = 30_000;

/** A repeating failure is over once it has not been seen for three of its usual gaps, and at least this long. */
const QUIET_MIN_MS = 2_000;

/** The rows a summary names at most (the first ones counted since the last line). */
const SUMMARY_IDS = 100;

/** One failure (level, message, error code and error message) and how often it was seen. */
interface Repeating {
  readonly level: "warn" | "error";
  readonly message: string;
  readonly log: Logger;
  fields: LogFields;
  readonly firstAt: number;
  lastAt: number;
  lastLineAt: number;
  total: number;
  /** Seen since the last line written about it. */
  unlogged: number;
  /** The rows those records named (`id`), up to `SUMMARY_IDS`: a summary tells which rows failed, as each line would have. */
  ids: unknown[];
}

interface Shared {
  readonly clock: Clock;
  readonly summaryEveryMs: number;
  readonly repeating: Map<string, Repeating>;
  timer: Timer | undefined;
}

/** A logger that writes a repeating failure once, then summaries; `close` writes what is left and stops its timer. */
export interface CalmLogger extends Logger {
  close(): void;
}

const errorOf = (fields: LogFields): { code?: unknown; message?: unknown } | undefined => {
  const err = fields.err;
  return typeof err === "object" && err !== null ? (err as { code?: unknown; message?: unknown }) : undefined;
};

const secondsText = (ms: number): string => `${Math.max(1, Math.round(ms / 1000))} s`;

/**
 * Keeps one subscription's log calm when a failure repeats (a table dropped under a running app
 * fails every claim, every poll interval): a warn or error record with an `err` is written the
 * first time; the same failure again (same level, message, error code and error message) is
 * counted, and written as one summary line with the count at most every `summaryEveryMs`; once
 * it has not been seen for a while (three of its usual gaps, at least 2 s) an info line says it
 * stopped. A summary names the rows its records named (`ids`, the first 100): a settlement that failed
 * the same way for rows of one claim (`LeaseLost`, with one deadline) still says which rows.
 * A different failure is written at once. Records without an `err` pass through.
 *
 * @example
 * const logger = calmLogger(childLogger(appLogger, { subscription: "reports" }), systemClock);
 * // 100 claims fail the same way in 10 s: one error line, then "no longer failing: …" once they stop.
 */
export function calmLogger(logger: Logger, clock: Clock, summaryEveryMs = REPEAT_SUMMARY_MS): CalmLogger {
  return calmOver(logger, { clock, summaryEveryMs, repeating: new Map(), timer: undefined });
}

function calmOver(logger: Logger, shared: Shared): CalmLogger {
  const failure =
    (level: "warn" | "error") =>
    (fields: LogFields, message: string): void => {
      const err = errorOf(fields);
      if (err === undefined) {
        logger[level](fields, message);
        return;
      }
      const key = `${level}\u0000${message}\u0000${String(err.code ?? "")}\u0000${String(err.message ?? "")}`;
      const now = shared.clock.now().getTime();
      const seen = shared.repeating.get(key);
      if (seen === undefined) {
        logger[level](fields, message);
        shared.repeating.set(key, { level, message, log: logger, fields, firstAt: now, lastAt: now, lastLineAt: now, total: 1, unlogged: 0, ids: [] });
        sweepLater(shared);
        return;
      }
      seen.total++;
      seen.unlogged++;
      if (fields.id !== undefined && seen.ids.length < SUMMARY_IDS) seen.ids.push(fields.id);
      seen.lastAt = now;
      seen.fields = fields;
      if (now - seen.lastLineAt >= shared.summaryEveryMs) summarise(seen, now, "still failing");
    };
  return {
    debug: (fields, message) => logger.debug(fields, message),
    info: (fields, message) => logger.info(fields, message),
    warn: failure("warn"),
    error: failure("error"),
    child: (bindings) => calmOver(childLogger(logger, bindings), shared),
    close: () => {
      shared.timer?.cancel();
      shared.timer = undefined;
      const now = shared.clock.now().getTime();
      for (const seen of shared.repeating.values()) if (seen.unlogged > 0) summarise(seen, now, "until the stop");
      shared.repeating.clear();
    },
  };
}

function summarise(seen: Repeating, now: number, state: string): void {
  seen.log[seen.level](
    { ...seen.fields, ...idsOf(seen), repeats: seen.unlogged, total: seen.total },
    `${seen.message} (${state}: ${seen.unlogged} more time(s) in ${secondsText(now - seen.lastLineAt)})`,
  );
  seen.unlogged = 0;
  seen.ids = [];
  seen.lastLineAt = now;
}

/** The rows the records counted since the last line named, taken off `seen`: `{ ids }`, or nothing when none did. */
function idsOf(seen: Repeating): { ids?: unknown[] } {
  return seen.ids.length === 0 ? {} : { ids: seen.ids };
}

/** How long a failure must go unseen to count as stopped: three of its usual gaps, at least 2 s; one seen once is forgotten after a summary interval. */
function quietMs(seen: Repeating, summaryEveryMs: number): number {
  if (seen.total < 2) return summaryEveryMs;
  const gap = (seen.lastAt - seen.firstAt) / (seen.total - 1);
  return Math.min(Math.max(QUIET_MIN_MS, 3 * gap), 2 * summaryEveryMs);
}

function sweepLater(shared: Shared): void {
  if (shared.timer !== undefined) return;
  shared.timer = shared.clock.setTimer(1_000, () => {
    shared.timer = undefined;
    const now = shared.clock.now().getTime();
    for (const [key, seen] of shared.repeating) {
      if (now - seen.lastAt < quietMs(seen, shared.summaryEveryMs)) continue;
      shared.repeating.delete(key);
      if (seen.total < 2) continue;
      seen.log.info(
        { ...seen.fields, ...idsOf(seen), repeats: seen.unlogged, total: seen.total, forMs: seen.lastAt - seen.firstAt },
        `no longer failing: ${seen.message} (seen ${seen.total} times over ${secondsText(seen.lastAt - seen.firstAt)}; none for ${secondsText(now - seen.lastAt)})`,
      );
    }
    if (shared.repeating.size > 0) sweepLater(shared);
  });
}
