import { SqlInboxError, type ColumnDescription, type InboxDescription, type PortableType } from "@sqlinbox/core/internal";
import { sql, type ColumnDefinitionBuilder, type RawBuilder, type CompiledQuery, type CreateIndexBuilder, type CreateTableBuilder, type Expression } from "kysely";
import { type StatementContext, tableRef } from "./query-db.js";

/** Adds columns to the table `createInboxTable` creates: Kysely's own builder, so any column Kysely can describe fits. */
export type ExtendTable = (table: CreateTableBuilder<string, string>) => CreateTableBuilder<string, string>;

/**
 * Per-table storage settings of a queue table, by name: `{ fillfactor: 70 }` is
 * `WITH (fillfactor = 70)` on Postgres. A name is a storage parameter Postgres knows
 * (`fillfactor`, `autovacuum_vacuum_scale_factor`, `toast.autovacuum_enabled` …).
 */
export type QueueStorage = Readonly<Record<string, number | boolean>>;

/** How a queue table is created, beyond its description. */
export interface TableOptions {
  /**
   * The queue table's storage settings, on engines that have per-table settings (Postgres:
   * `CREATE TABLE … WITH (…)`); MySQL/MariaDB and SQLite have none and take nothing from this.
   * Unset: the engine's defaults for a table that churns (on Postgres `fillfactor = 70` and an
   * autovacuum that starts early and is never throttled). `false`: none, the server's own. A record
   * replaces the defaults: give every setting the table should have. A table with a `lastError` or
   * `failedAttempts` column is a dead-letter destination, written once and rarely changed, and gets
   * none unless a record is given. When `extend` ends the statement itself (Kysely's `modifyEnd`, a
   * `PARTITION BY` or a `TABLESPACE`), the settings are left out: add a `with (…)` there if wanted.
   */
  readonly queueStorage?: false | QueueStorage;
}

/** Creating a queue table from its description. */
export interface TableStatements {
  /**
   * `CREATE TABLE` with every described column typed for this engine, then the indexes the claims
   * read (see `createTableQueries`). `extend` adds columns (a data column described without a type);
   * a data column with no type that `extend` does not add fails, naming the column.
   */
  create(spec: InboxDescription, extend?: ExtendTable, options?: TableOptions): CompiledQuery[];
}

/**
 * What each column of a queue table is on one engine: every engine's `table-types.ts` fills
 * this in, with the reason for each type, and each type is one the startup check accepts
 * (`shared/schema-check.ts`).
 */
export interface TableTypes {
  /** A generated id: an auto-increment integer that is the primary key. */
  readonly generatedId: { readonly type: string; readonly autoIncrement: boolean };
  /** What each portable type of a data column (or an id the application fills) becomes here. */
  readonly portable: Readonly<Record<PortableType, string>>;
  /** Text that can be a key or lead an index: the group, the dedup key, a text id. */
  readonly indexedText: string;
  /** A deadline or a time: lease, retryAfter, processedAt. */
  readonly time: string;
  /** The payload: JSON as UTF-8 bytes (the runtime reads the column type and writes bytes into it). */
  readonly payload: string;
  /** The headers: JSON text of string pairs. */
  readonly headers: string;
  /** A small count: attempt, priority, failedAttempts. */
  readonly counter: string;
  /** Text of any length: the last error of a dead letter. */
  readonly longText: string;
  /** `CREATE INDEX … WHERE`: the claim index covers only unprocessed rows. Elsewhere processedAt leads the index instead. */
  readonly partialIndexes: boolean;
  /**
   * The storage settings a queue table gets by default (`CREATE TABLE … WITH (…)`): every row is
   * inserted, updated and deleted, and the engine keeps the dead versions until a vacuum. `null`
   * where the engine has no per-table settings (a `queueStorage` record is then ignored).
   */
  readonly queueStorage: QueueStorage | null;
}

/**
 * The statements that create a description's table on one engine: `CREATE TABLE`, then the
 * indexes its claims read.
 *
 * - Every role gets its engine's type (`TableTypes`); the attempt starts at 1 (a delivery reads
 *   `attempt - 1` after its claim counted it), the priority at 0; the group and the payload are NOT NULL.
 * - A data column, or an id that is not generated, takes the portable type its description gives;
 *   one with no type must be added by `extend`, else the call fails naming the column.
 * - The claim index follows what every claim filters and orders by: the group (an equality),
 *   processedAt (`IS NULL`: a partial index where the engine has them, else an equality that leads
 *   the index), then claim order: priority, retryAfter (NULL first, as claims order it), id.
 *   It is left out where it would be the primary key alone. The lease column is a filter on that
 *   ordered walk, not an index of its own: claims order by id, never by the deadline. The advisory
 *   key's columns are read, never filtered on, so they get no index.
 * - An order key gets the index its head rule probes once per candidate row: the key, processedAt
 *   where the engine has no partial index, then id (partial on unprocessed rows elsewhere). In the
 *   lease form a second one, the same with the lease column in place of id (NULL first, as MySQL and
 *   SQLite sort it; Postgres is told), for the probe of the key's rows in work, which reads it
 *   backward from the latest lease: `perKey` entries however many rows the key holds. It makes each
 *   write of the lease column update one more index (on Postgres such updates are no longer HOT).
 * - An order key with a processedAt column gets, where the engine has partial indexes, one more
 *   over handled rows only: the key, then id, which `jobs.list` walks for a key's `done` page
 *   (elsewhere the order key index, processedAt inside it, serves that page).
 * - A processedAt column gets the index retention's prune walks (`statements/retention.ts`): the
 *   group, then processedAt, over processed rows only (`IS NOT NULL`, a partial index), so a claim,
 *   which reads unprocessed rows, never finds it useful. Where the engine has no partial index the
 *   claim index already leads with the group and processedAt, and serves the prune's range.
 * - The dedup key gets a unique index (NULLs never collide, so rows published without a key are free).
 * - Where the engine has per-table storage settings, the table gets `options.queueStorage`, else the
 *   engine's defaults for a churning table (`TableTypes.queueStorage`); a dead-letter destination
 *   (a `lastError` or `failedAttempts` column) only a record given. A callback that ends the
 *   statement itself (`modifyEnd`) owns its end, and the settings are left out.
 */
export function createTableQueries(ctx: StatementContext, types: TableTypes, spec: InboxDescription, extend?: ExtendTable, options: TableOptions = {}): CompiledQuery[] {
  const fail = (message: string, column: ColumnDescription): never => {
    throw new SqlInboxError("Declaration", message, { table: spec.table, column: column.name });
  };
  let table: CreateTableBuilder<string, string> = ctx.db.schema.createTable(tableRef(spec));
  const untyped: ColumnDescription[] = [];
  for (const col of spec.columns) {
    const shape = columnShape(types, col);
    if (shape === null) untyped.push(col);
    else table = table.addColumn(col.name, sql.raw(shape.type), shape.build);
  }
  if (extend !== undefined) table = extend(table);
  // A callback that ends the statement (a partition: Postgres refuses settings on a partitioned table) owns its end.
  const storage = (table.toOperationNode().endModifiers?.length ?? 0) === 0 ? storageSettings(types, spec, options) : null;
  if (storage !== null) table = table.modifyEnd(storage);

  const created = table.toOperationNode().columns.map((c) => c.column.column.name);
  const seen = new Set<string>();
  for (const name of created) {
    if (seen.has(name)) {
      const col = spec.columns.find((c) => c.name === name) ?? { name, key: name, role: "data", generated: false };
      fail(`column "${name}" is created twice: the description already types it, so leave it out of createInboxTable's callback`, col);
    }
    seen.add(name);
  }
  for (const col of untyped) {
    if (seen.has(col.name)) continue;
    fail(
      col.role === "id"
        ? `the id column "${col.name}" is not generated and has no type: mark it .generated(), give it a type (.type("bigint"), .type("text") …), or add it with its primary key in createInboxTable's callback`
        : `the data column "${col.name}" has no type: give it one (.type("bigint"), .type("text") …), or add it in createInboxTable's callback`,
      col,
    );
  }

  const queries: CompiledQuery[] = [table.compile()];
  const claim = claimIndex(ctx, types, spec);
  if (claim !== null) queries.push(claim.compile());
  const processed = retentionIndex(ctx, types, spec);
  if (processed !== null) queries.push(processed.compile());
  const order = orderKeyIndex(ctx, types, spec);
  if (order !== null) queries.push(order.compile());
  const orderLease = orderKeyLeaseIndex(ctx, types, spec);
  if (orderLease !== null) queries.push(orderLease.compile());
  const orderDone = orderKeyDoneIndex(ctx, types, spec);
  if (orderDone !== null) queries.push(orderDone.compile());
  if (spec.key !== undefined) queries.push(dedupKeyIndexQuery(ctx, spec, spec.key));
  return queries;
}

/** The unique index of the dedup key `key`: what a keyed publish's insert-or-nothing stands on. */
export function dedupKeyIndexQuery(ctx: StatementContext, spec: InboxDescription, key: ColumnDescription): CompiledQuery {
  return ctx.db.schema.createIndex(indexName(spec, "dedup_key")).unique().on(tableRef(spec)).column(key.name).compile();
}

/** `with (name = value, …)`: the table's storage settings, or `null` for none (the engine has none, or none are asked for). */
function storageSettings(types: TableTypes, spec: InboxDescription, options: TableOptions): RawBuilder<unknown> | null {
  if (types.queueStorage === null || options.queueStorage === false) return null;
  // A dead-letter destination is written once per failed row and rarely changed: the server's own settings fit it.
  const deadLetter = spec.lastError !== undefined || spec.failedAttempts !== undefined;
  const settings = options.queueStorage ?? (deadLetter ? {} : types.queueStorage);
  const entries = Object.entries(settings);
  if (entries.length === 0) return null;
  const text = entries.map(([name, value]) => {
    // Names and values go into the statement's text (DDL takes no parameters): only a parameter's shape passes.
    if (!/^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/.test(name) || (typeof value !== "boolean" && !Number.isFinite(value))) {
      const message = `the storage setting ${JSON.stringify(name)} = ${String(value)} is not a storage parameter: give a lower-case name and a number or a boolean`;
      throw new SqlInboxError("Declaration", message, { table: spec.table });
    }
    return `${name} = ${String(value)}`;
  });
  return sql.raw(`with (${text.join(", ")})`);
}

interface ColumnShape {
  readonly type: string;
  readonly build: (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;
}

const asIs = (c: ColumnDefinitionBuilder) => c;
const notNull = (c: ColumnDefinitionBuilder) => c.notNull();

/** A column's type and constraints per its role; `null` for a column whose type the description does not give. */
function columnShape(types: TableTypes, col: ColumnDescription): ColumnShape | null {
  switch (col.role) {
    case "id": {
      if (col.generated) {
        const { type, autoIncrement } = types.generatedId;
        return { type, build: (c) => (autoIncrement ? c.autoIncrement().primaryKey() : c.primaryKey()) };
      }
      if (col.type === undefined) return null;
      return { type: col.type === "text" ? types.indexedText : types.portable[col.type], build: (c) => c.primaryKey() };
    }
    case "attempt":
      // Counted at each claim; a delivery reads the value before its claim counted it, so 1 delivers attempt 1 first.
      return { type: types.counter, build: (c) => c.notNull().defaultTo(1) };
    case "priority":
      return { type: types.counter, build: (c) => c.notNull().defaultTo(0) };
    case "failedAttempts":
      return { type: types.counter, build: asIs };
    case "lease":
    case "retryAfter":
    case "processedAt":
      return { type: types.time, build: asIs };
    case "payload":
      return { type: types.payload, build: notNull };
    case "headers":
      return { type: types.headers, build: asIs };
    case "group":
      return { type: types.indexedText, build: notNull };
    case "key":
      return { type: types.indexedText, build: asIs };
    case "orderKey":
      // The application's own value (an account id …): its portable type, text by default; it leads an index.
      return { type: col.type === undefined || col.type === "text" ? types.indexedText : types.portable[col.type], build: notNull };
    case "lastError":
      return { type: types.longText, build: asIs };
    case "result":
    case "progress":
      // JSON the runtime writes as text: jsonb on Postgres, JSON (LONGTEXT on MariaDB) on MySQL, TEXT on SQLite.
      return { type: types.portable.json, build: asIs };
    case "data":
      return col.type === undefined ? null : { type: types.portable[col.type], build: asIs };
  }
}

/**
 * The index every claim of the table walks: equalities first (group; processedAt where the engine
 * has no partial index), then claim order. `null` where it would be the primary key alone.
 */
function claimIndex(ctx: StatementContext, types: TableTypes, spec: InboxDescription): CreateIndexBuilder | null {
  const ref = (c: ColumnDescription): Expression<unknown> => sql.ref(c.name);
  const columns: Expression<unknown>[] = [];
  if (spec.group !== undefined) columns.push(ref(spec.group));
  const partial = spec.processedAt !== undefined && types.partialIndexes;
  if (spec.processedAt !== undefined && !partial) columns.push(ref(spec.processedAt));
  if (spec.priority !== undefined) columns.push(ref(spec.priority));
  if (spec.retryAfter !== undefined) {
    // Claims order never-delayed rows first: where ascending order puts NULL last, the index says so too.
    columns.push(ctx.capabilities.nullsFirstByDefault ? ref(spec.retryAfter) : sql`${ref(spec.retryAfter)} nulls first`);
  }
  if (columns.length === 0 && !partial) return null;
  columns.push(ref(spec.id));
  let index = ctx.db.schema.createIndex(indexName(spec, "claim")).on(tableRef(spec));
  for (const column of columns) index = index.expression(column);
  if (partial && spec.processedAt !== undefined) index = index.where(sql.ref(spec.processedAt.name), "is", null);
  return index;
}

/** The processed rows by the time they were handled, for retention's prune; `null` without processedAt or partial indexes. */
function retentionIndex(ctx: StatementContext, types: TableTypes, spec: InboxDescription): CreateIndexBuilder | null {
  if (spec.processedAt === undefined || !types.partialIndexes) return null;
  const columns = [...(spec.group !== undefined ? [spec.group.name] : []), spec.processedAt.name];
  return ctx.db.schema.createIndex(indexName(spec, "processed")).on(tableRef(spec)).columns(columns).where(sql.ref(spec.processedAt.name), "is not", null);
}

/** The order key's head probe: the key's unprocessed rows in id order (`order-key-head.ts`). `null` without an order key. */
function orderKeyIndex(ctx: StatementContext, types: TableTypes, spec: InboxDescription): CreateIndexBuilder | null {
  if (spec.orderKey === undefined) return null;
  const partial = spec.processedAt !== undefined && types.partialIndexes;
  const columns = [spec.orderKey.name, ...(spec.processedAt !== undefined && !partial ? [spec.processedAt.name] : []), spec.id.name];
  const index = ctx.db.schema.createIndex(indexName(spec, "order_key")).on(tableRef(spec)).columns(columns);
  return partial && spec.processedAt !== undefined ? index.where(sql.ref(spec.processedAt.name), "is", null) : index;
}

/**
 * A key's handled rows in id order, for `jobs.list`'s `done` pages by key: where the engine has
 * partial indexes the order key's other indexes cover unprocessed rows only. `null` without an
 * order key or processedAt, or where the order key index (processedAt inside it) already covers them.
 */
function orderKeyDoneIndex(ctx: StatementContext, types: TableTypes, spec: InboxDescription): CreateIndexBuilder | null {
  if (spec.orderKey === undefined || spec.processedAt === undefined || !types.partialIndexes) return null;
  return ctx.db.schema
    .createIndex(indexName(spec, "order_key_done"))
    .on(tableRef(spec))
    .columns([spec.orderKey.name, spec.id.name])
    .where(sql.ref(spec.processedAt.name), "is not", null);
}

/**
 * The order key's lease probe: the key's unprocessed rows with a live lease (`order-key-head.ts`).
 * `null` without an order key or a lease column (a group table's probe reads its claim index).
 */
function orderKeyLeaseIndex(ctx: StatementContext, types: TableTypes, spec: InboxDescription): CreateIndexBuilder | null {
  if (spec.orderKey === undefined || spec.lease === undefined) return null;
  const partial = spec.processedAt !== undefined && types.partialIndexes;
  const columns: Expression<unknown>[] = [sql.ref(spec.orderKey.name)];
  if (spec.processedAt !== undefined && !partial) columns.push(sql.ref(spec.processedAt.name));
  // The probe reads the latest leases first, never-leased (NULL) last: walked backward, the index
  // gives that order where ascending order puts NULL first; Postgres is told.
  const lease = sql.ref(spec.lease.name);
  columns.push(ctx.capabilities.nullsFirstByDefault ? lease : sql`${lease} nulls first`);
  let index = ctx.db.schema.createIndex(indexName(spec, "order_key_lease")).on(tableRef(spec));
  for (const column of columns) index = index.expression(column);
  return partial && spec.processedAt !== undefined ? index.where(sql.ref(spec.processedAt.name), "is", null) : index;
}

/**
 * `<table>_<purpose>`, cut to fit every engine's 63 characters: a long table name keeps its start
 * and gains a hash of the whole, so two long names never share an index name.
 */
function indexName(spec: InboxDescription, purpose: string): string {
  const name = `${spec.table}_${purpose}`;
  if (name.length <= 63) return name;
  let hash = 0x811c9dc5;
  for (const ch of spec.table) hash = Math.imul(hash ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  const tail = `_${hash.toString(16).padStart(8, "0")}_${purpose}`;
  return `${spec.table.slice(0, 63 - tail.length)}${tail}`;
}
