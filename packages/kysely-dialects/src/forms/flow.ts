import type { FlowStatements } from "../types.js";
import {
  countLiveLeasesQuery,
  createSlotTableQuery,
  ensureSlotsQuery,
  lockCapSlotsQuery,
  oldestStartQuery,
  SLOT_TABLE,
  selectRateSlotsQuery,
  startsSinceQuery,
  stampSlotsQuery,
  takeRateSlotsQuery,
} from "../statements/slots.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * Caps and rate limits, on every engine: the slot table's statements and the live-lease count.
 * What differs by engine is read from its capabilities: a one-statement take where updates
 * return rows, row locks on the slots where the engine has them.
 */
export function flowStatements(engine: EngineTraits): FlowStatements {
  const ctx = engine.statements;
  const flow: FlowStatements = {
    slotTable: SLOT_TABLE,
    createSlotTable: (schema?: string) => createSlotTableQuery(ctx, engine.tableTypes, schema),
    ensureSlots: (place, count) => ensureSlotsQuery(ctx, place, count),
    takeRateSlots: (place, pick, reserve) => takeRateSlotsQuery(ctx, place, pick, reserve),
    selectRateSlots: (place, pick) => selectRateSlotsQuery(ctx, place, pick),
    stampSlots: (place, slots, stamp, fence) => stampSlotsQuery(ctx, place, slots, stamp, fence),
    oldestStart: (place, max) => oldestStartQuery(ctx, place, max),
    startsSince: (place, max, since) => startsSinceQuery(ctx, place, max, since),
    lockCapSlots: (place, n, take) => lockCapSlotsQuery(ctx, place, n, take),
    countLiveLeases: (spec, options) => countLiveLeasesQuery(ctx, spec, options),
  };
  return Object.freeze(flow);
}
