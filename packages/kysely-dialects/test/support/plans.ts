/**
 * What the plan tests share: a 100,000-row fill of a table made by the generated DDL (analyzed),
 * and the reading of a statement's plan on each engine (the full scans of a queue table in it).
 */
import type { ClaimForm, InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery, type RawBuilder } from "kysely";
import { afterAll, beforeAll, expect } from "vitest";
import { connectMariadb, connectPostgres, connectSqlite, selects, type Db, type LiveEngine } from "./servers.js";

const ROWS = 100_000;

/** How each engine writes the fill's few expressions. */
interface Fill {
  readonly past: RawBuilder<unknown>;
  readonly future: RawBuilder<unknown>;
  readonly bytes: RawBuilder<unknown>;
  group(i: RawBuilder<unknown>): RawBuilder<unknown>;
  /** Brings the planner's statistics up to date. */
  analyze(table: string): RawBuilder<unknown>;
}
const fills: Readonly<Record<LiveEngine["name"], Fill>> = {
  postgres: {
    past: sql`now() - interval '1 hour'`,
    future: sql`now() + interval '1 hour'`,
    bytes: sql`cast('{}' as bytea)`,
    group: (i) => sql`'g' || (${i} % 100)`,
    analyze: (t) => sql`analyze ${sql.id(t)}`,
  },
  mariadb: {
    past: sql`now(3) - interval 1 hour`,
    future: sql`now(3) + interval 1 hour`,
    bytes: sql`cast('{}' as binary)`,
    group: (i) => sql`concat('g', ${i} % 100)`,
    analyze: (t) => sql`analyze table ${sql.id(t)}`,
  },
  sqlite: {
    past: sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour')`,
    future: sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 hour')`,
    bytes: sql`cast('{}' as blob)`,
    group: (i) => sql`'g' || (${i} % 100)`,
    analyze: () => sql`analyze`,
  },
};

/**
 * 100,000 rows in one INSERT … SELECT over ten digits cross-joined five times (every engine has it):
 * 100 groups, 10 priorities, a quarter delayed and a quarter past due, 90 % processed, 5 % leased, 10,000 order keys.
 */
export async function fill(engine: LiveEngine, spec: InboxDescription): Promise<void> {
  const f = fills[engine.name];
  const digits = sql`(select 0 as d union all select 1 union all select 2 union all select 3 union all select 4 union all select 5 union all select 6 union all select 7 union all select 8 union all select 9)`;
  const i = sql`(a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * g.d)`;
  const values: Record<string, RawBuilder<unknown>> = {
    payload: f.bytes,
    locked_until: sql`case when ${i} % 20 = 0 then ${f.future} else null end`,
    priority: sql`${i} % 10`,
    grp: f.group(i),
    retry_after: sql`case when ${i} % 4 = 0 then ${f.future} when ${i} % 4 = 1 then ${f.past} else null end`,
    processed_at: sql`case when ${i} % 10 = 0 then null else ${f.past} end`,
    customer_id: sql`${i} % 1000`,
    // 10,000 keys of 10 rows each.
    account_id: sql`${i} % 10000`,
  };
  const names = spec.columns.map((c) => c.name).filter((n) => n in values);
  await sql`insert into ${sql.id(spec.table)} (${sql.join(names.map((n) => sql.id(n)))})
    select ${sql.join(names.map((n) => values[n] as RawBuilder<unknown>))}
    from ${digits} a cross join ${digits} b cross join ${digits} c cross join ${digits} e cross join ${digits} g`.execute(engine.db);
  await f.analyze(spec.table).execute(engine.db);
  const { rows } = await sql<{ n: unknown }>`select count(*) as n from ${sql.id(spec.table)}`.execute(engine.db);
  expect(Number(rows[0]?.n)).toBe(ROWS);
}

/**
 * The full scans of a queue table in a statement's plan (empty: every table read goes through an
 * index), its reads that no index equality bounds (a walk of a whole index or a range of it, which
 * only a LIMIT stops: fine in the index's order, a read of all those rows when the plan sorts; an
 * equality on an index's leading column reads one group's or one key's rows), and the plan as text.
 */
export async function fullScans(engine: LiveEngine, query: CompiledQuery): Promise<{ scans: string[]; unbounded: string[]; plan: string }> {
  const db: Db = engine.db;
  if (engine.name === "postgres") {
    const { rows } = await db.executeQuery<Record<string, unknown>>({ ...query, sql: `explain (format json) ${query.sql}` });
    const plan = (rows[0]?.["QUERY PLAN"] as Array<{ Plan: PgNode }> | undefined)?.[0]?.Plan;
    if (plan === undefined) throw new Error(`no plan for ${query.sql}`);
    const nodes: PgNode[] = [];
    const walk = (n: PgNode) => {
      nodes.push(n);
      for (const c of n.Plans ?? []) walk(c);
    };
    walk(plan);
    return {
      scans: nodes.filter((n) => n["Node Type"] === "Seq Scan").map((n) => `Seq Scan on ${n["Relation Name"]}`),
      unbounded: nodes
        .filter((n) => /^(Seq Scan|Index Scan|Index Only Scan|Bitmap Index Scan)$/.test(n["Node Type"]) && !/ = /.test(n["Index Cond"] ?? ""))
        .map((n) => `${n["Node Type"]} on ${n["Relation Name"] ?? n["Index Name"]}${n["Index Cond"] !== undefined ? ` (${n["Index Cond"]})` : ""}`),
      plan: nodes
        .map((n) => `${n["Node Type"]}${n["Index Name"] !== undefined ? ` using ${n["Index Name"]}` : ""}${n["Relation Name"] !== undefined ? ` on ${n["Relation Name"]}` : ""}`)
        .join(" > "),
    };
  }
  if (engine.name === "mariadb") {
    const { rows } = await db.executeQuery<Record<string, unknown>>({ ...query, sql: `explain ${query.sql}` });
    return {
      // `<derived2>` and the like are the statement's own row sets, not the table.
      scans: rows.filter((r) => r["type"] === "ALL" && !String(r["table"]).startsWith("<")).map((r) => `ALL on ${r["table"]}`),
      // A range whose estimate is a few per cent of the table (one group's handled rows) reads those rows, not the table.
      unbounded: rows
        .filter((r) => (["ALL", "index"].includes(String(r["type"])) || (r["type"] === "range" && Number(r["rows"]) > ROWS / 20)) && !String(r["table"]).startsWith("<"))
        .map((r) => `${r["type"]} on ${r["table"]} (${String(r["rows"])} rows)`),
      plan: rows.map((r) => `${r["table"]}: ${r["type"]} ${r["key"] ?? "-"} (${r["Extra"] ?? ""})`).join(" | "),
    };
  }
  const { rows } = await db.executeQuery<Record<string, unknown>>({ ...query, sql: `explain query plan ${query.sql}` });
  const details = rows.map((r) => String(r["detail"]));
  // `SCAN t USING INDEX i` walks an index in order and stops at the LIMIT. `SCAN t` alone walks the
  // table's own B-tree, in rowid order: with no temporary B-tree to sort it, that order is the
  // statement's (ORDER BY the INTEGER PRIMARY KEY) and the LIMIT stops it too; with one, every row is read.
  const sorted = details.some((d) => d.startsWith("USE TEMP B-TREE FOR ORDER BY"));
  return {
    scans: details.filter((d) => /^SCAN \w+( AS \w+)?$/.test(d) && sorted),
    unbounded: details.filter((d) => d.startsWith("SCAN ") || (d.startsWith("SEARCH ") && !/\(\w+=\?/.test(d))),
    plan: details.join(" | "),
  };
}

interface PgNode {
  readonly "Node Type": string;
  readonly "Relation Name"?: string;
  readonly "Index Name"?: string;
  readonly "Index Cond"?: string;
  readonly Plans?: PgNode[];
}

/** An engine of the plan tests: its name, how to connect, its claim forms. */
type PlanServer = [LiveEngine["name"], () => Promise<LiveEngine>, readonly ClaimForm[]];
const allPlanServers: readonly PlanServer[] = [
  ["postgres", connectPostgres, ["rowLock", "lease", "advisory"]],
  ["mariadb", connectMariadb, ["rowLock", "lease", "advisory"]],
  ["sqlite", async () => connectSqlite("file"), ["lease", "advisory"]],
];
/** The engines the plan tests read plans on (those the run selects), each with its claim forms (SQLite has no row locks). */
export const planServers: readonly PlanServer[] = allPlanServers.filter(([name]) => selects(name));

/**
 * Registers a plan file's hooks on one engine: connect once before its tests (`onConnected`
 * receives the engine); after them, every table in the returned list dropped and the engine closed.
 */
export function usePlanEngine(connect: () => Promise<LiveEngine>, onConnected: (engine: LiveEngine) => void): string[] {
  const tables: string[] = [];
  let engine: LiveEngine | undefined;
  beforeAll(async () => {
    engine = await connect();
    onConnected(engine);
  });
  afterAll(async () => {
    if (engine === undefined) return;
    for (const t of tables) await sql`drop table if exists ${sql.id(t)}`.execute(engine.db);
    await engine.close();
  });
  return tables;
}
