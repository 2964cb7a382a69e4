/** The table the cron tests publish ticks to, shared by the tests and their child-process fixture. */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";

export interface TickJob {
  /** The tick's time, ISO 8601, as the payload function saw it. */
  readonly tick: string;
}

/** A lease table with a dedup key (one row per tick) and a processedAt column (a handled tick keeps its key; `catchUp` needs it). */
export function tickSpec(table: string) {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .key(column("job_key"))
    .processedAt(column("processed_at"))
    .payload(column("payload"), payloadOf<TickJob>());
}

/** The same table without processedAt: an ack deletes a tick's row, and its key is free again. */
export function deletingTickSpec(table: string) {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .key(column("job_key"))
    .payload(column("payload"), payloadOf<TickJob>());
}

export interface TickRow {
  readonly key: string;
  readonly tick: string;
  readonly processed: boolean;
}

/** Every row of the table, ordered by key (which orders ticks by time). */
export async function readTicks(db: AnyKysely, table: string): Promise<TickRow[]> {
  const { rows } = await sql<{ job_key: string; payload: unknown; processed_at: unknown }>`SELECT job_key, payload, processed_at FROM ${sql.id(table)} ORDER BY job_key`.execute(
    db,
  );
  return rows.map((r) => ({
    key: r.job_key,
    tick: (JSON.parse(typeof r.payload === "string" ? r.payload : Buffer.from(r.payload as Uint8Array).toString("utf8")) as TickJob).tick,
    processed: r.processed_at !== null && r.processed_at !== undefined,
  }));
}

/** The ticks of an every-second schedule from `first` to `last`, both included, as keys of route `route`. */
export function everySecondKeys(route: string, first: Date, last: Date): string[] {
  const keys: string[] = [];
  for (let t = first.getTime(); t <= last.getTime(); t += 1000) keys.push(`cron:${route}:${new Date(t).toISOString()}`);
  return keys;
}

/** What the cron worker fixture prints, one JSON object a line. */
export interface CronLine {
  readonly event: "ready" | "tick" | "error" | "stopped";
  readonly pid: number;
  readonly time: number;
  /** On `tick`: the tick's key, and whether this process's insert made its row. */
  readonly key?: string;
  readonly created?: boolean;
  readonly message?: string;
  readonly detail?: string;
}
