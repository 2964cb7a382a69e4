import type { PostgresPool } from "kysely";
import { guardPgClient, type PgClient } from "./session-guard.js";
import { StatementNames } from "./statement-names.js";

/** The part of a `pg` pool Kysely's `PostgresDialect` uses. */
export interface PgPoolLike {
  connect(): Promise<unknown>;
  end(): Promise<void>;
}

/**
 * A `pg` pool for `new PostgresDialect({ pool })` whose sessions run the statements the pool repeats as
 * named prepared statements, as a broker made from a URL does (`StatementNames`); for an application
 * that gives sqlinbox its own Kysely. A session whose statement failed is closed when it is given back,
 * not pooled again: that is how a named statement a table change made stale ("cached plan must not
 * change result type", one failed run) leaves with its session.
 */
export function withPreparedStatements(pool: PgPoolLike): PostgresPool {
  const names = new StatementNames();
  const named = {
    connect: async () => guardPgClient((await pool.connect()) as PgClient, names),
    end: () => pool.end(),
  };
  // The guarded client has every method Kysely calls, with `pg`'s own signatures.
  return named as unknown as PostgresPool;
}
