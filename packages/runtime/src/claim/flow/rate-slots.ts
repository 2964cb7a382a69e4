import { isSqlInboxError } from "@sqlinbox/core/internal";
import type { SlotPlace } from "@sqlinbox/kysely-dialects";
import type { Database } from "../../drivers/database.js";
import { slotTableMissing } from "../../errors.js";
import type { ErrorPlace } from "@sqlinbox/core/internal";

/** The slot names of one subscription's limits in `sqlinbox_slots`. */
export function slotPlace(kind: "rate" | "cap", spec: { readonly table: string; readonly schema?: string | undefined }, subscription: string): SlotPlace {
  return { schema: spec.schema, name: `${kind}:${spec.table}:${subscription}` };
}

/**
 * Inserts a limit's missing slots at startup. A missing slot table is a `Schema` error that names
 * it and says how to create it.
 */
export async function ensureSlots(database: Database, place: SlotPlace, count: number, errorPlace: ErrorPlace): Promise<void> {
  try {
    await database.execute("schema", database.dialect.flow.ensureSlots(place, count));
  } catch (error) {
    const cause = isSqlInboxError(error, "Schema") ? error.cause : error;
    if (database.dialect.missingTable(cause)) {
      const table = place.schema === undefined ? database.dialect.flow.slotTable : `${place.schema}.${database.dialect.flow.slotTable}`;
      throw slotTableMissing(table, cause, errorPlace);
    }
    throw error;
  }
}

/**
 * One rate limit's slots: `max` of them, each holding the time of the last start it admitted. A
 * start takes a slot whose last start is `perMs` old or older, so two starts through one slot are
 * at least `perMs` apart and any window of `perMs` holds at most `max` starts.
 *
 * A taken slot is first stamped a reservation (`now + perMs`: no one takes it before its start is
 * stamped), then, once the rows it admitted were handed to their handlers, the time after that
 * hand-over (never before a start it admitted); a slot whose claim found no row is stamped 0.
 */
export class RateSlots {
  readonly #database: Database;
  readonly #place: SlotPlace;
  readonly #max: number;
  readonly #perMs: number;

  constructor(database: Database, place: SlotPlace, limit: { readonly max: number; readonly perMs: number }) {
    this.#database = database;
    this.#place = place;
    this.#max = limit.max;
    this.#perMs = limit.perMs;
  }

  /** Takes up to `take` free slots at `now` (ms), reserving them; returns the slots taken and the reservation. */
  async take(take: number, now: number): Promise<{ slots: number[]; reserve: number }> {
    const { flow } = this.#database.dialect;
    const reserve = now + this.#perMs;
    const pick = { max: this.#max, take: Math.min(take, this.#max), freeBefore: now - this.#perMs };
    let rows: readonly { slot: unknown }[];
    if (this.#database.dialect.capabilities.updateReturning) rows = (await this.#database.execute("claim", flow.takeRateSlots(this.#place, pick, reserve))).rows;
    else {
      // MySQL/MariaDB: lock the free slots, then stamp them, in one short transaction.
      rows = await this.#database.transaction("claim", async (trx) => {
        const free = (await this.#database.execute("claim", flow.selectRateSlots(this.#place, pick), trx)).rows;
        if (free.length > 0) await this.#database.execute("claim", flow.stampSlots(this.#place, free.map(slotOf), reserve), trx);
        return free;
      });
    }
    return { slots: rows.map(slotOf), reserve };
  }

  /** Stamps the slots that admitted a start with `startedBy` (a time at or after those starts), and frees the others. */
  async settle(used: readonly number[], unused: readonly number[], reserve: number, startedBy: number): Promise<void> {
    const { flow } = this.#database.dialect;
    if (used.length > 0) await this.#database.execute("claim", flow.stampSlots(this.#place, used, startedBy, reserve));
    if (unused.length > 0) await this.#database.execute("claim", flow.stampSlots(this.#place, unused, 0, reserve));
  }

  /** Milliseconds from `now` until the window frees a slot (at least 1). */
  async msUntilFree(now: number): Promise<number> {
    const row = (await this.#database.execute("claim", this.#database.dialect.flow.oldestStart(this.#place, this.#max))).rows[0];
    const oldest = Number(row?.oldest ?? 0);
    return Math.max(1, oldest + this.#perMs - now);
  }
}

function slotOf(row: { slot: unknown }): number {
  return Number(row.slot);
}
