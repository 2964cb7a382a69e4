import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { compiled, type Eb, type QueryDb, type StatementContext } from "../statements/query-db.js";
import type { DeadLetterPlace, OperatorTraits } from "./types.js";

/** The table the dead letters sit in, and the condition that picks them out of it. */
function deadLetters(db: QueryDb, source: InboxDescription, place: DeadLetterPlace, ids?: readonly unknown[]) {
  const spec = place.kind === "table" ? place.destination : source;
  let query = db.selectFrom(spec.table);
  if (place.kind === "group") query = query.where(groupColumn(source).name, "=", place.deadGroup);
  if (ids !== undefined) query = query.where(spec.id.name, "in", [...ids]);
  return { spec, query };
}

function groupColumn(source: InboxDescription) {
  const group = source.group;
  if (group === undefined) {
    throw new SqlInboxError("Declaration", "dead letters in a group need a group column: describe one, or name a dead-letter table", { table: source.table });
  }
  return group;
}

/** The dead letters with every column (`select *`), only `ids` when given, in id order, at most `limit`. */
export function peekDeadLettersQuery(ctx: StatementContext, source: InboxDescription, place: DeadLetterPlace, limit: number, ids?: readonly unknown[]): CompiledQuery<RawRow> {
  const { spec, query } = deadLetters(ctx.db, source, place, ids);
  return compiled(query.selectAll().orderBy(spec.id.name).limit(limit));
}

/**
 * How many dead letters there are per group of the table they sit in (one count, `grp` NULL,
 * when that table has no group column).
 */
export function countDeadLettersQuery(ctx: StatementContext, source: InboxDescription, place: DeadLetterPlace): CompiledQuery<RawRow> {
  const { spec, query } = deadLetters(ctx.db, source, place);
  const group = spec.group;
  const counted = query.select((eb: Eb) => [group === undefined ? eb.lit(null).as("grp") : eb.ref(group.name).as("grp"), eb.fn.countAll().as("rows")]);
  return compiled(group === undefined ? counted : counted.groupBy(group.name));
}

/**
 * `countDeadLetters` up to `cap` rows (`grp`, `rows`): a dead-letter table's rows in id order (its
 * primary key), a dead group's rows through the index its group column leads. For a large table's
 * status: a count that reaches the cap reads "at least".
 */
export function cappedCountDeadLettersQuery(ctx: StatementContext, source: InboxDescription, place: DeadLetterPlace, cap: number): CompiledQuery<RawRow> {
  const { spec, query } = deadLetters(ctx.db, source, place);
  const group = spec.group;
  const picked = query.select((eb: Eb) => [group === undefined ? eb.lit(null).as("grp") : eb.ref(group.name).as("grp")]);
  const bounded = (place.kind === "table" ? picked.orderBy(spec.id.name) : picked).limit(cap).as("dead");
  const counted = (ctx.db as QueryDb).selectFrom(bounded).select((eb: Eb) => [eb.ref("grp").as("grp"), eb.fn.countAll().as("rows")]);
  return compiled(counted.groupBy("grp"));
}

/**
 * The ids of one chunk of a retry, in id order, locked with `FOR UPDATE` until its transaction
 * ends so two retries never move one row twice (no lock clause on SQLite, whose writer is alone).
 */
export function lockDeadLetterIdsQuery(ctx: StatementContext, source: InboxDescription, place: DeadLetterPlace, limit: number, ids?: readonly unknown[]): CompiledQuery<RawRow> {
  const { spec, query } = deadLetters(ctx.db, source, place, ids);
  const chunk = query
    .select((eb: Eb) => eb.ref(spec.id.name).as("id"))
    .orderBy(spec.id.name)
    .limit(limit);
  return compiled(ctx.capabilities.rowLock ? chunk.forUpdate() : chunk);
}

/** The columns copied back from a dead-letter table: every written column of the source that the destination also describes. */
export function copiedColumns(source: InboxDescription, destination: InboxDescription): string[] {
  const reset = new Set([source.id, source.attempt, source.lease, source.retryAfter, source.processedAt].map((c) => c?.name));
  const there = new Set(destination.columns.map((c) => c.name));
  return source.columns.filter((c) => !c.generated && !reset.has(c.name) && there.has(c.name)).map((c) => c.name);
}

/**
 * The statements that move dead letters back, run in order in one transaction so a crash
 * neither loses nor duplicates a row:
 * - a table: an insert-select copies the `copiedColumns` of the given ids into the source, then
 *   a delete removes those ids from the destination; the source's defaults fill the rest (the
 *   attempt, no lease, no retryAfter, not processed). The row keeps the dead letter's id when the
 *   destination generates none (it is then the source's own id, copied by the move), else gets a new one;
 * - a group: one update of the given ids still in the dead group sets the group back, the
 *   attempt to its column's default, and clears lease, retryAfter and processedAt.
 */
export function retryDeadLettersQueries(
  ctx: StatementContext,
  operator: OperatorTraits,
  source: InboxDescription,
  place: DeadLetterPlace,
  ids: readonly unknown[],
): readonly CompiledQuery[] {
  if (ids.length === 0) return [];
  if (place.kind === "group") {
    const group = groupColumn(source);
    const reset: Record<string, unknown> = { [group.name]: place.group };
    for (const col of [source.lease, source.retryAfter, source.processedAt]) if (col !== undefined) reset[col.name] = null;
    let update = ctx.db.updateTable(source.table).set(reset);
    if (source.attempt !== undefined) update = update.set(source.attempt.name, operator.attemptDefault(source));
    return [compiled(update.where(group.name, "=", place.deadGroup).where(source.id.name, "in", [...ids]))];
  }
  const destination = place.destination;
  const columns = copiedColumns(source, destination);
  if (columns.length === 0) {
    throw new SqlInboxError("Declaration", `no column of "${source.table}" can be copied back from "${destination.table}": describe the payload (or data) columns in both`, {
      table: source.table,
    });
  }
  // A dead-letter table that generates no id of its own holds the source's: the row goes back under
  // it, so what knows the job by its id (a workflow's step) finds it again.
  const keepId = !destination.id.generated && !columns.includes(source.id.name);
  const insert = ctx.db
    .insertInto(source.table)
    .columns(keepId ? [source.id.name, ...columns] : columns)
    .expression(
      ctx.db
        .selectFrom(destination.table)
        .select(keepId ? [destination.id.name, ...columns] : columns)
        .where(destination.id.name, "in", [...ids])
        .orderBy(destination.id.name),
    );
  const remove = ctx.db.deleteFrom(destination.table).where(destination.id.name, "in", [...ids]);
  return [compiled(insert), compiled(remove)];
}

/** Deletes dead letters: all of them (in a group: only the dead group's rows), or only `ids` when given. */
export function purgeDeadLettersQuery(ctx: StatementContext, source: InboxDescription, place: DeadLetterPlace, ids?: readonly unknown[]): CompiledQuery {
  const spec = place.kind === "table" ? place.destination : source;
  let remove = ctx.db.deleteFrom(spec.table);
  if (place.kind === "group") remove = remove.where(groupColumn(source).name, "=", place.deadGroup);
  if (ids !== undefined) remove = remove.where(spec.id.name, "in", [...ids]);
  return compiled(remove);
}
