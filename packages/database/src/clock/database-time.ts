import type { EngineDialect } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery, QueryResult } from "kysely";
import { offsetOf, type ClockOffset, type ClockSample } from "./clock-offset.js";

/** Readings per measure: the one with the shortest round trip counts. */
const SAMPLES = 3;

/** Runs one statement: a Kysely instance's `executeQuery`, or the runtime's labelled runner. */
export type RunStatement = <R>(query: CompiledQuery<R>) => Promise<QueryResult<R>>;

/**
 * How far the host's clock is from the database's: reads the server's clock `SAMPLES` times, each
 * between two readings of the host's (`hostNow`, epoch ms), and keeps the reading with the shortest
 * round trip (`offsetOf`). The one measure the runtime's clock and the operator tools both take.
 *
 * @example
 * const { offsetMs } = await measureOffset((q) => db.executeQuery(q), dialectFor("postgres"), Date.now)
 * const databaseNow = new Date(Date.now() + offsetMs)
 */
export async function measureOffset(run: RunStatement, dialect: Pick<EngineDialect, "schema">, hostNow: () => number): Promise<ClockOffset> {
  const samples: ClockSample[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const sentAt = hostNow();
    const row = (await run(dialect.schema.serverTime())).rows[0];
    const receivedAt = hostNow();
    const serverAt = Number(row?.now_ms);
    if (!Number.isFinite(serverAt)) throw new TypeError(`the server's clock read as ${String(row?.now_ms)}, not a time`);
    samples.push({ sentAt, serverAt, receivedAt });
  }
  return offsetOf(samples);
}

/** The database's time, read on the host: the host's clock plus the offset measured once. */
export interface DatabaseTime {
  now(): Date;
  /** The measure it applies: the database's time is the host's plus `offset.offsetMs`. */
  readonly offset: ClockOffset;
}

/**
 * The database's time for a short-lived process (an operator command): measured once now, through
 * the host's clock, and never again. A long-running app measures again every minute instead (the
 * runtime's database clock, on the same `measureOffset`).
 */
export async function databaseTime(run: RunStatement, dialect: Pick<EngineDialect, "schema">, hostNow: () => number = Date.now): Promise<DatabaseTime> {
  const offset = await measureOffset(run, dialect, hostNow);
  return Object.freeze({ now: () => new Date(hostNow() + offset.offsetMs), offset });
}
