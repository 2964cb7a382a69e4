import type { AdvisoryStatements, RawRow } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery } from "kysely";
import type { AnyTransaction, OwnStatementSession, StatementKind } from "../../drivers/database.js";
import { type CapSlots, type ClaimSetup, groupOf, type StatementRunner } from "../claim-strategy.js";
import type { CapPlace, CapRun, MaxInWork } from "../cap/max-in-work.js";
import { SlotLocks } from "../cap/slot-locks.js";
import { SessionTransaction } from "./claim-transaction.js";
import type { HeldConnection } from "./held-connection.js";
import type { KeySession } from "./key-session.js";
import { KeyRegistry } from "./key-registry.js";

/** What an advisory delivery holds: its key's lock, on its own session where locks are per session. */
export interface KeyHold {
  readonly key: string;
  readonly connection: HeldConnection | undefined;
  /** A batch claim's session, which the rows of the batch share (`connection` is its connection). */
  readonly session?: KeySession | undefined;
  /** The `maxInWork` slot the delivery holds (a slot lock on its session, or a place counted in this process). */
  readonly slot?: CapPlace | undefined;
}

/** Keys one lock statement names at most (one column each; the settlements' unlocks are bounded by `MAX_ACKS_PER_STATEMENT`, 512). */
const KEYS_PER_STATEMENT = 512;

/** A candidate row of a batch claim and its key. */
export interface Candidate {
  readonly row: RawRow;
  readonly key: string;
}

/** A lock function's answer: taken (or held, for an unlock) reads true on Postgres and 1 on MySQL/MariaDB; 0, false or NULL otherwise. */
function taken(answer: unknown): boolean {
  return answer === true || Number(answer) === 1;
}

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
    const taken = await database.execute("claim", this.#statements.take(spec, id, clock.now(), groupOf(this.#setup).group), connection);
    // Zero rows: finished by another session between the candidate read and the lock.
    if (this.#statements.takeReturnsRow) return taken.rows[0] ?? "gone";
    if (Number(taken.numAffectedRows ?? 0n) === 0) return "gone";
    // The key's lock keeps every other take off the row: this read sees what this take counted.
    return (await database.execute("claim", this.#statements.readTaken(spec, id), connection)).rows[0] ?? "gone";
  }

  /**
   * A batch claim's take, on one session (`connection`): tries every candidate's key in one
   * statement, takes the rows whose key it locked in one more — the attempts counted, the rows
   * returned as counted, or read back on this session where the take returns nothing — and unlocks
   * the keys of rows found gone in a third (rare: finished since the candidates were read). The
   * candidates' keys are distinct (one row per key). One answer per candidate, in order.
   */
  async takeMany(candidates: readonly Candidate[], connection: HeldConnection): Promise<(RawRow | "held elsewhere" | "gone")[]> {
    const { database, spec, clock } = this.#setup;
    const lockDatabase = await this.lockDatabase();
    const answers: (RawRow | "held elsewhere" | "gone")[] = [];
    // One column per key: a claim of more keys than a select list holds (Postgres: 1,664) tries them in chunks.
    for (let at = 0; at < candidates.length; at += KEYS_PER_STATEMENT) {
      const chunk = candidates.slice(at, at + KEYS_PER_STATEMENT);
      const tried =
        (
          await database.execute(
            "claim",
            this.#statements.tryLockMany(
              chunk.map((c) => c.key),
              lockDatabase,
            ),
            connection,
          )
        ).rows[0] ?? {};
      for (let i = 0; i < chunk.length; i++) answers.push(taken(tried[String(i)]) ? "gone" : "held elsewhere");
    }
    const ids = candidates.flatMap((c, i) => (answers[i] === "gone" ? [c.row[spec.id.name]] : []));
    if (ids.length === 0) return answers;
    const now = clock.now();
    const { group } = groupOf(this.#setup);
    const take = await database.execute("claim", this.#statements.takeMany(spec, ids, now, group), connection);
    // The keys' locks keep every other take off these rows: the read sees what this take counted.
    const rows = this.#statements.takeReturnsRow
      ? take.rows
      : Number(take.numAffectedRows ?? 0n) === 0
        ? []
        : (await database.execute("claim", this.#statements.readTakenMany(spec, ids, now, group), connection)).rows;
    const byId = new Map(rows.map((row) => [String(row[spec.id.name]), row]));
    candidates.forEach((c, i) => {
      if (answers[i] === "gone") answers[i] = byId.get(String(c.row[spec.id.name])) ?? "gone";
    });
    const gone = candidates.flatMap((c, i) => (answers[i] === "gone" ? [c.key] : []));
    for (let at = 0; at < gone.length; at += KEYS_PER_STATEMENT)
      await database.execute("claim", this.#statements.unlockMany(gone.slice(at, at + KEYS_PER_STATEMENT), lockDatabase), connection);
    return answers;
  }

  /** Unlocks `keys` on `connection` in one statement: for each, whether the session still held it. */
  async unlockMany(keys: readonly string[], connection: HeldConnection): Promise<boolean[]> {
    const lockDatabase = await this.lockDatabase();
    const held: boolean[] = [];
    for (let at = 0; at < keys.length; at += KEYS_PER_STATEMENT) {
      const chunk = keys.slice(at, at + KEYS_PER_STATEMENT);
      const row = (await this.#setup.database.execute("settle", this.#statements.unlockMany(chunk, lockDatabase), connection)).rows[0] ?? {};
      for (let i = 0; i < chunk.length; i++) held.push(taken(row[String(i)]));
    }
    return held;
  }

  /**
   * A settlement's statements on the row's session; a move is two statements: one transaction on that session.
   * `followUp` (a workflow step's release) runs its statements in that transaction too.
   */
  async writeOn(connection: HeldConnection | undefined, queries: readonly CompiledQuery[], followUp?: (run: StatementRunner) => Promise<void>): Promise<void> {
    const { database } = this.#setup;
    if (queries.length === 1 && followUp === undefined) await database.execute("settle", queries[0] as CompiledQuery, connection);
    else if (queries.length > 1 || followUp !== undefined) {
      const move = async (trx: OwnStatementSession | AnyTransaction) => {
        for (const query of queries) await database.execute("settle", query, trx);
        if (followUp !== undefined) await followUp((query) => database.execute("settle", query, trx));
      };
      // SQLite holds no session of its own: the pool's one connection carries the move.
      await (connection === undefined ? database.db.transaction().execute(move) : SessionTransaction.within(connection, database.dialect.transaction, move));
    }
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
