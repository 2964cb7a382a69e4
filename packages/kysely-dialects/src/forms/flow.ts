import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { notOnEngine } from "../shared/no-statement.js";
import {
  countLiveLeasesQuery,
  createSlotTableQuery,
  ensureSlotsQuery,
  lockCapSlotsQuery,
  waitCapSlotQuery,
  oldestStartQuery,
  SLOT_TABLE,
  selectRateSlotsQuery,
  startsSinceQuery,
  stampSlotsQuery,
  takeRateSlotsQuery,
  type RateSlotPick,
  type SlotPlace,
} from "../statements/slots.js";
import type { EngineTraits, LockWaitTraits } from "./engine-traits.js";

/**
 * Caps on work in progress and rate limits, counted in the database: sqlinbox's own slot table
 * (`sqlinbox_slots`, one row per slot of one limit) and the live leases of a lease table.
 */
export interface FlowStatements {
  /** The slot table's name (in the queue table's schema, when it names one). */
  readonly slotTable: string;
  /** `CREATE TABLE IF NOT EXISTS` of the slot table. */
  createSlotTable(schema?: string): CompiledQuery;
  /** Inserts the missing slots `0 … count - 1` of one limit; existing ones are left as they are. */
  ensureSlots(place: SlotPlace, count: number): CompiledQuery;
  /**
   * Takes free rate slots and stamps them `reserve`, returning `slot`s, in one statement: where the
   * engine has `UPDATE … RETURNING` (`capabilities.updateReturning`); elsewhere `selectRateSlots` then `stampSlots`.
   */
  takeRateSlots(place: SlotPlace, pick: RateSlotPick, reserve: number): CompiledQuery<{ slot: unknown }>;
  /** The free rate slots, locked until the transaction ends where the engine locks rows. */
  selectRateSlots(place: SlotPlace, pick: RateSlotPick): CompiledQuery<{ slot: unknown }>;
  /** Stamps slots (with `fence`: only those still stamped `fence`). */
  stampSlots(place: SlotPlace, slots: readonly number[], stamp: number, fence?: number): CompiledQuery;
  /** One row with `oldest`: the oldest last start among the first `max` slots. */
  oldestStart(place: SlotPlace, max: number): CompiledQuery<{ oldest: unknown }>;
  /** One row with `started`: the starts a rate limit admitted after `since` (ms), reservations included. */
  startsSince(place: SlotPlace, max: number, since: number): CompiledQuery<{ started: unknown }>;
  /** Locks up to `take` of a cap's first `n` slots for the transaction (`FOR UPDATE SKIP LOCKED`), where the engine locks rows (`capabilities.rowLock`). */
  lockCapSlots(place: SlotPlace, n: number, take: number): CompiledQuery<{ slot: unknown }>;
  /**
   * Waits for slot `slot` of a cap and locks it for the transaction (`FOR UPDATE`, not skipping), where
   * the engine locks rows: a claim that found the cap full queues for a slot other processes hold. Run
   * between `lockWait.bound(ms)` and `lockWait.unbound()`.
   */
  waitCapSlot(place: SlotPlace, slot: number): CompiledQuery<{ slot: unknown }>;
  /** The bound on a row-lock transaction's lock waits (`waitCapSlot`'s), where the engine locks rows (`capabilities.rowLock`). */
  readonly lockWait: LockWaitTraits;
  /** One row with `live`: the rows of a lease table whose deadline is in the future (unprocessed, of `group`). */
  countLiveLeases(spec: InboxDescription, options: { readonly now: Date; readonly group?: string }): CompiledQuery<{ live: unknown }>;
}

/**
 * Caps and rate limits, on every engine: the slot table's statements and the live-lease count.
 * What differs by engine is read from its capabilities: a one-statement take where updates
 * return rows, row locks on the slots where the engine has them.
 */
export function flowStatements(engine: EngineTraits): FlowStatements {
  const ctx = engine.statements;
  const { engine: name, updateReturning, rowLock } = ctx.capabilities;
  const flow: FlowStatements = {
    slotTable: SLOT_TABLE,
    createSlotTable: (schema?: string) => createSlotTableQuery(ctx, engine.tableTypes, schema),
    ensureSlots: (place, count) => ensureSlotsQuery(ctx, place, count),
    takeRateSlots: updateReturning
      ? (place, pick, reserve) => takeRateSlotsQuery(ctx, place, pick, reserve)
      : () => notOnEngine(name, "flow.takeRateSlots", "no UPDATE … RETURNING: selectRateSlots, then stampSlots (capabilities.updateReturning is false)"),
    selectRateSlots: (place, pick) => selectRateSlotsQuery(ctx, place, pick),
    stampSlots: (place, slots, stamp, fence) => stampSlotsQuery(ctx, place, slots, stamp, fence),
    oldestStart: (place, max) => oldestStartQuery(ctx, place, max),
    startsSince: (place, max, since) => startsSinceQuery(ctx, place, max, since),
    lockCapSlots: rowLock
      ? (place, n, take) => lockCapSlotsQuery(ctx, place, n, take)
      : () => notOnEngine(name, "flow.lockCapSlots", "it has no row locks (capabilities.rowLock is false)"),
    waitCapSlot: rowLock ? (place, slot) => waitCapSlotQuery(ctx, place, slot) : () => notOnEngine(name, "flow.waitCapSlot", "it has no row locks (capabilities.rowLock is false)"),
    lockWait: engine.lockWait === "no row-lock form" ? noLockWait(name) : engine.lockWait,
    countLiveLeases: (spec, options) => countLiveLeasesQuery(ctx, spec, options),
  };
  return Object.freeze(flow);
}

/** An engine without row locks waits for none: its bound refuses, and no error is a lock wait's. */
function noLockWait(name: EngineTraits["capabilities"]["engine"]): LockWaitTraits {
  const refuse = (): never => notOnEngine(name, "flow.lockWait", "it has no row locks (capabilities.rowLock is false)");
  return Object.freeze({ bound: refuse, unbound: refuse, timeoutAbortsTransaction: false, timedOut: () => false });
}
