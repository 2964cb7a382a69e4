import type { TransactionStatements } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery, ControlledTransaction, QueryResult } from "kysely";
import { ownStatementsOn, type AnyKysely } from "../../drivers/database.js";
import { holdConnection, type HeldConnection } from "./held-connection.js";

// biome-ignore lint/suspicious/noExplicitAny: compiled queries run on any database interface
export type KyselyTransaction = ControlledTransaction<any>;

/**
 * A row-lock claim's transaction, from its BEGIN to its COMMIT or ROLLBACK, on the one pool
 * connection it holds. Once ended it refuses statements: its connection may already serve
 * someone else.
 */
export interface ClaimTransaction {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
  /** Commits and gives the connection back; a failed commit rolls back (quietly) and gives it back too. */
  commit(): Promise<void>;
  /** Rolls back and gives the connection back, even when the rollback fails; nothing once ended. */
  rollback(): Promise<void>;
  readonly isRolledBack: boolean;
  readonly isCommitted: boolean;
  /**
   * A statement to run just before the transaction ends, commit or rollback: what gives back locks
   * that belong to the session, not the transaction (order keys on MySQL/MariaDB), so its
   * connection goes back to the pool holding none. Once is enough: later calls change nothing.
   */
  releaseBeforeEnd(query: CompiledQuery): void;
  /** Kysely's own transaction, for a transactional handler (its `ctx.tx` is a savepoint in it); `undefined` otherwise. */
  readonly kysely: KyselyTransaction | undefined;
}

type State = "active" | "committed" | "rolled back";

/**
 * A claim transaction run as statements on a pool connection: what a delivery whose handler
 * writes through no transaction of its own holds. Kysely's `startTransaction()` builds a
 * `Kysely` per transaction (executor, connection provider, a frozen copy of its settings) and
 * a command per commit: in a profile of Postgres row lock `b1-w8`, Kysely's frames took about
 * 22 µs of client CPU per delivery, 6 with this, of about 260 in all (most of it socket writes).
 * The statements sent are the same as Kysely's drivers send (`begin` after a `set transaction
 * isolation level` where the claim asks for one).
 */
export class SessionTransaction implements ClaimTransaction {
  readonly kysely = undefined;
  /** What `Database.execute` reads: a statement failing in here is not retried alone. */
  readonly isTransaction = true;
  readonly #connection: HeldConnection;
  readonly #statements: TransactionStatements;
  /** The transaction took its connection from the pool, and gives it back when it ends. */
  readonly #givesBack: boolean;
  #state: State = "active";
  #release: CompiledQuery | undefined;

  private constructor(connection: HeldConnection, statements: TransactionStatements, givesBack: boolean) {
    this.#connection = connection;
    this.#statements = statements;
    this.#givesBack = givesBack;
  }

  /**
   * Takes a connection from the pool and runs `begin` on it; the connection goes back when the
   * transaction ends. A failed `begin` gives it back (the pool's session guard closes one whose
   * statement failed) and rejects.
   */
  static async begin(db: AnyKysely, statements: TransactionStatements): Promise<SessionTransaction> {
    const connection = await holdConnection(db);
    try {
      return await SessionTransaction.on(connection, statements, true);
    } catch (error) {
      connection.release();
      throw error;
    }
  }

  /** Runs `begin` on a connection already held (an advisory delivery's session); `givesBack`: its end releases it. */
  static async on(connection: HeldConnection, statements: TransactionStatements, givesBack = false): Promise<SessionTransaction> {
    for (const query of statements.begin) await connection.executeQuery(query);
    return new SessionTransaction(connection, statements, givesBack);
  }

  /**
   * Runs `work` in a transaction on a connection already held (an advisory delivery's session):
   * committed when it returns, rolled back (quietly) when it throws; the connection stays held.
   */
  static async within<T>(connection: HeldConnection, statements: TransactionStatements, work: (trx: SessionTransaction) => Promise<T>): Promise<T> {
    const trx = await SessionTransaction.on(connection, statements);
    try {
      const result = await work(trx);
      await trx.commit();
      return result;
    } catch (error) {
      await trx.rollback().catch(() => undefined);
      throw error;
    }
  }

  get isRolledBack(): boolean {
    return this.#state === "rolled back";
  }

  get isCommitted(): boolean {
    return this.#state === "committed";
  }

  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> {
    if (this.#state !== "active") return Promise.reject(new Error(`the claim's transaction is already ${this.#state}`));
    return this.#connection.executeQuery(query);
  }

  releaseBeforeEnd(query: CompiledQuery): void {
    this.#release ??= query;
  }

  async commit(): Promise<void> {
    if (this.#state !== "active") throw new Error(`the claim's transaction is already ${this.#state}`);
    try {
      // A failed release fails the commit: the statement failed, so the pool closes the session (and its locks).
      if (this.#release !== undefined) await this.#connection.executeQuery(this.#release);
      await this.#connection.executeQuery(this.#statements.commit);
      this.#state = "committed";
    } catch (error) {
      // Whatever the server made of it, this session is not reused with the transaction open.
      this.#state = "rolled back";
      await this.#connection.executeQuery(this.#statements.rollback).catch(() => undefined);
      throw error;
    } finally {
      if (this.#givesBack) this.#connection.release();
    }
  }

  async rollback(): Promise<void> {
    if (this.#state !== "active") return;
    this.#state = "rolled back";
    try {
      if (this.#release !== undefined) await this.#connection.executeQuery(this.#release).catch(() => undefined);
      await this.#connection.executeQuery(this.#statements.rollback);
    } finally {
      if (this.#givesBack) this.#connection.release();
    }
  }
}

/**
 * A claim transaction that is Kysely's own (`startTransaction()`): a transactional handler's
 * savepoint needs one. Begun on the app's Kysely, so the handler's `ctx.tx` keeps its plugins;
 * the claim's own statements run without them.
 */
export class KyselyClaimTransaction implements ClaimTransaction {
  readonly kysely: KyselyTransaction;
  readonly #own: KyselyTransaction;
  #release: CompiledQuery | undefined;

  constructor(trx: KyselyTransaction) {
    this.kysely = trx;
    this.#own = ownStatementsOn(trx);
  }

  static async begin(db: AnyKysely, isolation: "read committed" | undefined): Promise<KyselyClaimTransaction> {
    const builder = db.startTransaction();
    return new KyselyClaimTransaction(await (isolation ? builder.setIsolationLevel(isolation) : builder).execute());
  }

  get isRolledBack(): boolean {
    return this.kysely.isRolledBack;
  }

  get isCommitted(): boolean {
    return this.kysely.isCommitted;
  }

  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> {
    return this.#own.executeQuery(query);
  }

  releaseBeforeEnd(query: CompiledQuery): void {
    this.#release ??= query;
  }

  async commit(): Promise<void> {
    try {
      if (this.#release !== undefined) await this.#own.executeQuery(this.#release);
      await this.kysely.commit().execute();
    } catch (error) {
      // Kysely keeps the connection after a failed commit (unless the server aborted it): roll back to give it back.
      if (!this.kysely.isRolledBack) await this.rollback().catch(() => undefined);
      throw error;
    }
  }

  async rollback(): Promise<void> {
    if (this.kysely.isCommitted || this.kysely.isRolledBack) return;
    if (this.#release !== undefined) await this.#own.executeQuery(this.#release).catch(() => undefined);
    await this.kysely.rollback().execute();
  }
}
