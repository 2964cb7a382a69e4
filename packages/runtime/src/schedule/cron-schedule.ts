import { Cron } from "croner";
import { cronNeverFires, cronPatternInvalid, cronTimeZoneInvalid } from "../errors.js";

/**
 * The ticks of one cron pattern, in a time zone, parsed by croner (seconds optional, `L`, `W`,
 * `#`, names of months and days). Pure: no timer, no clock; the runner asks it what comes next
 * and, at start, which ticks were missed.
 *
 * Around a daylight-saving change, a pattern at a fixed time of day (`30 2 * * *`) fires once on a
 * day whose 02:30 does not exist (at the first time after the gap) and once on a day where 02:30
 * happens twice (at its first occurrence); a pattern with a wildcard or a step in its time fields
 * (`*\/30 * * * *`) fires at every wall-clock time that exists, so every real half hour.
 */
export class CronSchedule {
  readonly pattern: string;
  readonly timeZone: string | undefined;
  readonly #cron: Cron;

  private constructor(pattern: string, timeZone: string | undefined, cron: Cron) {
    this.pattern = pattern;
    this.timeZone = timeZone;
    this.#cron = cron;
  }

  /** Parses `pattern` (5 fields, or 6 with seconds first) in `timeZone` (IANA; default: the host's); a bad one is a `Declaration` error naming it. */
  static parse(pattern: string, timeZone: string | undefined, route: string, now: Date): CronSchedule {
    let cron: Cron;
    let first: Date | null;
    // The zone first, on its own: a zone croner cannot use only shows when a date is converted, as a pattern error would.
    if (timeZone !== undefined) {
      try {
        new Intl.DateTimeFormat("en-US", { timeZone }).format(now);
      } catch (error) {
        throw cronTimeZoneInvalid(pattern, timeZone, error, route);
      }
    }
    try {
      cron = new Cron(pattern, timeZone === undefined ? {} : { timezone: timeZone });
      first = cron.nextRun(now);
    } catch (error) {
      throw cronPatternInvalid(pattern, timeZone, error, route);
    }
    if (first === null) throw cronNeverFires(pattern, timeZone, route);
    return new CronSchedule(pattern, timeZone, cron);
  }

  /** The first tick strictly after `after` (ticks are whole seconds); `undefined` when the pattern fires no more. */
  next(after: Date): Date | undefined {
    return this.#cron.nextRun(after) ?? undefined;
  }

  /**
   * How long handled rows must be kept for a start at `now` to see every one of its `catchUp` missed
   * ticks as handled: from the oldest of them to the next tick (a start just before it looks that far
   * back). `0` without catch-up. A retention window shorter than this lets a start publish again a
   * tick whose row was pruned.
   */
  catchUpWindow(catchUp: number, now: Date): number {
    const oldest = this.missed(catchUp, now)[0];
    if (oldest === undefined) return 0;
    return (this.next(now) ?? now).getTime() - oldest.getTime();
  }

  /** The most recent `count` ticks at or before `now`, oldest first. */
  missed(count: number, now: Date): Date[] {
    if (count <= 0) return [];
    // croner counts a tick earlier in the reference's second, so 1 ms past `now` counts a tick at `now` too.
    return this.#cron.previousRuns(count, new Date(now.getTime() + 1)).reverse();
  }
}

/** The dedup key of a tick: `cron:<route>:<tick time, ISO 8601 in UTC>`. Every process computes the same one. */
export function cronKey(route: string, tick: Date): string {
  return `cron:${route}:${tick.toISOString()}`;
}

/** What a wake-up publishes: the ticks after the last one published, at most `limit` (the most recent), and which older ones it skips. */
export interface DueTicks {
  readonly due: readonly Date[];
  /** The first and last tick skipped: ticks after `after` older than the `limit` most recent ones. */
  readonly skipped?: { readonly from: Date; readonly to: Date };
}

/**
 * The ticks in `(after, now]`, oldest first: each wake-up of a running process publishes them. A
 * timer fires late under load, so more than one tick can be due; after a long pause (a suspended
 * host) only the `limit` most recent are, and the older ones are skipped.
 */
export function dueTicks(schedule: CronSchedule, after: Date, now: Date, limit: number): DueTicks {
  const recent = schedule.missed(limit + 1, now).filter((tick) => tick.getTime() > after.getTime());
  if (recent.length <= limit) return { due: recent };
  const from = schedule.next(after) as Date;
  return { due: recent.slice(1), skipped: { from, to: recent[0] as Date } };
}
