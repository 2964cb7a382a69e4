import type { ClaimForm, InboxDescription } from "@sqlinbox/core/internal";
import { advisoryKeyOf, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { Database } from "../../drivers/database.js";
import type { KeyRegistry } from "./key-registry.js";

/**
 * How a form shows, to a reader outside the delivery, that a due row is in work: a live lease is
 * written in the row (read with it, nothing more to ask); a row lock is held by the claim's open
 * transaction (a `SKIP LOCKED` probe finds it); an advisory key is held by a session (the server's
 * lock table), or on SQLite by this process's key registry, which no other process sees.
 */
const HOLDS: { readonly [F in ClaimForm]: "in the row" | "row lock" | "advisory key" } = Object.freeze({
  lease: "in the row",
  rowLock: "row lock",
  advisory: "advisory key",
});

/** What a hold probe reads beside the row. */
export interface HoldPlace {
  readonly spec: InboxDescription;
  readonly id: unknown;
  readonly database: Database;
  /** The advisory keys in work in this process: where keys live in the process (SQLite), the lock itself. */
  readonly keys: KeyRegistry;
  /** The lock names' database (MySQL's `GET_LOCK` names). */
  readonly lockDatabase: () => Promise<string>;
}

/**
 * Whether the due row `row` is held in work by its form outside the row: `"free"` for the lease form
 * (its lease was read with the row); `"gone"` when a row-lock probe found the row deleted since.
 * A row lock's claim counts the attempt in its open transaction, so the row reads one attempt
 * behind its delivery (`"held, count uncommitted"`). An advisory key held may be held by another
 * row of the same key, which this row waits behind.
 */
export async function heldOutsideRow(place: HoldPlace, row: RawRow): Promise<"free" | "held" | "held, count uncommitted" | "gone"> {
  const { spec, database } = place;
  const { capabilities, jobs } = database.dialect;
  switch (HOLDS[spec.form]) {
    case "in the row":
      return "free";
    case "row lock": {
      if ((await database.execute("observe", jobs.lockProbe(spec, place.id))).rows.length > 0) return "free";
      // Not lockable: held by a transaction, or deleted since the first read.
      return (await database.execute("observe", jobs.read(spec, place.id))).rows.length > 0 ? "held, count uncommitted" : "gone";
    }
    case "advisory key": {
      const key = advisoryKeyOf(spec, row);
      const held =
        capabilities.advisoryLocks === "process" ? place.keys.has(key) : (await database.execute("observe", jobs.keyHeld(key, await place.lockDatabase()))).rows.length > 0;
      return held ? "held" : "free";
    }
  }
}

/** Whether the form shows in the row itself that a row is in work (a lease): then a list reads `running` as SQL over the row's columns. */
export function holdsInRow(spec: InboxDescription): boolean {
  return HOLDS[spec.form] === "in the row";
}

/**
 * `heldOutsideRow` for a page of due rows at once: one `SKIP LOCKED` probe of their ids, a second
 * of the ones it passed over (another probe's momentary lock is gone by then, a claim's is not),
 * then a read of those still passed over, to tell held from deleted, on the row-lock form; one lookup of
 * their keys on the advisory form. The answers are in the rows' order.
 */
export async function heldOutsideRows(place: Omit<HoldPlace, "id">, rows: readonly RawRow[]): Promise<Array<"free" | "held" | "held, count uncommitted" | "gone">> {
  const { spec, database } = place;
  const { capabilities, jobs } = database.dialect;
  if (rows.length === 0) return [];
  const ids = rows.map((row) => row[spec.id.name]);
  switch (HOLDS[spec.form]) {
    case "in the row":
      return rows.map(() => "free");
    case "row lock": {
      const probe = async (of: readonly unknown[]) => (await database.execute("observe", jobs.lockProbeMany(spec, of))).rows.map((r) => String(r.id));
      const free = new Set(await probe(ids));
      // A probe holds its rows for its statement, so another probe (a list, a state()) may have been passing: ask the held ones again.
      const passedOver = ids.filter((id) => !free.has(String(id)));
      if (passedOver.length > 0) for (const id of await probe(passedOver)) free.add(id);
      return Promise.all(
        ids.map(async (id) => {
          if (free.has(String(id))) return "free" as const;
          return (await database.execute("observe", jobs.read(spec, id))).rows.length > 0 ? ("held, count uncommitted" as const) : ("gone" as const);
        }),
      );
    }
    case "advisory key": {
      const keys = rows.map((row) => advisoryKeyOf(spec, row));
      const held =
        capabilities.advisoryLocks === "process"
          ? new Set(keys.filter((key) => place.keys.has(key)))
          : new Set((await database.execute("observe", jobs.keysHeld([...new Set(keys)], await place.lockDatabase()))).rows.map((r) => r.key));
      return keys.map((key) => (held.has(key) ? "held" : "free"));
    }
  }
}
