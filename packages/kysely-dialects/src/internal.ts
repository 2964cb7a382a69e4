/**
 * `@sqlinbox/kysely-dialects/internal`: what `@sqlinbox/runtime`, the operator tools and the
 * tests share beyond the dialects themselves. NOT covered by semver: names here may change or go
 * in any release. Applications import from `@sqlinbox/kysely-dialects`.
 */
import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { traitsOf } from "./forms/dialect.js";
import { dialectFor } from "./index.js";
import { mariadbFloor, mysqlFloor } from "./mysql/version.js";
import { postgresFloor } from "./postgres/engine.js";
import { checkTable } from "./shared/schema-check.js";
import { sqliteFloor } from "./sqlite/engine.js";
import type { PayloadSearch } from "./statements/job-list.js";
import type { Engine, FoundColumn, LeaseColumnInfo, TableKeys } from "./types.js";

export * from "./index.js";
export { advisoryKeyOf } from "./shared/advisory-key.js";
export { channelOf, type ChannelTable } from "./postgres/notify.js";
export { jobListRowsExist, SEARCH_WINDOW } from "./statements/job-list.js";
export { deliveredAttempt } from "./statements/claim-stamp.js";
export { fifoRuleApplies, orderedKey } from "./statements/order-key-head.js";
export { mysqlLockName, MYSQL_LOCK_NAME_MAX } from "./mysql/lock-name.js";
export { clusterOf, type MultiPrimaryCluster } from "./shared/cluster.js";
export { endsTransaction } from "./forms/transaction.js";
export { postgresQueueStorage } from "./postgres/table-types.js";
export { isRetryableConflict } from "./shared/retryable-conflict.js";
export { readFoundColumns } from "./shared/schema-check.js";
export { truncateToPrecision, formatUtcText, parseUtcText } from "./shared/time-text.js";

/**
 * Checks the description against the real table by the engine's schema rules (`shared/schema-check.ts`);
 * with `keys`, also its generated id and its dedup key's unique index.
 * Returns the lease column's precision (`null` without a lease column).
 *
 * @throws SqlInboxError `Schema`, naming the table and the column.
 */
export function checkSchema(spec: InboxDescription, found: readonly FoundColumn[], engine: Engine, keys?: TableKeys): LeaseColumnInfo | null {
  return checkTable(spec, found, traitsOf(dialectFor(engine)), keys);
}

/**
 * Refuses a server below the engine's floor with `ServerTooOld` (TiDB by name, `UnsupportedForm`);
 * returns a label such as `"MariaDB 10.11.19"`.
 *
 * @example
 * checkServerVersion("mysql", "10.11.19-MariaDB-0+deb12u1") // "MariaDB 10.11.19"
 * checkServerVersion("mysql", "8.0.0") // throws ServerTooOld: MySQL 8.0.0 is older than 8.0.1 …
 */
export function checkServerVersion(engine: Engine, version: string): string {
  return dialectFor(engine).checkServerVersion(version);
}

/** The version floors by product, as each engine's folder states them with the reason. */
export const VERSION_FLOORS = Object.freeze({ postgres: postgresFloor, mysql: mysqlFloor, mariadb: mariadbFloor, sqlite: sqliteFloor });

/**
 * A search in the table's payloads (`JobListFilter.search`): `text`, and whether the real payload
 * column holds bytes (`bytea`, a blob), read from the schema, as Postgres reads bytes differently.
 *
 * @throws SqlInboxError `Declaration` when the table has no payload column.
 */
export async function payloadSearch(
  db: { executeQuery<R>(query: CompiledQuery<R>): Promise<{ readonly rows: R[] }> },
  engine: Engine,
  spec: InboxDescription,
  text: string,
): Promise<PayloadSearch> {
  const payload = spec.payload?.name;
  if (payload === undefined) throw new SqlInboxError("Declaration", `a search reads the payload, and ${spec.table} has no payload column`, { table: spec.table });
  const dialect = dialectFor(engine);
  const found = dialect.readFoundColumns((await db.executeQuery(dialect.schema.describeTable(spec.table, spec.schema))).rows);
  const type = found.find((c) => c.name === payload)?.dataType ?? "";
  return { text, bytes: /bytea|blob|binary/i.test(type) };
}
