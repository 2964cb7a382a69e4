import { describeSkew, measureOffset, WARN_SKEW_MS, type ClockOffset } from "@sqlinbox/database";
import type { Clock, Timer } from "../clock.js";
import type { Database } from "../drivers/database.js";
import { errorFields, type Logger } from "../logger.js";

/**
 * Whose time lease deadlines and due times are judged on: `"database"` (the default) reads the
 * host's clock corrected by its measured offset from the database's; `"host"` trusts the host's clock
 * as it is, and refuses to start when it is off by more than a quarter of the shortest lease.
 */
export type LeaseClock = "database" | "host";

/** How often a running clock measures its offset again (ms on its base clock). */
const REMEASURE_MS = 60_000;

/** Where the clock's database is, for the warning: its redacted URL and its server (`PostgreSQL 16.4`). */
interface ClockPlace {
  readonly database: string;
  readonly server: string;
}

/** What a database clock reads and where it reports. */
export interface DatabaseClockOptions {
  /** The host's clock (the app's `clock`). */
  readonly base: Clock;
  readonly database: Database;
  readonly logger: Logger;
  readonly place: ClockPlace;
  readonly leaseClock: LeaseClock;
  /** True once the pool closed: no more measures. */
  readonly isClosed: () => boolean;
}

/** How far `base` is from the database's clock (`measureOffset`, the one measure the operator tools take too). */
function measure(database: Database, base: Clock): Promise<ClockOffset> {
  return measureOffset(
    (query) => database.execute("clock", query),
    database.dialect,
    () => base.now().getTime(),
  );
}

/**
 * The database's time, read on the host: `base`'s time plus the offset measured at start, measured
 * again when a read finds the last measure a minute old, or the host's clock stepped back before it
 * (in the background; the read uses the offset it has). Timers and sleeps are `base`'s: a duration is the same on both clocks. With `leaseClock:
 * "host"` the offset is measured and watched all the same, but not applied.
 */
export class DatabaseClock implements Clock {
  readonly #base: Clock;
  readonly #options: DatabaseClockOptions;
  #measured: ClockOffset;
  #nextMeasureAt: number;
  #measuring = false;

  private constructor(options: DatabaseClockOptions, measured: ClockOffset) {
    this.#base = options.base;
    this.#options = options;
    this.#measured = measured;
    this.#nextMeasureAt = options.base.now().getTime() + REMEASURE_MS;
  }

  /** Measures the offset now (a failed read fails the start) and warns when it is over a second. */
  static async start(options: DatabaseClockOptions): Promise<DatabaseClock> {
    const clock = new DatabaseClock(options, await measure(options.database, options.base));
    clock.#report("at startup");
    return clock;
  }

  /** The last measure: the database's time is the host's plus `offsetMs`. */
  get offset(): ClockOffset {
    return this.#measured;
  }

  /** Whether `now()` applies the offset (`leaseClock: "database"`). */
  get corrects(): boolean {
    return this.#options.leaseClock === "database";
  }

  now(): Date {
    const host = this.#base.now().getTime();
    // Due a minute after the last measure, or at once when the host's clock was stepped back past it.
    if (host >= this.#nextMeasureAt || host < this.#nextMeasureAt - REMEASURE_MS) this.#measureAgain(host);
    return new Date(this.corrects ? host + this.#measured.offsetMs : host);
  }

  setTimer(ms: number, fn: () => void): Timer {
    return this.#base.setTimer(ms, fn);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.#base.sleep(ms, signal);
  }

  /** One measure in the background; a failure keeps the last offset and is tried again a minute later. */
  #measureAgain(host: number): void {
    this.#nextMeasureAt = host + REMEASURE_MS;
    if (this.#measuring || this.#options.isClosed()) return;
    this.#measuring = true;
    measure(this.#options.database, this.#base).then(
      (measured) => {
        this.#measuring = false;
        this.#measured = measured;
        this.#report("measured again");
      },
      (error: unknown) => {
        this.#measuring = false;
        this.#options.logger.debug({ ...errorFields(error), database: this.#options.place.database }, "the database's clock could not be read: the last offset stays");
      },
    );
  }

  /** A warning when the host's clock is more than a second off, saying what is done about it; else a debug line. */
  #report(when: string): void {
    const { offsetMs, roundTripMs, serverAt, hostAt } = this.#measured;
    const { logger, place, leaseClock } = this.#options;
    const fields = {
      database: place.database,
      server: place.server,
      skewMs: Math.round(-offsetMs),
      roundTripMs: Math.round(roundTripMs),
      hostTime: new Date(hostAt).toISOString(),
      databaseTime: new Date(serverAt).toISOString(),
      leaseClock,
    };
    if (Math.abs(offsetMs) <= WARN_SKEW_MS) {
      logger.debug(fields, `the database's clock, ${when}: within a second of the host's`);
      return;
    }
    const done = this.corrects
      ? "lease deadlines and due times use the database's time (the host's corrected by the offset)"
      : `leaseClock is "host": lease deadlines and due times use the host's clock as it is, so another process whose clock differs may take rows this one holds`;
    logger.warn(fields, `the host's clock is ${describeSkew(offsetMs)} the database's (${place.server}), ${when}: ${done}`);
  }
}
