/**
 * `@sqlinbox/database`: what `@sqlinbox/runtime` and the operator tools (`@sqlinbox/cli`, its
 * dashboard) both do to an application's database, kept once so that they agree: open a URL with
 * its driver, redact it for messages, read the database's clock, pause, resume and cancel through
 * the control table. The statements themselves are `@sqlinbox/kysely-dialects`'; this package runs
 * them. Applications use `@sqlinbox/runtime` and `sqlinbox`; names here follow the packages that
 * use them and are not covered by semver.
 */
export { parseDatabaseUrl, type ParsedUrl } from "./url/database-url.js";
export type { EngineOfUrl } from "./url/engine-of-url.js";
export { redactSecrets, redactUrl, SECRET_PARAMETER } from "./url/redact-url.js";
export type { AnyKysely, ListenClient, OpenedDatabase, OpenOptions, PoolOptions } from "./drivers/types.js";
export { withPreparedStatements, type PgPoolLike } from "./drivers/prepared-pool.js";
export { sqliteUrlWithoutFile, unsupportedUrlScheme } from "./errors.js";
export { describeSkew, offsetOf, tolerableSkewMs, WARN_SKEW_MS, type ClockOffset, type ClockSample } from "./clock/clock-offset.js";
export { databaseTime, measureOffset, type DatabaseTime, type RunStatement } from "./clock/database-time.js";
export {
  cancelRow,
  updateRow,
  pauseRoute,
  resumeRoute,
  servedRoutes,
  namesSubscription,
  CANCEL_REQUEST_TTL_MS,
  ROUTE_RECORD_KEPT_MS,
  type CancelResult,
  type UpdateResult,
  type ControlPlace,
} from "./control/control-procedures.js";
export { bulkAct, noCounts, BULK_BATCH, type BulkAction, type BulkCounts, type BulkRequest } from "./control/bulk-actions.js";
export { recordedSchedules, type RecordedSchedule } from "./control/recorded-schedules.js";
export type { ProcessKeys } from "./control/remove-unless-in-work.js";
