/**
 * A pool connection whose statement failed is closed when it is given back, never pooled
 * again: its session may still hold what the failed statement was meant to end (an advisory
 * lock whose unlock was not confirmed, a lock taken just before an error mid-claim), and a
 * session ended by the server is of no use anyway. The cost is one reconnect after an error.
 */
import type { StatementNames } from "./statement-names.js";

/** The part of a `pg` pool client Kysely uses. */
export interface PgClient {
  query(...args: unknown[]): unknown;
  release(destroy?: boolean | Error): void;
}

/** The part of a `mysql2` pool connection Kysely uses. */
export interface MysqlConnection {
  query(...args: unknown[]): unknown;
  release(): void;
  destroy(): void;
}

const isThenable = (value: unknown): value is PromiseLike<unknown> => value !== null && typeof value === "object" && typeof (value as { then?: unknown }).then === "function";

const pgGuards = new WeakMap<PgClient, PgClient>();

/**
 * The `pg` client as Kysely sees it: released after a failed query, it is destroyed. With `names`,
 * a statement the pool repeats runs as a named prepared statement (`StatementNames`).
 */
export function guardPgClient(client: PgClient, names?: StatementNames): PgClient {
  const known = pgGuards.get(client);
  if (known !== undefined) return known;
  let failed = false;
  const guarded: PgClient = {
    query: (...args) => {
      const [text, values] = args;
      const name = names !== undefined && typeof text === "string" && Array.isArray(values) ? names.nameOf(text, values.length) : undefined;
      const result = name === undefined ? client.query(...args) : client.query({ name, text, values });
      if (isThenable(result))
        result.then(undefined, (error: unknown) => {
          failed = true;
          names?.failed(error);
        });
      return result;
    },
    release: (destroy) => {
      const close = failed || Boolean(destroy);
      failed = false;
      if (close) pgGuards.delete(client);
      client.release(close ? true : undefined);
    },
  };
  pgGuards.set(client, guarded);
  return guarded;
}

const mysqlGuards = new WeakMap<MysqlConnection, MysqlConnection>();

/** The `mysql2` connection as Kysely sees it: released after a failed query, it is destroyed. */
export function guardMysqlConnection(connection: MysqlConnection): MysqlConnection {
  const known = mysqlGuards.get(connection);
  if (known !== undefined) return known;
  let failed = false;
  const guarded: MysqlConnection = {
    query: (...args) => {
      const last = args[args.length - 1];
      if (typeof last === "function") {
        const callback = last as (error: unknown, ...rest: unknown[]) => void;
        args[args.length - 1] = (error: unknown, ...rest: unknown[]) => {
          if (error) failed = true;
          callback(error, ...rest);
        };
      }
      return connection.query(...args);
    },
    release: () => {
      if (!failed) return connection.release();
      mysqlGuards.delete(connection);
      connection.destroy();
    },
    destroy: () => {
      mysqlGuards.delete(connection);
      connection.destroy();
    },
  };
  mysqlGuards.set(connection, guarded);
  return guarded;
}
