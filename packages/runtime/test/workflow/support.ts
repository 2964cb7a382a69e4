/** Tables, a workflow table and an app for the workflow tests, per engine and form. */
import { column, InboxSpec, payloadOf, resultOf } from "@sqlinbox/core";
import type { AnyInboxSpec, ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import { createInboxTable, createWorkflowTable } from "../../src/index.js";

/** A step table in `form`, with a processedAt and a result column of type `R` and a payload of type `P`. */
export function stepTable<P, R>(table: string, form: ClaimForm) {
  const base = InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .processedAt(column("processed_at"))
    .result(column("result"), resultOf<R>())
    .payload(column("payload"), payloadOf<P>());
  // The form's type is the row lock's: the rules these tests exercise do not depend on it.
  if (form === "lease") return base.lease(column("locked_until")) as unknown as typeof base;
  if (form === "advisory") return base.advisoryLock("wf-{id}") as unknown as typeof base;
  return base;
}

/** Creates each table and the workflow table; registers their drop with `closers`. */
export async function createTables(db: AnyKysely, specs: readonly AnyInboxSpec[], closers: Array<() => Promise<unknown>>): Promise<void> {
  await createWorkflowTable(db);
  for (const spec of specs) {
    await createInboxTable(db, spec);
    closers.push(() => sql`DROP TABLE IF EXISTS ${sql.id(spec.table)}`.execute(db));
  }
}

/** The rows of a table, by id. */
export async function rowsOf(db: AnyKysely, table: string): Promise<Array<{ id: unknown; payload: unknown; processed_at: unknown; result: unknown }>> {
  const { rows } = await sql<{
    id: unknown;
    payload: unknown;
    processed_at: unknown;
    result: unknown;
  }>`SELECT id, payload, processed_at, result FROM ${sql.id(table)} ORDER BY id`.execute(db);
  return rows;
}

/** A payload as the table stores it (bytes or text), decoded. */
export function decoded(payload: unknown): unknown {
  const text = typeof payload === "string" ? payload : Buffer.from(payload as Uint8Array).toString("utf8");
  return JSON.parse(text);
}

/** How many rows a table holds. */
export async function countOf(db: AnyKysely, table: string): Promise<number> {
  const { rows } = await sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql.id(table)}`.execute(db);
  return Number(rows[0]?.n);
}
