import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery, type Expression, type SqlBool } from "kysely";
import type { RawRow } from "../types.js";
import { col, COMPARE_PRECISION, compiled, type Eb, probeLock, type StatementContext, tableRef } from "./query-db.js";

/**
 * The rows a page of `jobs.list` reads, as SQL over the row's own columns (the runtime tells the
 * state of each, and probes the row-lock and advisory holds of `due` rows):
 * - `scheduled`: not processed, not leased, its retryAfter ahead of `now`;
 * - `due`: not processed, retryAfter and lease unset or passed (waiting, or held outside the row);
 * - `leased`: not processed, its lease ahead of `now` (running, in the lease form);
 * - `done`: processedAt set;
 * - `deadGroup`: not processed, in the dead-letter group.
 * Every set but `deadGroup` leaves the dead-letter group out when one is given.
 */
export type JobListRows = "scheduled" | "due" | "leased" | "done" | "deadGroup";

/** One page's filter: the row set, the database's now, the cursor (the last id read), the size, and equalities by column name. */
export interface JobListFilter {
  readonly rows: JobListRows;
  readonly now: Date;
  /** The last id of the previous page: the page starts after it. */
  readonly after?: unknown;
  readonly limit: number;
  /** The dead-letter group of the route's table (its group column's value), if it has one. */
  readonly deadGroup?: string;
  /** `column name → value`: the key and data columns the list filters on. */
  readonly equals?: Readonly<Record<string, unknown>>;
  /**
   * `scheduled` rows only: in run-at order (retryAfter, then id) instead of id order, after the
   * cursor `{ at, id }` (the last row's retryAfter and id) when given; `after` is ignored then.
   */
  readonly byRunAt?: { readonly after?: { readonly at: Date; readonly id: unknown } };
  /**
   * Only rows whose payload, read as text, holds `text` (`%` and `_` match themselves), up to the
   * id `through` when given: the end of the window of rows a searched page reads
   * (`jobListWindowEndQuery`). `bytes`: the payload column holds bytes (`bytea`, a blob), which
   * Postgres reads through `encode(…, 'escape')`. Letters match in either case; on SQLite and in a
   * Postgres `bytea`, only A–Z do (other letters match as typed). In id order only: not with `byRunAt`.
   */
  readonly search?: PayloadSearch;
}

/** A search in the payloads: see `JobListFilter.search`. */
export interface PayloadSearch {
  readonly text: string;
  readonly bytes: boolean;
  readonly through?: unknown;
}

/** How many rows of the row set, from the cursor, one searched page reads at most: no index serves a search inside payloads. */
export const SEARCH_WINDOW = 10_000;

/** `text` as a LIKE pattern that holds it anywhere, with `!` escaping the wildcards and itself. */
const containing = (text: string): string => `%${text.replace(/[!%_]/g, (c) => `!${c}`)}%`;

/** A-Z lower-cased, as SQLite's `lower()` does, and Postgres's on the ASCII text `encode` gives. */
const asciiLower = (text: string): string => text.replace(/[A-Z]/g, (c) => c.toLowerCase());

/**
 * The text as Postgres's `encode(bytes, 'escape')` prints its UTF-8: a zero byte and bytes of 128
 * and up as `\nnn` (octal), a backslash doubled, the others as themselves.
 */
function escapeEncoded(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    if (byte === 0 || byte >= 0x80) out += `\\${byte.toString(8).padStart(3, "0")}`;
    else if (byte === 0x5c) out += "\\\\";
    else out += String.fromCharCode(byte);
  }
  return out;
}

/** The payload holds the search text, and the row is within the window: lower-cased text of the payload, LIKE with `!` as the escape. */
function searchConditions(ctx: StatementContext, spec: InboxDescription, search: NonNullable<JobListFilter["search"]>, eb: Eb): Expression<SqlBool>[] {
  if (spec.payload === undefined) throw new SqlInboxError("Declaration", "jobs.list: a search reads the payload, and the table has no payload column", { table: spec.table });
  const payload = sql.ref(col(spec, spec.payload.name));
  const { engine } = ctx.capabilities;
  // Bytes are read as text (MySQL converts them to the connection's character set, SQLite reads them as
  // UTF-8); Postgres cannot read bytes that are not UTF-8 as text, and its escape encoding always works.
  const escaped = engine === "postgres" && search.bytes;
  const text = escaped ? sql`lower(encode(${payload}, 'escape'))` : sql`lower(cast(${payload} as ${sql.raw(ctx.capabilities.jsonTextCast)}))`;
  const needle = escaped ? escapeEncoded(asciiLower(search.text)) : engine === "sqlite" ? asciiLower(search.text) : search.text.toLowerCase();
  const out: Expression<SqlBool>[] = [sql<SqlBool>`${text} like ${containing(needle)} escape '!'`];
  if (search.through !== undefined) out.push(eb(eb.ref(col(spec, spec.id.name)), "<=", search.through));
  return out;
}

/** The described columns, result and progress as their JSON text (as `jobs.read` reads them). */
function listedColumns(ctx: StatementContext, spec: InboxDescription) {
  const json = new Set([spec.result?.name, spec.progress?.name]);
  return spec.columns.map((c) => (json.has(c.name) ? sql<string>`cast(${sql.ref(col(spec, c.name))} as ${sql.raw(ctx.capabilities.jsonTextCast)})`.as(c.name) : col(spec, c.name)));
}

/** Whether the table can hold the row set: no retryAfter, nothing is scheduled; no lease, nothing leased; no processedAt, nothing done; no group, no dead group. */
export function jobListRowsExist(spec: InboxDescription, filter: JobListFilter): boolean {
  switch (filter.rows) {
    case "done":
      return spec.processedAt !== undefined;
    case "deadGroup":
      return spec.group !== undefined && filter.deadGroup !== undefined;
    case "leased":
      return spec.lease !== undefined;
    case "scheduled":
      return spec.retryAfter !== undefined;
    case "due":
      return true;
  }
}

/** The row set's conditions, on a table that can hold it (`jobListRowsExist`). */
function rowConditions(ctx: StatementContext, spec: InboxDescription, filter: JobListFilter, eb: Eb): Expression<SqlBool>[] {
  const now = ctx.time.encode(filter.now, COMPARE_PRECISION);
  const out: Expression<SqlBool>[] = [];
  const ref = (name: string) => eb.ref(col(spec, name));
  const processed = spec.processedAt?.name;
  if (filter.rows === "done") return processed === undefined ? [] : [eb(ref(processed), "is not", null)];
  if (processed !== undefined) out.push(eb(ref(processed), "is", null));
  if (filter.rows === "deadGroup") return spec.group === undefined ? out : [...out, eb(ref(spec.group.name), "=", filter.deadGroup ?? null)];
  if (spec.group !== undefined && filter.deadGroup !== undefined) out.push(eb(ref(spec.group.name), "<>", filter.deadGroup));
  const lease = spec.lease?.name;
  const retry = spec.retryAfter?.name;
  const passed = (name: string) => eb.or([eb(ref(name), "is", null), eb(ref(name), "<=", now)]);
  switch (filter.rows) {
    case "leased":
      return lease === undefined ? out : [...out, eb(ref(lease), ">", now)];
    case "scheduled":
      return [...out, ...(lease === undefined ? [] : [passed(lease)]), ...(retry === undefined ? [] : [eb(ref(retry), ">", now)])];
    case "due":
      return [...out, ...(lease === undefined ? [] : [passed(lease)]), ...(retry === undefined ? [] : [passed(retry)])];
  }
}

/**
 * A page of the route's rows in one row set (`JobListFilter.rows`), in id order after the cursor:
 * every described column (result and progress as JSON text), at most `limit` rows. Keyset paging on
 * the primary key: a page walks the id index from the cursor and stops at `limit` (or, with an
 * equality such as the route's group or a key, may read those rows through their index and sort
 * them), so no page reads or sorts the whole table, and a row's moves between states never shift
 * the pages. With no
 * equality to narrow it, a page on an engine whose planner would rather sort a claim index's range
 * (`walk` `"primary key"`: SQLite) names the table `NOT INDEXED`, which leaves the rowid walk. A set the
 * table cannot hold (`jobListRowsExist` is false) is a `Declaration` error. On Postgres, `done`
 * after a cursor reads the rows whose processedAt is set and whose id is past the cursor's, in id
 * order, up to the limit. With `byRunAt`, scheduled rows come in retryAfter order, keyset paged on
 * (retryAfter, id): the claim index holds that order where the table has no group or priority
 * column before it.
 */
export function jobListQuery(ctx: StatementContext, spec: InboxDescription, filter: JobListFilter, walk: "planner's choice" | "primary key"): CompiledQuery<RawRow> {
  if (!jobListRowsExist(spec, filter)) {
    throw new SqlInboxError("Declaration", `jobs.list: the table has no column that holds "${filter.rows}" rows (ask jobListRowsExist first)`, { table: spec.table });
  }
  const runAt = filter.byRunAt === undefined ? undefined : spec.retryAfter?.name;
  if (filter.byRunAt !== undefined && (runAt === undefined || filter.rows !== "scheduled")) {
    throw new SqlInboxError("Declaration", `jobs.list: run-at order is for "scheduled" rows of a table with a retryAfter column, not "${filter.rows}"`, { table: spec.table });
  }
  if (filter.search !== undefined && runAt !== undefined) {
    throw new SqlInboxError("Declaration", "jobs.list: a search lists rows in id order, not in run-at order", { table: spec.table });
  }
  const ordered = pageQuery(ctx, spec, filter, walk, false);
  return compiled(ordered.limit(filter.limit));
}

/** The page's select over the row set: its conditions, the equalities, the cursor, the search when asked, in id (or run-at) order. */
function pageQuery(ctx: StatementContext, spec: InboxDescription, filter: JobListFilter, walk: "planner's choice" | "primary key", idOnly: boolean) {
  const runAt = filter.byRunAt === undefined ? undefined : spec.retryAfter?.name;
  const equalities = Object.keys(filter.equals ?? {}).length > 0 || filter.rows === "deadGroup" || runAt !== undefined;
  // SQLite's `NOT INDEXED` leaves it the rowid: the page walks ids in order from the cursor and stops at the limit.
  const from = walk === "primary key" && !equalities ? (sql`${sql.table(tableRef(spec))} not indexed` as unknown as string) : tableRef(spec);
  const query = ctx.db
    .selectFrom(from)
    .select(idOnly ? [sql<string>`${sql.ref(col(spec, spec.id.name))}`.as("id")] : listedColumns(ctx, spec))
    .where((eb) => {
      const all = rowConditions(ctx, spec, filter, eb);
      for (const [name, value] of Object.entries(filter.equals ?? {})) all.push(value === null ? eb(eb.ref(col(spec, name)), "is", null) : eb(eb.ref(col(spec, name)), "=", value));
      const id = eb.ref(col(spec, spec.id.name));
      const cursor = filter.byRunAt?.after;
      if (runAt !== undefined && cursor !== undefined) {
        // Keyset on (retryAfter, id): scheduled rows all have a retryAfter, so no NULL breaks the order.
        const at = ctx.time.encode(cursor.at, COMPARE_PRECISION);
        const ra = eb.ref(col(spec, runAt));
        all.push(eb.or([eb(ra, ">", at), eb.and([eb(ra, "=", at), eb(id, ">", cursor.id)])]));
      } else if (runAt === undefined && filter.after !== undefined) all.push(eb(id, ">", filter.after));
      if (!idOnly && filter.search !== undefined) all.push(...searchConditions(ctx, spec, filter.search, eb));
      return eb.and(all);
    });
  return runAt === undefined ? query.orderBy(col(spec, spec.id.name)) : query.orderBy(col(spec, runAt)).orderBy(col(spec, spec.id.name));
}

/**
 * The end of a searched page's window: the id of the `window`-th row of the row set after the
 * cursor (the same conditions and equalities, no search), or no row when fewer follow. The page
 * then searches the rows up to it (`search.through`), so it reads at most `window` rows whatever the
 * search finds; a page that found fewer than its limit continues from this id.
 */
export function jobListWindowEndQuery(
  ctx: StatementContext,
  spec: InboxDescription,
  filter: JobListFilter,
  walk: "planner's choice" | "primary key",
  window: number,
): CompiledQuery<{ id: unknown }> {
  if (!jobListRowsExist(spec, filter)) {
    throw new SqlInboxError("Declaration", `jobs.listWindowEnd: the table has no column that holds "${filter.rows}" rows (ask jobListRowsExist first)`, { table: spec.table });
  }
  const query = pageQuery(ctx, spec, { ...filter, byRunAt: undefined } as JobListFilter, walk, true);
  return compiled(query.limit(1).offset(window - 1));
}

/**
 * A page of a dead-letter table, in id order after the cursor: every described column, at most
 * `limit` rows, with the equalities given by column name.
 */
export function deadLetterListQuery(ctx: StatementContext, destination: InboxDescription, filter: DeadLetterListFilter): CompiledQuery<RawRow> {
  return compiled(deadLetterPage(ctx, destination, filter, false).limit(filter.limit));
}

/** What a page of a dead-letter table selects: the cursor, the size, equalities, and a search as `JobListFilter.search`. */
export type DeadLetterListFilter = Pick<JobListFilter, "after" | "limit" | "equals" | "search">;

function deadLetterPage(ctx: StatementContext, destination: InboxDescription, filter: DeadLetterListFilter, idOnly: boolean) {
  let query = ctx.db.selectFrom(tableRef(destination)).select(idOnly ? [sql<string>`${sql.ref(col(destination, destination.id.name))}`.as("id")] : listedColumns(ctx, destination));
  for (const [name, value] of Object.entries(filter.equals ?? {}))
    query = value === null ? query.where(col(destination, name), "is", null) : query.where(col(destination, name), "=", value);
  if (filter.after !== undefined) query = query.where(col(destination, destination.id.name), ">", filter.after);
  const search = filter.search;
  if (!idOnly && search !== undefined) query = query.where((eb) => eb.and(searchConditions(ctx, destination, search, eb)));
  return query.orderBy(col(destination, destination.id.name));
}

/** A dead-letter table's searched window end, as `jobListWindowEndQuery`. */
export function deadLetterWindowEndQuery(ctx: StatementContext, destination: InboxDescription, filter: DeadLetterListFilter, window: number): CompiledQuery<{ id: unknown }> {
  return compiled(
    deadLetterPage(ctx, destination, filter, true)
      .limit(1)
      .offset(window - 1),
  );
}

/**
 * Row lock: of the page's rows, those no transaction holds. A skipping lock (`probeLock`) in a statement
 * of its own, as `jobs.lockProbe` for one row: the locks last the statement alone.
 */
export function jobsLockProbeQuery(ctx: StatementContext, spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<{ id: unknown }> {
  return compiled(probeLock(ctx, ctx.db.selectFrom(tableRef(spec)).select(sql.ref(spec.id.name).as("id")).where(spec.id.name, "in", ids)));
}
