import { SqlInboxError, type ColumnDescription, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import { notForTable } from "../shared/no-statement.js";
import type { ClaimOptions, RawRow } from "../types.js";
import { idIn } from "./claim-stamp.js";
import { col, COMPARE_PRECISION, compiled, type Eb, type StatementContext, tableRef } from "./query-db.js";

/**
 * Ordered keys: a row is claimable only while it is among its key's first `perKey` rows (1 unless
 * `maxInWorkPerKey` says more) in id order, counting every unprocessed row of the key — due or
 * delayed, free or in work — and, in the lease form, only while its key holds fewer than `perKey`
 * other rows with a live lease (in the row-lock form, the key's lock says so instead; see below). The claim walks the due rows in claim order as any claim does and
 * keeps those that pass, so it picks the heads of many keys at once, and a process runs up to
 * `workers(n)` keys side by side.
 *
 * Why id order, and not claim order, inside a key: a row in work stays unprocessed until it
 * settles, and every row published later has a larger id, so a later row can never rank before
 * the rows in work; a plain read (no lock) is enough to see who is ahead, in the lease and the
 * row-lock form alike. Priority and retry_after order the keys' heads against each other, never
 * the rows of one key. A retry leaves the row where it is: it stays the head, and a delayed head
 * (retry_after in the future) holds its key until it is due.
 *
 * A row committed late: ids are given at insert, not at commit, so two transactions publishing to
 * one key at once can commit in the other order, and a row with a smaller id than a row already in
 * work then becomes its key's head. In the lease form the row in work is visible (`lease > now`),
 * and the second condition, the key's other rows with a live lease, keeps the late row back until
 * that row settles: one at a time holds, and the late row runs next (after the later row, not
 * before it). In the row-lock form a row in work is only a row lock, which a plain read does not
 * see: there the claim's transaction also holds a lock on the key of each row it took, one of
 * `perKey` slots, for as long as it holds the row (`order-key-lock.ts`: Postgres
 * `pg_try_advisory_xact_lock`, MySQL/MariaDB `GET_LOCK` given back before the transaction ends),
 * and a row whose key has no free slot does not run (the runtime takes its attempt back and claims
 * another). The key is locked by a statement after the claim, on rows the transaction already
 * holds, not in the claim's WHERE: there the lock would be taken per row the filter passes, before
 * Postgres's `FOR UPDATE SKIP LOCKED` (a row skipped then, say one whose ack just committed, would
 * leave its key locked until this transaction ends), and, under a plan that sorts, for every
 * candidate row on either engine. After the claim, keys are locked for the rows taken and no
 * others, whatever the plan. SQLite has one writer at a time: its rows commit in id order.
 *
 * Concurrent claims: two claimers that read the same head meet on its row (`FOR UPDATE SKIP LOCKED`,
 * or the lease re-checked when the row is locked; SQLite has one writer), and a claimer whose read
 * is older sees more rows ahead, never fewer. In the lease form a claim reads the leases committed
 * when its statement began, so a lease another claimer is writing in a claim not yet committed is
 * invisible to it: claimer 1 reads before a late row's publish commits and takes the key's later
 * row; the late row commits; claimer 2 reads before claimer 1 commits, finds the late row the head
 * and no live lease, and takes it. So where claims run side by side (Postgres, MySQL/MariaDB) the
 * runtime checks the rows a claim took once it has committed (`selectCrowdedQuery`) and gives back,
 * unstarted, any whose key then holds `perKey` other live leases: the later of two such claims to
 * commit sees the other's lease in its check.
 *
 * The probes are index lookups per candidate row: on `(order key, id)` for the head, and in the
 * lease form on `(order key, lease)` for the rows in work, read backward from the latest lease
 * (`perKey` entries, however many rows the key holds). `createInboxTable` makes both, partial on
 * unprocessed rows where the engine has partial indexes. On a group table with `perKey`, both read
 * the group's rows through the claim index, which leads with the group.
 *
 * @example
 * The claim of a lease table with an order key, on PostgreSQL (one row of a key at a time):
 * ```sql postgres:lease.claim(ordered)
 * with "picked" as (select "ledger_jobs"."id" from "ledger_jobs"
 *   where ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= $1)
 *     and ("ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head"
 *       where "order_head"."account_id" = "ledger_jobs"."account_id" order by "order_head"."id" asc limit $2)
 *     and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased"
 *       where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."id" <> "ledger_jobs"."id"
 *       order by "order_leased"."locked_until" desc nulls last limit $3) > $4, false))
 *   order by "ledger_jobs"."id" asc limit $5 for update skip locked),
 * "claimed" as (update "ledger_jobs" set "locked_until" = $6, "attempt" = "attempt" + 1
 *   where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "account_id", "payload")
 * select * from "claimed" order by "id" asc
 * ```
 */
const ORDER_HEAD = "order_head";
/** The alias of the lease probe's table: the key's other rows in work. */
const ORDER_LEASED = "order_leased";

/**
 * The column whose values a claim keeps in order: the order key, or, on a group table whose
 * subscription sets `perKey` (`maxInWorkPerKey`), the group (its rows then run `perKey` at a time,
 * in id order, in place of fifo's one at a time in claim order). `undefined`: no head rule of this kind.
 */
export function orderedKey(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">): ColumnDescription | undefined {
  return spec.orderKey ?? (options.perKey !== undefined ? spec.group : undefined);
}

/** A fifo table's own head rule applies: fifo, and no `perKey` that replaces it with the ordered-key rule. */
export function fifoRuleApplies(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">): boolean {
  return spec.fifo && options.perKey === undefined;
}

/**
 * The order key's head rule for the row a claim reads from the table (unaliased): the row is among
 * its key's first `perKey` unprocessed rows by id, and, in the lease form, its key holds fewer than
 * `perKey` other unprocessed rows with a live lease (`lease > now`) — a row committed late with a
 * smaller id waits for the rows of its key already in work.
 */
export function orderKeyHeadCondition(ctx: StatementContext, spec: InboxDescription, options: Pick<ClaimOptions, "perKey" | "now">) {
  const key = orderedKey(spec, options);
  if (key === undefined) throw new SqlInboxError("Declaration", "the head rule of an order key needs an order key column, or a group column and perKey", { table: spec.table });
  const perKey = perKeyOf(options);
  const id = col(spec, spec.id.name);
  const lease = spec.lease;
  const crowded = lease === undefined ? undefined : keyCrowdedCondition(ctx, spec, key, lease, perKey, options.now);
  return (eb: Eb): Expression<SqlBool> => {
    let ahead = eb
      .selectFrom(`${tableRef(spec)} as ${ORDER_HEAD}`)
      .select(`${ORDER_HEAD}.${spec.id.name}`)
      .where(`${ORDER_HEAD}.${key.name}`, "=", eb.ref(col(spec, key.name)));
    if (spec.processedAt !== undefined) ahead = ahead.where(`${ORDER_HEAD}.${spec.processedAt.name}`, "is", null);
    ahead = ahead.orderBy(`${ORDER_HEAD}.${spec.id.name}`, "asc").limit(1);
    // One at a time: the row is its key's first. More: the row is not past its key's perKey-th row
    // (none: the key has fewer rows than that).
    const head = perKey === 1 ? eb(id, "=", ahead) : eb(id, "<=", eb.fn.coalesce(ahead.offset(perKey - 1), eb.ref(id)));
    if (crowded === undefined) return head;
    return eb.and([head, eb.not(crowded(eb))]);
  };
}

/**
 * The lease form's second condition, read for the row a statement reads from the table
 * (unaliased): its key holds `perKey` or more other unprocessed rows with a live lease. It reads
 * the key's `perKey`-th latest lease (other rows, unprocessed): live means `perKey` of them are in
 * work. Latest first, NULL (never leased) last, so the read walks the `(order key, lease)` index
 * backward and stops after `perKey` entries; a `lease > now` filter instead would walk every row of
 * the key on MySQL/MariaDB, whose correlated lookup only uses the equalities. No such lease, or not
 * live: NULL (no row, or never leased) reads as free.
 */
function keyCrowdedCondition(ctx: StatementContext, spec: InboxDescription, key: ColumnDescription, lease: ColumnDescription, perKey: number, at: Date) {
  const id = col(spec, spec.id.name);
  const now = ctx.time.encode(at, COMPARE_PRECISION);
  const nullsFirst = ctx.capabilities.nullsFirstByDefault;
  return (eb: Eb): Expression<SqlBool> => {
    let leased = eb
      .selectFrom(`${tableRef(spec)} as ${ORDER_LEASED}`)
      .select(`${ORDER_LEASED}.${lease.name}`)
      .where(`${ORDER_LEASED}.${key.name}`, "=", eb.ref(col(spec, key.name)));
    if (spec.processedAt !== undefined) leased = leased.where(`${ORDER_LEASED}.${spec.processedAt.name}`, "is", null);
    leased = leased.where(`${ORDER_LEASED}.${spec.id.name}`, "<>", eb.ref(id));
    const latest = `${ORDER_LEASED}.${lease.name}`;
    leased = (nullsFirst ? leased.orderBy(latest, "desc") : leased.orderBy(latest, (ob) => ob.desc().nullsLast())).limit(1);
    if (perKey > 1) leased = leased.offset(perKey - 1);
    return eb.fn.coalesce(eb(leased, ">", now), eb.lit(false)) as Expression<SqlBool>;
  };
}

/**
 * The lease form's check after a claim has committed, where claims run side by side: of the rows
 * it took (`ids`), those whose key holds `perKey` or more other rows with a live lease. A claim reads
 * the leases committed when it began, so a claim of a key's row committed while this one ran (a
 * late-committed head, taken beside this key's later row) is invisible to it; after both have
 * committed, the later of the two checks sees the other's lease. A crowded row is given back
 * unstarted (the runtime undoes its attempt), so whichever order the two commits and checks run
 * in, at most `perKey` rows of a key start; if both see each other, both are given back and the next
 * claim takes the key's head. The table has an ordered key and a lease column; otherwise it refuses.
 *
 * @example
 * The check after a claim of two rows, on PostgreSQL (one row of a key at a time):
 * ```sql postgres:lease.selectCrowded(ordered)
 * select "ledger_jobs"."id" from "ledger_jobs" where "id" in ($1, $2)
 *   and coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased"
 *     where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."id" <> "ledger_jobs"."id"
 *     order by "order_leased"."locked_until" desc nulls last limit $3) > $4, false)
 * ```
 */
export function selectCrowdedQuery(ctx: StatementContext, spec: InboxDescription, options: Pick<ClaimOptions, "perKey" | "now">, ids: readonly unknown[]): CompiledQuery<RawRow> {
  const key = orderedKey(spec, options);
  const lease = spec.lease;
  if (key === undefined || lease === undefined)
    return notForTable("lease.selectCrowded", "it needs an ordered key (an order key, or a group with perKey) and a lease column", { table: spec.table });
  const crowded = keyCrowdedCondition(ctx, spec, key, lease, perKeyOf(options), options.now);
  return compiled(ctx.db.selectFrom(tableRef(spec)).select(col(spec, spec.id.name)).where(idIn(spec, ids)).where(crowded));
}

function perKeyOf(options: Pick<ClaimOptions, "perKey">): number {
  const perKey = options.perKey ?? 1;
  if (!Number.isInteger(perKey) || perKey < 1) throw new RangeError(`perKey must be a positive integer, got ${perKey}`);
  return perKey;
}
