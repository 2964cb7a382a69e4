import { ownStatementsOn, type AnyKysely, type OwnStatementSession } from "../../drivers/database.js";

/** One pool connection kept for a delivery until `release`; statements through it run on that session, without the app's plugins. */
export interface HeldConnection extends OwnStatementSession {
  /**
   * A Kysely bound to this one connection, the app's plugins and all, where a transactional
   * handler's transaction opens on it (`holdConnection(db, true)`); `undefined` otherwise.
   */
  readonly kysely: AnyKysely | undefined;
  release(): void;
}

/**
 * Takes a connection out of the pool and keeps it until `release()` — what a session lock (an
 * advisory lock) and a transaction of the runtime's own need. Kysely provides a connection for
 * the length of a callback; the callback here waits for the release.
 *
 * Without `withKysely` the statements go to the driver's connection as they are: Kysely's
 * `connection()` builds a `Kysely` for every hold (an executor, a connection provider, a frozen
 * copy of its settings), which only a transactional handler's `ctx.tx` needs. A statement after
 * the release is refused: the connection may already serve someone else.
 */
export function holdConnection(db: AnyKysely, withKysely = false): Promise<HeldConnection> {
  return new Promise((resolve, reject) => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = false;
    const hold = (session: OwnStatementSession, kysely: AnyKysely | undefined): Promise<void> => {
      held = true;
      let ended = false;
      resolve({
        kysely,
        executeQuery: (query) => (ended ? Promise.reject(new Error("the connection was given back to the pool")) : session.executeQuery(query)),
        release: () => {
          ended = true;
          release();
        },
      });
      return released;
    };
    const holding = withKysely
      ? db.connection().execute((connection) => hold(ownStatementsOn(connection), connection))
      : db.getExecutor().provideConnection((connection) => hold(connection, undefined));
    holding.catch((error: unknown) => {
      if (!held) reject(error);
    });
  });
}
