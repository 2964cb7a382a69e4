/**
 * `@sqlinbox/kysely-dialects/internal`: what `@sqlinbox/runtime`, the operator tools and the
 * tests share beyond the dialects themselves. NOT covered by semver: names here may change or go
 * in any release. Applications import from `@sqlinbox/kysely-dialects`.
 */
export * from "./index.js";
export { advisoryKeyOf } from "./shared/advisory-key.js";
export { mysqlLockName, MYSQL_LOCK_NAME_MAX } from "./mysql/lock-name.js";
export { clusterOf, type MultiPrimaryCluster } from "./shared/cluster.js";
export { isRetryableConflict } from "./shared/retryable-conflict.js";
export { checkSchema, readFoundColumns } from "./shared/schema-check.js";
export { checkServerVersion, VERSION_FLOORS } from "./shared/server-version.js";
export { truncateToPrecision, formatUtcText, parseUtcText } from "./shared/time-text.js";
