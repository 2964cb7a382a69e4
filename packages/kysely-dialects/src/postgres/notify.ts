import { sql } from "kysely";
import type { NotifyStatements } from "../types.js";
import { postgresDb as db } from "./query-builder.js";

/**
 * LISTEN/NOTIFY. Kysely has no builder for them, so they are raw fragments: the channel quoted as
 * an identifier (LISTEN takes no parameter) or passed as a parameter (`pg_notify`). The keywords
 * keep the case they had in the runtime, where tests find the listening session by this text.
 * The notification carries no payload: it only wakes the table's subscriptions, which then claim.
 *
 * @example
 * ```sql postgres:notify.listen
 * LISTEN "sqlinbox_report_jobs"
 * ```
 * ```sql postgres:notify.unlistenAll
 * UNLISTEN *
 * ```
 * ```sql postgres:notify.notify
 * select pg_notify($1, '')
 * ```
 */
export const postgresNotify: NotifyStatements = Object.freeze({
  listen: (channel: string) => sql`LISTEN ${sql.id(channel)}`.compile(db),
  unlistenAll: () => sql`UNLISTEN *`.compile(db),
  notify: (channel: string) => sql`select pg_notify(${channel}, '')`.compile(db),
});
