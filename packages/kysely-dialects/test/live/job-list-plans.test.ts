/**
 * Every page of `jobs.list` walks an index, never the whole table, and sorts nothing: on a table of
 * 100,000 rows made by the generated DDL and analyzed (100 groups, a quarter scheduled, 90 %
 * processed, 5 % leased), each state's page query is compiled by the dialect, in each form, from
 * the start and after a cursor half-way, with the route's group and with an order key, and
 * EXPLAINed on the real server. A full scan fails, with the plan, and so does a sort of rows read
 * with no index condition (a whole index): a page either walks an index in id order and stops at
 * its limit, or reads the few rows an index condition bounds (a group's, a key's) and sorts those.
 */
import { buildDescription, type ClaimForm, type ColumnDescription, type ColumnRole, type InboxDescription, type PortableType } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { JobListFilter, JobListRows } from "../../src/internal.js";
import { fill, fullScans, planServers, usePlanEngine } from "../support/plans.js";
import { uniqueTable, type LiveEngine } from "../support/servers.js";

const described = (name: string, role: ColumnRole, type?: PortableType): ColumnDescription => ({
  name,
  key: name,
  role,
  generated: false,
  ...(type !== undefined ? { type } : {}),
});
const group = described("grp", "group");
const orderKey = described("account_id", "orderKey", "bigint");
const base = [described("priority", "priority"), described("retry_after", "retryAfter"), described("processed_at", "processedAt")];

interface Shape {
  readonly name: string;
  readonly columns: readonly ColumnDescription[];
  /** The equalities the runtime adds: the route's group, a key. */
  readonly equals: Readonly<Record<string, unknown>>;
  readonly deadGroup?: string;
}
const shapes: readonly Shape[] = [
  { name: "no group", columns: base, equals: {} },
  { name: "a route's group", columns: [group, ...base], equals: { grp: "g7" }, deadGroup: "g9" },
  { name: "an order key", columns: [orderKey, ...base], equals: { account_id: 77 } },
];

/** The shape's description in `form` (the table has a lease column whatever the form; only the lease form describes it). */
function describeAs(shape: Shape, table: string, form: ClaimForm): InboxDescription {
  const columns = [
    { ...described("id", "id"), generated: true },
    { ...described("attempt", "attempt"), generated: true },
    described("payload", "payload"),
    ...shape.columns,
    ...(form === "lease" ? [described("locked_until", "lease")] : []),
  ];
  return buildDescription({ table, columns, ...(form === "advisory" && !shape.columns.includes(orderKey) ? { advisoryLock: "{id}" } : {}) });
}

/** The sorts in a plan: the statement's order must come from the index it walks. */
function sorts(engine: LiveEngine["name"], plan: string): boolean {
  switch (engine) {
    case "postgres":
      return /\bSort\b/.test(plan);
    case "mariadb":
      return plan.includes("filesort");
    case "sqlite":
      return plan.includes("USE TEMP B-TREE");
  }
}

describe.each(planServers)("job list plans on %s, 100,000 rows", (_name, connect, forms) => {
  let engine!: LiveEngine;
  const tables = usePlanEngine(connect, (connected) => {
    engine = connected;
  });

  test.each(shapes)(
    "$name: every state's page reads through an index, in its order",
    async (shape) => {
      const table = uniqueTable("plan_list");
      tables.push(table);
      const ddl = describeAs(shape, table, "lease");
      for (const statement of engine.dialect.table.create(ddl)) await engine.db.executeQuery(statement);
      await fill(engine, ddl);
      const checked: string[] = [];
      for (const form of forms) {
        const spec = describeAs(shape, table, form);
        const sets: JobListRows[] = [
          "scheduled",
          "due",
          "done",
          ...(form === "lease" ? (["leased"] as const) : []),
          ...(shape.deadGroup !== undefined ? (["deadGroup"] as const) : []),
        ];
        for (const rows of sets) {
          for (const after of [undefined, 50_000]) {
            const equals = rows === "deadGroup" ? {} : shape.equals;
            const filter: JobListFilter = {
              rows,
              now: new Date(),
              limit: 50,
              equals,
              ...(after !== undefined ? { after } : {}),
              ...(shape.deadGroup !== undefined ? { deadGroup: shape.deadGroup } : {}),
            };
            const query = engine.dialect.jobs.list(spec, filter);
            const { scans, unbounded, plan } = await fullScans(engine, query);
            const label = `${form} ${rows}${after !== undefined ? " after a cursor" : ""}`;
            expect(scans, `${label} scans the table:\n${query.sql}\nplan: ${plan}`).toEqual([]);
            expect(sorts(engine.name, plan) ? unbounded : [], `${label} sorts every row of an index:\n${query.sql}\nplan: ${plan}`).toEqual([]);
            checked.push(`${label}: ${plan}`);
          }
        }
      }
      expect(checked.length).toBeGreaterThan(0);
    },
    120_000,
  );

  test("the check itself: a page sorted on a column no index orders is caught", async () => {
    const table = uniqueTable("plan_list_bad");
    tables.push(table);
    const ddl = describeAs(shapes[0] as Shape, table, "lease");
    for (const statement of engine.dialect.table.create(ddl)) await engine.db.executeQuery(statement);
    await fill(engine, ddl);
    const query = sql`select ${sql.id("id")} from ${sql.id(table)} where ${sql.id("processed_at")} is not null order by ${sql.id("attempt")} limit 50`.compile(engine.db);
    const { scans, unbounded, plan } = await fullScans(engine, query);
    expect([...scans, ...(sorts(engine.name, plan) ? unbounded : [])], plan).not.toEqual([]);
  }, 120_000);
});
