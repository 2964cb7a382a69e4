import type { CompiledQuery } from "kysely";
import { mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect } from "../src/index.js";

export const NOT_SUPPORTED = "NOT_SUPPORTED";
export const NOT_NEEDED = "NOT_NEEDED (null: the claim did it)";

type Shown = { sql: string; parameters: readonly unknown[] } | string;

function show(query: CompiledQuery | null | undefined, absent: string): Shown {
  if (query === null || query === undefined) return absent;
  return { sql: query.sql, parameters: query.parameters };
}

/** One statement on the three engines, side by side; `null` where an engine cannot or need not. */
export function perEngine(build: (dialect: EngineDialect) => CompiledQuery | null | undefined, absent: string = NOT_SUPPORTED): Record<"postgres" | "mysql" | "sqlite", Shown> {
  const run = (d: EngineDialect) => show(build(d), absent);
  return { postgres: run(postgresDialect), mysql: run(mysqlDialect), sqlite: run(sqliteDialect) };
}
