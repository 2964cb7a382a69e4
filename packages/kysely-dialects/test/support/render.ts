import type { CompiledQuery } from "kysely";
import { mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect } from "../../src/index.js";
import { isNoStatement } from "../../src/shared/no-statement.js";

export const NOT_SUPPORTED = "NOT_SUPPORTED";
export const NOT_NEEDED = "NOT_NEEDED (null: the claim did it)";

type Shown = { sql: string; parameters: readonly unknown[] } | string;

function show(build: () => CompiledQuery | null | undefined, absent: string): Shown {
  let query: CompiledQuery | null | undefined;
  try {
    query = build();
  } catch (error) {
    // A statement its trait says the engine or the table has none of refuses: shown as absent.
    if (isNoStatement(error)) return absent;
    throw error;
  }
  if (query === null || query === undefined) return absent;
  return { sql: query.sql, parameters: query.parameters };
}

/** One statement on the three engines, side by side; `absent` where an engine cannot or need not (the statement refuses). */
export function perEngine(build: (dialect: EngineDialect) => CompiledQuery | null | undefined, absent: string = NOT_SUPPORTED): Record<"postgres" | "mysql" | "sqlite", Shown> {
  const run = (d: EngineDialect) => show(() => build(d), absent);
  return { postgres: run(postgresDialect), mysql: run(mysqlDialect), sqlite: run(sqliteDialect) };
}

/** True when `build` returns a statement; false when the statement refuses because its trait says there is none. */
export function builds(build: () => CompiledQuery): boolean {
  try {
    build();
    return true;
  } catch (error) {
    if (isNoStatement(error)) return false;
    throw error;
  }
}
