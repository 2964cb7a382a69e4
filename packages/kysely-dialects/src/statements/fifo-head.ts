import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import type { ClaimOptions, RawRow } from "../types.js";
import { notForTable, notOnEngine } from "../shared/no-statement.js";
import { claimOrder } from "./claim-order.js";
import { fifoRuleApplies } from "./order-key-head.js";
import { col, COMPARE_PRECISION, compiled, type Eb, type StatementContext, tableRef } from "./query-db.js";

/**
 * FIFO groups: the head of a group is its first row in claim order (priority, then retry_after
 * with never-delayed rows first, then id) among the rows that are due, so a delayed head moves
 * behind the rows after it. A row in work stays the head until it settles, even when a row that
 * ranks earlier appears (published with a better priority, or an earlier retry_after coming due):
 *
 * - lease form: a row in work is visible (`locked_until > now`), is part of the group's rows
 *   below, and ranks first;
 * - row-lock form: a row in work is only a row lock, which a plain read does not see. So a fifo
 *   claim locks every row of the group that holds or may take the head, `FOR UPDATE SKIP LOCKED`,
 *   and counts them against a plain count of the same rows: a difference means another session
 *   holds one of them (a row in work, or a claim in flight), and the claim gives the group up.
 *   The lease form does the same, which closes the race with a claim not yet committed.
 *
 * Why this and not a lock per group: a transaction-level advisory lock exists on Postgres only
 * (MariaDB's `GET_LOCK` belongs to the session and would need a release the runtime must never
 * miss), and taken inside the claim statement it comes after the statement's snapshot, so it
 * would not see a lease committed meanwhile. The rows' own locks need nothing new on either
 * engine, end with the transaction (a crash frees the group at once), and conflict only between
 * claimers of one group; since they use `SKIP LOCKED`, they never wait or deadlock on each other.
 * The price: a claim locks the group's due rows, so it costs O(rows of the group) — fine for the
 * per-entity groups fifo is for, not for one huge group. A row-lock claim keeps those locks until
 * its delivery commits, which is harmless (no other claim may take a row of the group meanwhile).
 *
 * Postgres does it in the claim's single statement (a CTE, `postgres/fifo-claim-cte.ts`);
 * MySQL/MariaDB run `lockFifoGroup` first and give its row count to the claim (`fifoLocked`);
 * SQLite has one writer at a time, so the head subquery alone is exact there.
 */
const FIFO_HEAD = "fifo_head";
/** The alias of the plain count's table. */
const FIFO_SEEN = "fifo_seen";

/** The group column and the group a fifo claim is about: fifo claims name it (a subscription on a group table always does). */
function fifoGroup(spec: InboxDescription, options: Pick<ClaimOptions, "group">): { readonly column: string; readonly value: string } {
  if (spec.group === undefined) throw new SqlInboxError("Declaration", "fifo needs a group column", { table: spec.table });
  if (options.group === undefined) throw new SqlInboxError("Declaration", "a claim on a fifo table names its group", { table: spec.table });
  return { column: spec.group.name, value: options.group };
}

/** `alias.column`, or the table-qualified column when `alias` is undefined. */
function named(spec: InboxDescription, alias: string | undefined): (column: string) => string {
  return (column) => (alias === undefined ? col(spec, column) : `${alias}.${column}`);
}

/** `locked_until > now`: a live lease, the row is in work (lease form only). */
function held(ctx: StatementContext, spec: InboxDescription, now: Date, name: (column: string) => string) {
  return (eb: Eb): Expression<SqlBool> | null => (spec.lease === undefined ? null : eb(name(spec.lease.name), ">", ctx.time.encode(now, COMPARE_PRECISION)));
}

/** How the group's rows are matched: the claim's named group, or the group of the row an outer query reads. */
type SameGroup = (eb: Eb, groupColumn: string) => Expression<SqlBool>;

/**
 * The group's rows that hold its head or may take it: unprocessed, of the group, not parked by
 * this process, and due — or held by a live lease (a row in work stays in the group's rows).
 * `alias` names the table (its own name when undefined).
 */
export function fifoScope(ctx: StatementContext, spec: InboxDescription, options: Pick<ClaimOptions, "now" | "group" | "exclude">, alias?: string) {
  const group = fifoGroup(spec, options);
  return scopeOf(ctx, spec, options.now, options.exclude, (eb, column) => eb(column, "=", group.value), alias);
}

function scopeOf(ctx: StatementContext, spec: InboxDescription, at: Date, exclude: readonly unknown[] | undefined, sameGroup: SameGroup, alias?: string) {
  const name = named(spec, alias);
  const now = ctx.time.encode(at, COMPARE_PRECISION);
  return (eb: Eb): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [sameGroup(eb, name(spec.group?.name ?? ""))];
    if (spec.processedAt !== undefined) conditions.push(eb(name(spec.processedAt.name), "is", null));
    if (spec.retryAfter !== undefined) {
      const ref = name(spec.retryAfter.name);
      const due = [eb(ref, "is", null), eb(ref, "<=", now)];
      const inWork = held(ctx, spec, at, name)(eb);
      conditions.push(eb.or(inWork === null ? due : [...due, inWork]));
    }
    if (exclude !== undefined && exclude.length > 0) conditions.push(eb(name(spec.id.name), "not in", exclude));
    return eb.and(conditions);
  };
}

/** Not held (lease form): the head may be claimed; no condition where the table has no lease column. */
export function notHeld(ctx: StatementContext, spec: InboxDescription, now: Date, alias: string) {
  return (eb: Eb): Expression<SqlBool>[] => {
    if (spec.lease === undefined) return [];
    const ref = `${alias}.${spec.lease.name}`;
    return [eb.or([eb(ref, "is", null), eb(ref, "<=", ctx.time.encode(now, COMPARE_PRECISION))])];
  };
}

/** Head order: a row in work first (lease form), then claim order. */
// biome-ignore lint/suspicious/noExplicitAny: accepts every Kysely query builder; each declares its own where/orderBy overloads
function fifoOrder<Q extends { orderBy(...args: any[]): Q }>(ctx: StatementContext, spec: InboxDescription, now: Date, query: Q, alias: string): Q {
  const inWork = held(ctx, spec, now, named(spec, alias));
  const q =
    spec.lease === undefined
      ? query
      : query.orderBy(
          (eb: Eb) =>
            eb
              .case()
              .when(inWork(eb) as Expression<SqlBool>)
              .then(eb.lit(0))
              .else(eb.lit(1))
              .end(),
          "asc",
        );
  return claimOrder(ctx, spec, q, { qualified: true, alias });
}

/**
 * The id of the group's head, read from `source` (the table, or the rows a CTE locked) under the
 * alias `fifo_head`; `scoped` adds the group's rows condition where the source is the table.
 */
export function fifoHeadId(ctx: StatementContext, spec: InboxDescription, options: Pick<ClaimOptions, "now" | "group" | "exclude">, source: string, scoped: boolean) {
  return headId(ctx, spec, options.now, source, scoped ? fifoScope(ctx, spec, options, FIFO_HEAD) : null);
}

function headId(ctx: StatementContext, spec: InboxDescription, now: Date, source: string, scope: ((eb: Eb) => Expression<SqlBool>) | null) {
  return (eb: Eb) => {
    let head = eb.selectFrom(`${source} as ${FIFO_HEAD}`).select(`${FIFO_HEAD}.${spec.id.name}`);
    if (scope !== null) head = head.where(scope);
    return fifoOrder(ctx, spec, now, head, FIFO_HEAD).limit(1);
  };
}

/**
 * The head rule as the operator views read it: is the row that an outer query reads from `table`
 * its own group's head? The same scope and order as a claim's head (`fifoHeadId`), with the group
 * taken from the outer row instead of a claim's named group, so a status and a claim never
 * disagree about which row runs next. A row whose group is NULL has no head (a claim always
 * names a group): the comparison is NULL, so the caller reads such a row as not the head.
 * The ready rows of a lease table with fifo and no other role, on PostgreSQL:
 * ```sql postgres:operator.peek(fifo, ready)
 * select * from "fifo_jobs" where (("locked_until" is null or "locked_until" <= $1)
 *   and "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head"
 *     where "fifo_head"."grp" = "fifo_jobs"."grp"
 *     order by case when "fifo_head"."locked_until" > $2 then 0 else 1 end asc, "fifo_head"."id" asc limit $3))
 * order by "id" limit $4
 * ```
 * One subquery per row it is asked about: a status of a fifo table costs O(rows × rows of a group)
 * without an index on the group column.
 */
export function isOwnGroupHead(ctx: StatementContext, spec: InboxDescription, now: Date, table: string) {
  const group = spec.group;
  if (group === undefined) throw new SqlInboxError("Declaration", "fifo needs a group column", { table: spec.table });
  const scope = scopeOf(ctx, spec, now, undefined, (eb, column) => eb(column, "=", eb.ref(`${table}.${group.name}`)), FIFO_HEAD);
  return (eb: Eb): Expression<SqlBool> => eb(`${table}.${spec.id.name}`, "=", headId(ctx, spec, now, table, scope)(eb));
}

/** A plain count of the group's rows (no lock): what a claim compares with the rows it locked. */
export function fifoSeenCount(ctx: StatementContext, spec: InboxDescription, options: Pick<ClaimOptions, "now" | "group" | "exclude">) {
  return (eb: Eb) =>
    eb
      .selectFrom(`${tableRef(spec)} as ${FIFO_SEEN}`)
      .select((c: Eb) => c.fn.countAll().as("seen"))
      .where(fifoScope(ctx, spec, options, FIFO_SEEN));
}

/**
 * The head rule for engines that claim with a plain select (MySQL/MariaDB after
 * `lockFifoGroup`; SQLite, one writer at a time): the row is the group's head, and, where the
 * engine locked the group first, the group holds no row but those the claim locked.
 */
export function fifoHeadCondition(ctx: StatementContext, spec: InboxDescription, options: ClaimOptions) {
  return (eb: Eb): Expression<SqlBool> => {
    const isHead = eb(col(spec, spec.id.name), "=", fifoHeadId(ctx, spec, options, tableRef(spec), true)(eb));
    if (!ctx.capabilities.rowLock) return isHead;
    if (options.fifoLocked === undefined) {
      throw new SqlInboxError("Declaration", "a fifo claim on this engine runs lockFifoGroup first and passes its row count as fifoLocked", { table: spec.table });
    }
    return eb.and([isHead, eb(fifoSeenCount(ctx, spec, options)(eb), "=", options.fifoLocked)]);
  };
}

/**
 * A fifo claim's first statement where the claim cannot lock its group itself (an engine with
 * row locks and no one-statement claim: MySQL/MariaDB): `SELECT id … FOR UPDATE SKIP LOCKED` of the
 * group's rows; the number of rows it returns is the claim's `fifoLocked`. None for a table without
 * fifo (or whose `perKey` replaces fifo's rule), on SQLite (one writer) and where the claim is one
 * statement (Postgres): each refuses.
 */
export function lockFifoGroupQuery(ctx: StatementContext, spec: InboxDescription, options: ClaimOptions, oneStatementClaim: boolean): CompiledQuery<RawRow> {
  if (oneStatementClaim || !ctx.capabilities.rowLock) {
    notOnEngine(ctx.capabilities.engine, "lockFifoGroup", "the claim locks its fifo group itself, or one writer runs (rowLock.claimLocksFifoGroup, lease.claimsInOneStatement)");
  }
  if (!fifoRuleApplies(spec, options)) notForTable("lockFifoGroup", "its fifo rule does not apply (fifoRuleApplies: a fifo group, without perKey)", { table: spec.table });
  return compiled(
    ctx.db
      .selectFrom(tableRef(spec))
      .select(col(spec, spec.id.name))
      .where(fifoScope(ctx, spec, options))
      .forUpdate()
      .skipLocked(),
  );
}
