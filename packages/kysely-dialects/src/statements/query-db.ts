import { DummyDriver, Kysely, type CompiledQuery, type DatabaseIntrospector, type DialectAdapter, type QueryCompiler } from "kysely";
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { EngineCapabilities, TimeCodec } from "../types.js";

/**
 * A Kysely instance that only compiles: a `DummyDriver` and one engine's adapter, compiler
 * and introspector. Its database type is open (`any`) because tables are named at run time
 * by a description; it never leaves this package.
 */
// biome-ignore lint/suspicious/noExplicitAny: tables are named at run time by a description, so no database interface describes them
export type QueryDb = Kysely<any>;

export function compileOnly(parts: { adapter: () => DialectAdapter; compiler: () => QueryCompiler; introspector: (db: Kysely<unknown>) => DatabaseIntrospector }): QueryDb {
  return new Kysely<unknown>({
    dialect: {
      createAdapter: parts.adapter,
      createDriver: () => new DummyDriver(),
      createQueryCompiler: parts.compiler,
      createIntrospector: parts.introspector,
    },
  }) as QueryDb;
}

/**
 * What the shared statement text needs of an engine: its compiler, how it writes time, and its
 * capabilities (RETURNING, lock clauses, null order), read once per statement.
 */
export interface StatementContext {
  readonly db: QueryDb;
  readonly time: TimeCodec;
  readonly capabilities: EngineCapabilities;
}

/** Precision used for times that are compared, never read back as tokens (`now`, `processedAt`). */
export const COMPARE_PRECISION = 3;

/** Narrows a compiled query to the row type its caller promises. */
export function compiled<R>(query: { compile(): CompiledQuery<unknown> }): CompiledQuery<R> {
  return query.compile() as CompiledQuery<R>;
}

/** An expression builder over the open database type. */
// biome-ignore lint/suspicious/noExplicitAny: tables are named at run time by a description, so no database interface describes them
export type Eb = import("kysely").ExpressionBuilder<any, any>;

/**
 * The table as statements name it: `schema.table` when the description names a schema (Kysely
 * splits the dot and quotes each part), else the bare name, so an unqualified table's SQL is unchanged.
 */
export function tableRef(spec: InboxDescription): string {
  return spec.schema === undefined ? spec.table : `${spec.schema}.${spec.table}`;
}

/** `table.column`, quoted by Kysely as two identifiers. */
export const col = (spec: InboxDescription, name: string): string => `${tableRef(spec)}.${name}`;

/**
 * The lock of a probe that asks which rows a claim's transaction holds: `FOR SHARE SKIP LOCKED` on
 * Postgres, where share locks do not conflict with each other, so two operators probing at once never
 * see each other's rows as held (a claim's `FOR UPDATE` still makes a row skipped); `FOR UPDATE SKIP
 * LOCKED` on MySQL/MariaDB, which share no syntax for a skipping share lock (MySQL 8 `FOR SHARE`, MariaDB
 * `LOCK IN SHARE MODE`): there a probe running at the same moment as another sees its rows held.
 */
// biome-ignore lint/suspicious/noExplicitAny: accepts every Kysely select builder; each declares its own lock methods
export function probeLock<Q extends { forShare(): any; forUpdate(): any }>(ctx: StatementContext, query: Q): Q {
  return (ctx.capabilities.engine === "postgres" ? query.forShare().skipLocked() : query.forUpdate().skipLocked()) as Q;
}
