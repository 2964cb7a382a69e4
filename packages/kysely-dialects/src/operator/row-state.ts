import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type Expression, type SqlBool } from "kysely";
import { isOwnGroupHead } from "../statements/fifo-head.js";
import { orderKeyHeadCondition } from "../statements/order-key-head.js";
import { COMPARE_PRECISION, type Eb, type StatementContext } from "../statements/query-db.js";
import type { RowState } from "./types.js";

/**
 * What state a row is in at `now`. A row is in exactly one: `done` (processedAt set) › `leased`
 * (a live lease) › `delayed` (retryAfter in the future) › `ready`, or, on a fifo table, `ready`
 * only for its group's head (`isOwnGroupHead`, the claim's own rule) and `waiting` for the other
 * due rows, which no claim takes before the head settles; on a table with an order key the same
 * with each key's head (`orderKeyHeadCondition`, one row of a key at a time; in the lease form only
 * while no other row of the key holds a live lease, as the claim has it). Row-lock and advisory rows in work read
 * as `ready` here: only a probe tells them apart. `due` is `ready` and `waiting` together, which
 * a count reads without the head subquery. Column names are unqualified: the statement reads
 * `spec.table` without an alias.
 */
/** The table has rows behind a head: fifo groups, or an order key. */
export function hasHeads(spec: InboxDescription): boolean {
  return spec.fifo || spec.orderKey !== undefined;
}

/** The row the statement reads is its group's or its key's head. */
function isHead(ctx: StatementContext, spec: InboxDescription, now: Date) {
  return spec.orderKey !== undefined ? orderKeyHeadCondition(ctx, spec, { now }) : isOwnGroupHead(ctx, spec, now, spec.table);
}

export function rowStateIs(ctx: StatementContext, spec: InboxDescription, state: RowState | "due", now: Date) {
  const at = ctx.time.encode(now, COMPARE_PRECISION);
  return (eb: Eb): Expression<SqlBool> => {
    // A role the table lacks makes its state empty: `1 = 0` reads the same on every engine.
    const never = (): Expression<SqlBool> => sql<SqlBool>`1 = 0`;
    const done = (): Expression<SqlBool> => (spec.processedAt === undefined ? never() : eb(spec.processedAt.name, "is not", null));
    const notDone = (): Expression<SqlBool>[] => (spec.processedAt === undefined ? [] : [eb(spec.processedAt.name, "is", null)]);
    const leased = (): Expression<SqlBool> => (spec.lease === undefined ? never() : eb(spec.lease.name, ">", at));
    const notLeased = (): Expression<SqlBool>[] => (spec.lease === undefined ? [] : [eb.or([eb(spec.lease.name, "is", null), eb(spec.lease.name, "<=", at)])]);
    const delayed = (): Expression<SqlBool> => (spec.retryAfter === undefined ? never() : eb(spec.retryAfter.name, ">", at));
    const notDelayed = (): Expression<SqlBool>[] => (spec.retryAfter === undefined ? [] : [eb.or([eb(spec.retryAfter.name, "is", null), eb(spec.retryAfter.name, "<=", at)])]);
    const due = (): Expression<SqlBool>[] => [...notDone(), ...notLeased(), ...notDelayed()];
    // NULL (a row without a group has no head) reads as not the head: `case` takes the else branch.
    const notHead = (): Expression<SqlBool> =>
      eb(
        eb
          .case()
          .when(isHead(ctx, spec, now)(eb))
          .then(eb.lit(0))
          .else(eb.lit(1))
          .end(),
        "=",
        eb.lit(1),
      );
    switch (state) {
      case "all":
        return sql<SqlBool>`1 = 1`;
      case "done":
        return done();
      case "leased":
        return eb.and([...notDone(), leased()]);
      case "delayed":
        return eb.and([...notDone(), ...notLeased(), delayed()]);
      case "ready":
        return eb.and(hasHeads(spec) ? [...due(), isHead(ctx, spec, now)(eb)] : due());
      case "waiting":
        return hasHeads(spec) ? eb.and([...due(), notHead()]) : never();
      // Not a state of its own: `ready` and `waiting` together, without the head subquery (`countByState` on a fifo table).
      case "due":
        return eb.and(due());
    }
  };
}

/** True when the state is the whole table: no condition is needed. */
export function isWholeTable(spec: InboxDescription, state: RowState): boolean {
  if (state === "all") return true;
  return state === "ready" && !hasHeads(spec) && spec.processedAt === undefined && spec.lease === undefined && spec.retryAfter === undefined;
}

/** True when a description can have rows in the state at all (no `done` without processedAt, …). */
export function stateExists(spec: InboxDescription, state: RowState | "due"): boolean {
  switch (state) {
    case "done":
      return spec.processedAt !== undefined;
    case "leased":
      return spec.lease !== undefined;
    case "delayed":
      return spec.retryAfter !== undefined;
    case "waiting":
      return hasHeads(spec);
    default:
      return true;
  }
}
