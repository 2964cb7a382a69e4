import { buildDialect, type NotifyingDialect } from "../forms/dialect.js";
import { postgresEngine } from "./engine.js";

/**
 * PostgreSQL 11+: every form; one-statement claims with `UPDATE … RETURNING`; advisory
 * locks on `hashtextextended(key, 0)`; deadlines in `TIMESTAMPTZ` passed as `Date`; LISTEN/NOTIFY.
 *
 * @example
 * const q = postgresDialect.lease.claim(RenderReport.description, { limit: 10, now, until, precision: 6 });
 * const { rows } = await db.executeQuery(q!);
 */
export const postgresDialect: NotifyingDialect = buildDialect(postgresEngine);
