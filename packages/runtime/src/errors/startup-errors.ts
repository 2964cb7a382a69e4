import { SqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";
import { causeMessage } from "./cause-message.js";

/** What refuses a start: an engine, a pooler or a cluster a form cannot run on, a pool too small, a skewed clock, a database out of reach. */

// Engines, forms, poolers and clusters.

/** A row-lock table on an engine without row locks, refused before anything connects. */
export function rowLockTableUnsupported(engine: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `a row-lock table on ${engine}, which has no row locks: give the table a lease column (.lease(column("locked_until"))) or an advisory key (.advisoryLock("…"))`,
    place,
  );
}

/** The row-lock claim built on a dialect without row-lock statements. */
export function noRowLocks(engine: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("UnsupportedForm", `${engine} has no row locks: give the table a lease column or an advisory key`, place);
}

export function listenNeedsPostgres(engine: string, label: string): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `listenNotify() needs Postgres (LISTEN/NOTIFY), and this broker is on ${engine} (${label}): drop .listenNotify(); other processes see a publish at their next poll`,
  );
}

/** A form that keeps a session across transactions (`holdsSessionAcrossTransactions`) through a pooler in transaction mode. */
export function formThroughTransactionPooler(form: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `the ${form} form holds its lock on a database session across transactions, and this broker goes through a pooler in transaction mode (pooler: "transaction"), which hands each transaction to any server session: give the table a lease column, or connect this broker directly or through a pooler in session mode`,
    place,
  );
}

/** A form whose exclusivity is a lock (`exclusiveByLock`) on a node of a multi-primary cluster. */
export function formOnMultiPrimaryCluster(form: string, cluster: { readonly kind: string; readonly nodes: number }, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `the ${form} form rests on a lock the server holds, and this server is a node of a ${cluster.kind} cluster (wsrep_on, ${cluster.nodes} nodes), where such a lock is the node's own until commit: a worker on another node can take the same row. Give the table a lease column (a lease is a committed write, certified across the nodes)`,
    place,
  );
}

export function listenThroughTransactionPooler(label: string): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `listenNotify() needs LISTEN on a session of its own for the app's life, and this broker goes through a pooler in transaction mode (pooler: "transaction", ${label}), which hands each transaction to any server session: drop .listenNotify() (other processes see a publish at their next poll), or connect this broker directly or through a pooler in session mode`,
  );
}

export function listenNeedsOwnPool(label: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `listenNotify() needs a connection of its own: build the broker with SqlBroker.fromUrl, or give SqlBroker.fromKysely(db, { listen }) a pg client factory or pool; this broker is ${label}`,
  );
}

export function schemaUnsupported(engine: string, schema: string, table: string): SqlInboxError {
  return new SqlInboxError("UnsupportedForm", `the table is described in schema "${schema}", and ${engine} has no schemas: describe it without one`, { table });
}

/** `extending`: the Kysely adapter of a known engine that `adapter` subclasses (CockroachDB's extends Postgres'). */
export function unknownKyselyDialect(adapter: string, extending?: string): SqlInboxError {
  const named = extending === undefined ? adapter : `${adapter}, a subclass of ${extending}`;
  const also = extending === undefined ? "" : ", and never runs another engine as the one it extends";
  return new SqlInboxError("UnsupportedForm", `a Kysely instance on an unknown dialect (${named}): sqlinbox runs on Postgres, MySQL/MariaDB and SQLite${also}`);
}

// Pools.

/** One subscription's share of the pool, as the `PoolTooSmall` message shows it. */
export interface PoolShare {
  readonly name: string;
  readonly form: string;
  readonly workers: number;
  readonly perDelivery: number;
  readonly total: number;
}

export function poolTooSmall(poolMax: number, shares: readonly PoolShare[], listenNotify: boolean, total: number): SqlInboxError {
  const arithmetic = [
    ...shares.map(
      (p) => `"${p.name}" (${p.form}, workers(${p.workers})): ${p.workers} x ${p.perDelivery} for deliveries in work + 1 for handlers, publishes and settlements = ${p.total}`,
    ),
    ...(listenNotify ? ["1 for listenNotify"] : []),
  ].join("; ");
  return new SqlInboxError(
    "PoolTooSmall",
    `the pool holds at most ${poolMax} connections, the subscriptions${listenNotify ? " and listenNotify" : ""} need ${total}: ${arithmetic}; total ${total} > pool max ${poolMax}: raise pool.max to ${total} or lower workers`,
  );
}

// Time.

/**
 * `leaseClock: "host"` and a host clock further from the database's than a quarter of the shortest
 * lease: both times, the skew, the lease and the two ways out.
 */
export function clockSkew(
  times: { readonly hostAt: number; readonly serverAt: number; readonly skewMs: number },
  leaseMs: number,
  database: string,
  place: ErrorPlace,
): SqlInboxError {
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const side = times.skewMs > 0 ? "ahead" : "behind";
  return new SqlInboxError(
    "ClockSkew",
    `the host's clock reads ${new Date(times.hostAt).toISOString()} and the database's (${database}) ${new Date(times.serverAt).toISOString()}: ` +
      `the host is ${seconds(Math.abs(times.skewMs))} ${side}, more than a quarter of the ${seconds(leaseMs)} lease (${seconds(leaseMs / 4)}) that leaseClock "host" tolerates: ` +
      `set the host's clock right (NTP), or leave leaseClock at "database" so that deadlines use the database's time`,
    place,
  );
}

// Connections.

/**
 * The database could not be reached when the broker opened its pool; `label` is the URL without its
 * password, and `redact` what the message may show of the driver's (a URL's secrets hidden).
 */
export function connectFailed(label: string, routes: readonly string[], cause: unknown, place: ErrorPlace, redact: (text: string) => string = (text) => text): SqlInboxError {
  const code = (cause as { code?: unknown } | null)?.code;
  const message = redact(causeMessage(cause));
  const why = typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message;
  const serving = routes.length > 0 ? ` for route${routes.length > 1 ? "s" : ""} ${routes.map((r) => `"${r}"`).join(", ")}` : "";
  return new SqlInboxError("Connect", `cannot connect to ${label}${serving}: ${why}`, place, { cause });
}
