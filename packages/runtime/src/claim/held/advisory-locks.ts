import type { AdvisoryStatements, RawRow } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery } from "kysely";
import type { StatementKind } from "../../drivers/database.js";
import type { CapSlots, ClaimSetup } from "../claim-strategy.js";
import type { CapPlace, CapRun, MaxInWork } from "../cap/max-in-work.js";
import { SlotLocks } from "../cap/slot-locks.js";
import type { HeldConnection } from "./held-connection.js";
import { KeyRegistry } from "./key-registry.js";

/**
 * One advisory subscription's locks: its keys' session locks (or, where keys live in the process,
 * the database's registry), the database their names are prefixed with, and the take of a row
 * once its key is locked. `connection` is the row's own session, `undefined` where the process
 * holds the keys (SQLite: no session of its own).
 */
export class AdvisoryLocks {
  readonly #setup: ClaimSetup;
  readonly #statements: AdvisoryStatements;
  /** The keys in work: this claim's own registry where locks live in the session (it spares a connection), else the database's (it is the lock). */
  readonly keys: KeyRegistry;
  readonly sessionLocks: boolean;
  #lockDatabase: Promise<string> | undefined;

  constructor(setup: ClaimSetup) {
    this.#setup = setup;
    this.#statements = setup.database.dialect.advisory;
    this.sessionLocks = setup.database.dialect.capabilities.advisoryLocks === "session";
    // Session locks already keep processes and pools apart: the registry only spares this
    // subscription a connection. Without them (SQLite) it is the lock, shared by the database's subscriptions.
    this.keys = this.sessionLocks ? new KeyRegistry() : setup.keys;
  }

  /** `maxInWork`'s slot locks, on the row's session or counted in this process (`SlotLocks`). */
  capOf(slots: CapSlots): SlotLocks {
    const where = this.sessionLocks ? { session: this.#statements, lockDatabase: () => this.lockDatabase() } : { process: this.#setup.keys };
    return new SlotLocks(slots.n, slots.place, where);
  }

  /** Runs statements of `kind` on the row's session (on the pool where there is none: nothing a process-held lock runs). */
  run(kind: StatementKind, connection: HeldConnection | undefined): CapRun {
    return (query) => this.#setup.database.execute(kind, query, connection);
  }

  /**
   * Locks the key on `connection` and takes the row (attempt + 1, committed): the row as the take
   * counted it, read back by the take itself (`RETURNING`) or on the session that holds the key.
   */
  async take(candidate: RawRow, key: string, connection: HeldConnection | undefined): Promise<RawRow | "held elsewhere" | "gone"> {
    const { database, spec, clock } = this.#setup;
    // A connection of its own is held where keys are locked in the session (none where the process holds them: SQLite).
    if (connection !== undefined) {
      const lock = this.#statements.tryLock(key, await this.lockDatabase());
      if (Number((await database.execute("claim", lock, connection)).rows[0]?.locked ?? 0) !== 1) return "held elsewhere";
    }
    const id = candidate[spec.id.name];
    const taken = await database.execute("claim", this.#statements.take(spec, id, clock.now()), connection);
    // Zero rows: finished by another session between the candidate read and the lock.
    if (this.#statements.takeReturnsRow) return taken.rows[0] ?? "gone";
    if (Number(taken.numAffectedRows ?? 0n) === 0) return "gone";
    // The key's lock keeps every other take off the row: this read sees what this take counted.
    return (await database.execute("claim", this.#statements.readTaken(spec, id), connection)).rows[0] ?? "gone";
  }

  /** Releases the key's lock (and the cap slot) and gives the connection back; true when the session still held the lock. */
  async unlock(connection: HeldConnection | undefined, key: string, cap: MaxInWork | undefined, slot: CapPlace | undefined): Promise<boolean> {
    const slots = slot === undefined || cap === undefined ? [] : [slot];
    // Uncapped deliveries hold no slot: no statement and no await for one.
    if (connection === undefined) {
      if (slots.length > 0) await cap?.release(this.run("settle", undefined), slots);
      return true;
    }
    try {
      if (slots.length > 0) await cap?.release(this.run("settle", connection), slots);
      const unlock = this.#statements.unlock(key, await this.lockDatabase());
      const result = await this.#setup.database.execute("settle", unlock as CompiledQuery<Record<string, unknown>>, connection);
      const row = result.rows[0];
      return row !== undefined && Number(Object.values(row)[0]) === 1;
    } finally {
      connection.release();
    }
  }

  /** The round's spare connection goes back to the pool, its cap slot unlocked first. */
  async dropSpare(spare: HeldConnection | undefined, cap: MaxInWork | undefined, slot: CapPlace | undefined): Promise<void> {
    try {
      if (slot !== undefined && cap !== undefined) await cap.release(this.run("settle", spare), [slot]);
    } finally {
      spare?.release();
    }
  }

  /** The lock names' database: the table's own (its schema) when named, so every process agrees on it, else the connection's (MySQL's user locks are server-wide). */
  lockDatabase(): Promise<string> {
    const { database, spec } = this.#setup;
    if (spec.schema !== undefined) return Promise.resolve(spec.schema);
    if (this.#lockDatabase !== undefined) return this.#lockDatabase;
    const name = database.execute("claim", database.dialect.schema.currentDatabase()).then((r) => String(r.rows[0]?.name ?? ""));
    this.#lockDatabase = name;
    // A read that failed (a lost connection) is read again next time, not remembered.
    name.catch(() => {
      if (this.#lockDatabase === name) this.#lockDatabase = undefined;
    });
    return name;
  }
}
