import type { EngineDialect } from "../types.js";
import { buildDialect } from "../forms/dialect.js";
import { sqliteEngine } from "./engine.js";

/**
 * SQLite 3.35+: lease (one update of the ids a subquery picks, with `RETURNING`) and advisory with
 * keys held in the process; no row lock. Deadlines are fixed-width UTC ISO-8601 text.
 *
 * @example
 * const q = sqliteDialect.lease.claim(spec, { limit: 10, now, until, precision: 3 });
 * const { rows } = await db.executeQuery(q!);
 */
export const sqliteDialect: EngineDialect = buildDialect(sqliteEngine);
