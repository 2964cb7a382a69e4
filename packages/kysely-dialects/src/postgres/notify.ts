import { sql } from "kysely";
import type { NotifyStatements } from "../types.js";
import { postgresDb as db } from "./query-builder.js";

/**
 * LISTEN/NOTIFY: Kysely has no builder for them, so they are raw fragments here, the channel
 * quoted as an identifier (LISTEN takes no parameter) or passed as a parameter (`pg_notify`).
 * The notification carries no payload: it only wakes the table's subscriptions, which then claim.
 *
 * @example
 * ```sql postgres:notify.listen
 * listen "sqlinbox_report_jobs"
 * ```
 * ```sql postgres:notify.unlistenAll
 * unlisten *
 * ```
 * ```sql postgres:notify.notify
 * select pg_notify($1, '')
 * ```
 */
export const postgresNotify: NotifyStatements = Object.freeze({
  listen: (channel: string) => sql`listen ${sql.id(channel)}`.compile(db),
  unlistenAll: () => sql`unlisten *`.compile(db),
  notify: (channel: string) => sql`select pg_notify(${channel}, '')`.compile(db),
});
