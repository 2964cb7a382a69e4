/**
 * One refresh of the dashboard (one `sqlinbox status`) reads a million-row queue table through its
 * indexes, never the whole table: the table is made by the generated DDL and filled as
 * `scripts/bench/dashboard-refresh.ts` fills it (half handled, 5 % leased, the rest ready; and again
 * with ten groups, whose claim index the group leads) by one
 * INSERT … SELECT before its indexes are built, then analyzed as autovacuum would. Every statement
 * the refresh runs is recorded and EXPLAINed on the real server; so are the row-lock probe and the
 * advisory candidates a large table's refresh runs in those forms, and the expiring leases of the
 * sample (read only when the sample holds a live lease). A full scan of the table fails,
 * with the plan.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { operatorFor } from "@sqlinbox/kysely-dialects/operator";
import { type CompiledQuery, sql } from "kysely";
import { describe, expect, test } from "vitest";
import { openDatabase, type OpenedDatabase } from "../src/connect.js";
import { OperatorConsole } from "../src/operator-console.js";
import { resolveTables } from "../src/queue-tables.js";
import { ENGINES, type TestDatabase, uniqueName, useTestDatabase } from "./support/databases.js";

const ROWS = 1_000_000;

const columns = {
  id: field.id().generated(),
  attempt: field.attempt().generated(),
  locked_until: field.lease(),
  processed_at: field.processedAt(),
  payload: field.payload<{ n: number }>(),
};
/** The bench's table, and the same with a group column (ten groups), whose claim index the group leads. */
const shapes = {
  "no group": (table: string) => defineInbox({ table, columns }).description,
  "ten groups": (table: string) => defineInbox({ table, columns: { ...columns, grp: field.group() } }).description,
} as const;
type Shape = keyof typeof shapes;

const fills = {
  postgres: { past: sql`now() - interval '1 hour'`, future: sql`now() + interval '1 hour'`, bytes: sql`cast('{}' as bytea)`, analyze: (t: string) => sql`analyze ${sql.id(t)}` },
  mariadb: {
    past: sql`now(6) - interval 1 hour`,
    future: sql`now(6) + interval 1 hour`,
    bytes: sql`cast('{}' as binary)`,
    analyze: (t: string) => sql`analyze table ${sql.id(t)}`,
  },
  sqlite: {
    past: sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour')`,
    future: sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 hour')`,
    bytes: sql`cast('{}' as blob)`,
    analyze: () => sql`analyze`,
  },
} as const;

/** The table, its million rows (one INSERT … SELECT over six cross-joined digits), then its indexes, then fresh statistics. */
async function fill(t: TestDatabase, table: string, shape: Shape): Promise<void> {
  const [create, ...indexes] = dialectFor(t.name === "mariadb" ? "mysql" : t.name).table.create(shapes[shape](table));
  await t.db.executeQuery(create as CompiledQuery);
  const f = fills[t.name];
  const digits = sql`(select 0 as d union all select 1 union all select 2 union all select 3 union all select 4 union all select 5 union all select 6 union all select 7 union all select 8 union all select 9)`;
  const i = sql`(a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * g.d + 100000 * h.d)`;
  const group = shape === "ten groups" ? [sql`grp`, t.name === "mariadb" ? sql`concat('g', ${i} % 10)` : sql`'g' || (${i} % 10)`] : [];
  await sql`insert into ${sql.id(table)} (${sql.join([sql`payload`, ...group.slice(0, 1), sql`locked_until`, sql`processed_at`])})
    select ${sql.join([f.bytes, ...group.slice(1)])}, case when ${i} % 20 = 1 then ${f.future} else null end, case when ${i} % 2 = 0 then ${f.past} else null end
    from ${digits} a cross join ${digits} b cross join ${digits} c cross join ${digits} e cross join ${digits} g cross join ${digits} h`.execute(t.db);
  for (const index of indexes) await t.db.executeQuery(index);
  await f.analyze(table).execute(t.db);
}

/** The reads of `table` in a statement's plan that walk the whole table (empty: none), and the plan as text. */
async function fullScans(t: TestDatabase, table: string, query: CompiledQuery): Promise<{ scans: string[]; plan: string }> {
  if (t.name === "postgres") {
    const { rows } = await t.db.executeQuery<Record<string, unknown>>({ ...query, sql: `explain (format json) ${query.sql}` });
    const nodes: PgNode[] = [];
    const walk = (n: PgNode) => {
      nodes.push(n);
      for (const c of n.Plans ?? []) walk(c);
    };
    const plan = (rows[0]?.["QUERY PLAN"] as Array<{ Plan: PgNode }> | undefined)?.[0]?.Plan;
    if (plan === undefined) throw new Error(`no plan for ${query.sql}`);
    walk(plan);
    return {
      scans: nodes.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === table).map((n) => `Seq Scan on ${n["Relation Name"]}`),
      plan: nodes.map((n) => `${n["Node Type"]}${n["Index Name"] ? ` using ${n["Index Name"]}` : ""}${n["Relation Name"] ? ` on ${n["Relation Name"]}` : ""}`).join(" > "),
    };
  }
  if (t.name === "mariadb") {
    const { rows } = await t.db.executeQuery<Record<string, unknown>>({ ...query, sql: `explain ${query.sql}` });
    return {
      // ALL reads the table; so does, whatever the LIMIT, a sort (filesort) of an index read that bounds a tenth of it or more.
      scans: rows
        .filter((r) => r["table"] === table && (r["type"] === "ALL" || (String(r["Extra"]).includes("filesort") && Number(r["rows"]) >= ROWS / 10)))
        .map((r) => `${r["type"]} on ${r["table"]} (${String(r["rows"])} rows, ${String(r["Extra"])})`),
      plan: rows.map((r) => `${r["table"]}: ${r["type"]} ${r["key"] ?? "-"} (${r["Extra"] ?? ""})`).join(" | "),
    };
  }
  const { rows } = await t.db.executeQuery<Record<string, unknown>>({ ...query, sql: `explain query plan ${query.sql}` });
  const details = rows.map((r) => String(r["detail"]));
  // `SCAN t` alone walks the table's own B-tree; `SCAN t USING [COVERING] INDEX i` walks an index.
  return { scans: details.filter((d) => d === `SCAN ${table}`), plan: details.join(" | ") };
}

interface PgNode {
  readonly "Node Type": string;
  readonly "Relation Name"?: string;
  readonly "Index Name"?: string;
  readonly Plans?: PgNode[];
}

/** `opened` whose database records each statement it runs. */
function recording(opened: OpenedDatabase, into: CompiledQuery[]): OpenedDatabase {
  const db = new Proxy(opened.db, {
    get(target, prop, receiver) {
      if (prop === "executeQuery") {
        return (query: CompiledQuery) => {
          into.push(query);
          return target.executeQuery(query);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { ...opened, db };
}

describe.each(ENGINES)("a dashboard refresh's plans on %s, 1,000,000 rows", (_name, open) => {
  let t!: TestDatabase;
  const { tables } = useTestDatabase(open, (opened) => {
    t = opened;
  });

  test.each(Object.keys(shapes) as Shape[])(
    "%s: every statement of a refresh reads the queue table through an index",
    async (shape) => {
      const table = uniqueName("plan_refresh");
      tables.push(table);
      const filling = performance.now();
      await fill(t, table, shape);
      const filled = performance.now() - filling;
      const opened = await openDatabase(t.url);
      try {
        const statements: CompiledQuery[] = [];
        const recorded = recording(opened, statements);
        const queues = await resolveTables(recorded, { tables: [table] });
        statements.length = 0;
        const refreshing = performance.now();
        const report = await new OperatorConsole(recorded, queues).status();
        const refreshed = performance.now() - refreshing;
        const status = report.tables[0]!;
        // Large, so capped: half the rows are not done, far past the cap.
        expect(status.capped).toMatchObject({ cap: 10_000, estimatedRows: ROWS });
        expect(status.capped?.atLeast).toEqual(expect.arrayContaining(["ready", "inWork", "done"]));
        // The sample: the first 10,000 rows not done, told apart (which are leased depends on the fill's order).
        expect(status.totals.ready + (status.totals.inWork ?? 0)).toBe(10_000);
        expect(status.totals.done).toBe(10_000);

        // The other forms' probes of a large table: the row-lock probe (where rows lock) and the advisory candidates.
        const ops = operatorFor(opened.engine);
        const [queue] = queues;
        const now = opened.now();
        const probes = [
          ...(t.name === "sqlite" ? [] : [ops.lockableProbe(queue!.spec, now, 10_000)]),
          ops.advisoryCandidates(queue!.spec, now, 10_000, "claim"),
          // Read by a refresh only when the sample holds a live lease.
          ops.sampledExpiringLeases({ spec: queue!.spec }, now, new Date(now.getTime() + 60_000), 20, 10_000),
        ];
        const onTable = [...statements, ...probes].filter((q) => q.sql.includes(table));
        expect(onTable.length).toBeGreaterThanOrEqual(5);
        const found: string[] = [];
        for (const query of onTable) {
          const { scans, plan } = await fullScans(t, table, query);
          if (scans.length > 0) found.push(`${scans.join(", ")}\n  in: ${query.sql}\n  plan: ${plan}`);
        }
        expect(found, found.join("\n")).toEqual([]);
        console.info(
          `${t.name}, ${shape}: ${ROWS} rows filled, indexed and analyzed in ${Math.round(filled)} ms; one refresh (${statements.length} statements, ${onTable.length - probes.length} on the table) in ${Math.round(refreshed)} ms`,
        );
      } finally {
        await opened.db.destroy();
      }
    },
    240_000,
  );
});
