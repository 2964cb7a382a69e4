import { endsTransaction } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, DatabaseConnection, QueryResult } from "kysely";
import type { AnyKysely } from "../drivers/database.js";

/** How a transaction's last statement ended: its COMMIT or ROLLBACK completed (or failed). */
type EndListener = () => void;

/** The listeners of each connection whose `executeQuery` is wrapped, and how to unwrap it. */
const hooked = new WeakMap<DatabaseConnection, { readonly listeners: Set<EndListener>; readonly unwrap: () => void }>();

/**
 * Calls `ended` as soon as the COMMIT or ROLLBACK of the transaction `via` has completed on its
 * connection (answered by the server, or failed): the moment its rows become visible to other
 * sessions, or never will. Kysely offers no commit hook; every driver of its own ends a
 * transaction with one raw statement on the connection's `executeQuery` (for
 * `transaction().execute(…)` and a `ControlledTransaction`'s `commit()` alike), which
 * kysely-dialects' `endsTransaction` recognizes, so the connection's `executeQuery` is wrapped for as long as a listener waits, as Kysely's own query
 * log wraps it. The caller reads the transaction's state after `ended` (Kysely records it a few
 * turns later). Returns the removal of the listener, or `undefined` when the connection could not
 * be reached at once (a statement of the caller's still runs on it): the caller falls back to
 * looking at the transaction.
 */
export function onTransactionEnd(via: AnyKysely, ended: EndListener): (() => void) | undefined {
  let connection: DatabaseConnection | undefined;
  try {
    // A transaction lends its one connection at once when no statement runs on it (the callback runs synchronously).
    void via
      .getExecutor()
      .provideConnection(async (c) => {
        connection = c;
      })
      .catch(() => undefined);
  } catch {
    return undefined;
  }
  if (connection === undefined || typeof connection.executeQuery !== "function") return undefined;
  const hook = hooked.get(connection) ?? wrap(connection);
  hook.listeners.add(ended);
  return () => {
    hook.listeners.delete(ended);
    if (hook.listeners.size === 0) hook.unwrap();
  };
}

/** Wraps `connection.executeQuery` so that an end statement's completion calls the listeners once. */
function wrap(connection: DatabaseConnection): { readonly listeners: Set<EndListener>; readonly unwrap: () => void } {
  const listeners = new Set<EndListener>();
  const own = Object.hasOwn(connection, "executeQuery");
  const original = connection.executeQuery;
  const wrapped = async <R>(compiled: CompiledQuery): Promise<QueryResult<R>> => {
    if (!endsTransaction(compiled)) return original.call(connection, compiled) as Promise<QueryResult<R>>;
    try {
      return (await original.call(connection, compiled)) as QueryResult<R>;
    } finally {
      const waiting = [...listeners];
      unwrap();
      for (const listener of waiting) listener();
    }
  };
  const unwrap = (): void => {
    listeners.clear();
    if (hooked.get(connection) !== hook) return;
    hooked.delete(connection);
    // Only our own wrapper is taken off: a wrapper put on after ours stays, and keeps calling ours (which passes through).
    if (connection.executeQuery !== wrapped) return;
    if (own) connection.executeQuery = original;
    else delete (connection as { executeQuery?: unknown }).executeQuery;
  };
  const hook = { listeners, unwrap };
  connection.executeQuery = wrapped;
  hooked.set(connection, hook);
  return hook;
}
