import { createHash } from "node:crypto";
import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import type { NotifyStatements } from "../forms/engine-traits.js";
import { postgresDb as db } from "./query-builder.js";

/** A table as a channel names it: its name, and its schema when the description names one. */
export type ChannelTable = string | Pick<InboxDescription, "table" | "schema">;

/**
 * The channel of a table, which its publishes notify and its subscriptions listen on:
 * `sqlinbox_<table>` (`sqlinbox_<schema>.<table>` for a table in a named schema), or `sqlinbox_`
 * and a SHA-256 prefix of that name when it would pass the 63 bytes of a Postgres identifier.
 * The control table's channel is its table's: `channelOf(dialect.control.table)`.
 *
 * @example
 * channelOf("report_jobs") // "sqlinbox_report_jobs"
 */
export function channelOf(of: ChannelTable): string {
  const table = typeof of === "string" ? of : of.schema === undefined ? of.table : `${of.schema}.${of.table}`;
  const plain = `sqlinbox_${table}`;
  if (Buffer.byteLength(plain, "utf8") <= 63) return plain;
  return `sqlinbox_${createHash("sha256").update(table, "utf8").digest("hex").slice(0, 40)}`;
}

/**
 * LISTEN/NOTIFY. Kysely has no builder for them, so they are raw fragments: the channel quoted as
 * an identifier (LISTEN takes no parameter) or passed as a parameter (`pg_notify`). The keywords
 * keep the case they had in the runtime, where tests find the listening session by this text.
 * The payload names the group the rows were published to (a table with a group column), so a
 * group's subscription wakes only for its own group; an empty payload wakes every subscription of
 * the table, which then claim. A trigger or another language wakes them the same way:
 * `NOTIFY "sqlinbox_report_jobs", 'emails'`.
 *
 * @example
 * ```sql postgres:notify.listen
 * LISTEN "sqlinbox_report_jobs"
 * ```
 * ```sql postgres:notify.unlistenAll
 * UNLISTEN *
 * ```
 * ```sql postgres:notify.notify
 * select pg_notify($1, $2)
 * ```
 */
export const postgresNotify: NotifyStatements = Object.freeze({
  listen: (channel: string) => sql`LISTEN ${sql.id(channel)}`.compile(db),
  unlistenAll: () => sql`UNLISTEN *`.compile(db),
  notify: (channel: string, group = "") => sql`select pg_notify(${channel}, ${group})`.compile(db),
});
