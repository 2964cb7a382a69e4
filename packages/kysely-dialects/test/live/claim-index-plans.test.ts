/**
 * Every claim statement walks an index, never the whole table: on a table of 100,000 rows made by
 * the generated DDL and analyzed, each claim of each shape (plain, priority, group and fifo,
 * retryAfter, processedAt, an advisory key, every role at once) is compiled by the dialect and
 * EXPLAINed on the real server. A full scan of a queue table fails, with the plan in the message. So does
 * retention's prune of handled rows, which no claim may read through the retention index.
 */
import { buildDescription, type ClaimForm, type ColumnDescription, type ColumnRole, type InboxDescription, type PortableType } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery, type RawBuilder } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { fifoRuleApplies } from "../../src/internal.js";
import { connectMariadb, connectPostgres, connectSqlite, selects, uniqueTable, type Db, type LiveEngine } from "../support/servers.js";

const ROWS = 100_000;

/** A shape: the columns its table has beyond id, attempt, a lease column and the payload. */
interface Shape {
  readonly name: string;
  readonly columns: readonly ColumnDescription[];
  /** The key template of its advisory description (else `{id}`). */
  readonly key?: string;
  /** Also claim it as a fifo table. */
  readonly fifo?: boolean;
  /** Not in the advisory form (an order key excludes an advisory key). */
  readonly noAdvisory?: boolean;
}

const described = (name: string, role: ColumnRole, type?: PortableType): ColumnDescription => ({
  name,
  key: name,
  role,
  generated: false,
  ...(type !== undefined ? { type } : {}),
});
const priority = described("priority", "priority");
const group = described("grp", "group");
const retryAfter = described("retry_after", "retryAfter");
const processedAt = described("processed_at", "processedAt");
const orderKey = described("account_id", "orderKey", "bigint");

const shapes: readonly Shape[] = [
  { name: "plain", columns: [] },
  { name: "priority", columns: [priority] },
  { name: "group", columns: [group], fifo: true },
  { name: "retryAfter", columns: [retryAfter] },
  { name: "processedAt", columns: [processedAt] },
  { name: "advisory key", columns: [described("customer_id", "data", "bigint")], key: "c-{customer_id}" },
  { name: "every role", columns: [group, priority, retryAfter, processedAt], fifo: true },
  { name: "order key", columns: [orderKey], noAdvisory: true },
  { name: "order key with priority, retryAfter, processedAt", columns: [orderKey, priority, retryAfter, processedAt], noAdvisory: true },
];

/** The shape's description in `form` (the table has a lease column whatever the form; only the lease form describes it). */
function describeAs(shape: Shape, table: string, form: ClaimForm, fifo: boolean): InboxDescription {
  const columns = [
    { ...described("id", "id"), generated: true },
    { ...described("attempt", "attempt"), generated: true },
    described("payload", "payload"),
    ...shape.columns,
    ...(form === "lease" ? [described("locked_until", "lease")] : []),
  ];
  return buildDescription({ table, columns, fifo, ...(form === "advisory" ? { advisoryLock: shape.key ?? "{id}" } : {}) });
}

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
async function fill(engine: LiveEngine, spec: InboxDescription): Promise<void> {
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

/** The claim statements a form runs, as the runtime would compile them. */
function claimStatements(engine: LiveEngine, spec: InboxDescription, form: ClaimForm): Array<[string, CompiledQuery]> {
  const now = new Date();
  const options = { limit: 10, now, ...(spec.group !== undefined ? { group: "g7" } : {}) };
  const d = engine.dialect;
  const out: Array<[string, CompiledQuery]> = [];
  const fifo = fifoRuleApplies(spec, {});
  if (form === "rowLock") {
    const locksFirst = fifo && !d.rowLock.claimLocksFifoGroup;
    if (locksFirst) out.push(["rowLock.lockFifoGroup", d.rowLock.lockFifoGroup(spec, options)]);
    out.push(["rowLock.claim", d.rowLock.claim({ ...spec }, { ...options, ...(locksFirst ? { fifoLocked: 1 } : {}) })]);
  } else if (form === "lease") {
    const locksFirst = fifo && !d.lease.claimsInOneStatement;
    if (locksFirst) out.push(["lease.lockFifoGroup", d.lease.lockFifoGroup(spec, options)]);
    const leaseOptions = { ...options, until: new Date(now.getTime() + 30_000), precision: engine.precision, ...(locksFirst ? { fifoLocked: 1 } : {}) };
    out.push(["lease.claim", d.lease.claimsInOneStatement ? d.lease.claim(spec, leaseOptions) : d.lease.selectClaimable(spec, leaseOptions)]);
  } else {
    out.push(["advisory.selectCandidates", d.advisory.selectCandidates(spec, options)]);
  }
  return out;
}

/** The full scans of a queue table in a statement's plan (empty: every table read goes through an index), and the plan as text. */
async function fullScans(engine: LiveEngine, query: CompiledQuery): Promise<{ scans: string[]; plan: string }> {
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
      plan: rows.map((r) => `${r["table"]}: ${r["type"]} ${r["key"] ?? "-"} (${r["Extra"] ?? ""})`).join(" | "),
    };
  }
  const { rows } = await db.executeQuery<Record<string, unknown>>({ ...query, sql: `explain query plan ${query.sql}` });
  const details = rows.map((r) => String(r["detail"]));
  // `SCAN t USING INDEX i` walks an index in order and stops at the LIMIT. `SCAN t` alone walks the
  // table's own B-tree, in rowid order: with no temporary B-tree to sort it, that order is the
  // statement's (ORDER BY the INTEGER PRIMARY KEY) and the LIMIT stops it too; with one, every row is read.
  const sorted = details.some((d) => d.startsWith("USE TEMP B-TREE FOR ORDER BY"));
  return { scans: details.filter((d) => /^SCAN \w+( AS \w+)?$/.test(d) && sorted), plan: details.join(" | ") };
}

/** The plan text of the lease probe read straight from the `(order key, lease)` index, with no sort of its own. */
function leaseProbeInOrder(engine: LiveEngine["name"], table: string): RegExp {
  switch (engine) {
    case "postgres":
      return new RegExp(`Limit > Index (Only )?Scan using ${table}_order_key_lease`);
    case "mariadb":
      return new RegExp(`order_leased: ref ${table}_order_key_lease \\((?![^)]*filesort)`);
    case "sqlite":
      return new RegExp(`SEARCH order_leased USING (COVERING )?INDEX ${table}_order_key_lease \\([^)]*\\)(?! \\| USE TEMP B-TREE)`);
  }
}

interface PgNode {
  readonly "Node Type": string;
  readonly "Relation Name"?: string;
  readonly "Index Name"?: string;
  readonly Plans?: PgNode[];
}

const servers: Array<[LiveEngine["name"], () => Promise<LiveEngine>, readonly ClaimForm[]]> = [
  ["postgres", connectPostgres, ["rowLock", "lease", "advisory"]],
  ["mariadb", connectMariadb, ["rowLock", "lease", "advisory"]],
  ["sqlite", async () => connectSqlite("file"), ["lease", "advisory"]],
];

describe.each(servers.filter(([name]) => selects(name)))("claim plans on %s, 100,000 rows", (_name, connect, forms) => {
  let engine: LiveEngine;
  const tables: string[] = [];
  beforeAll(async () => {
    engine = await connect();
  });
  afterAll(async () => {
    for (const t of tables) await sql`drop table if exists ${sql.id(t)}`.execute(engine.db);
    await engine.close();
  });

  test.each(shapes)(
    "$name: every claim statement reads through an index",
    async (shape) => {
      const table = uniqueTable("plan");
      tables.push(table);
      // The table as the lease description creates it: the lease column is there for every form.
      const ddl = describeAs(shape, table, "lease", false);
      for (const statement of engine.dialect.table.create(ddl)) await engine.db.executeQuery(statement);
      await fill(engine, ddl);

      const checked: string[] = [];
      for (const form of forms.filter((f) => f !== "advisory" || shape.noAdvisory !== true)) {
        const variants = shape.fifo === true && form !== "advisory" ? [false, true] : [false];
        for (const fifo of variants) {
          for (const [name, query] of claimStatements(engine, describeAs(shape, table, form, fifo), form)) {
            const { scans, plan } = await fullScans(engine, query);
            const label = `${name}${fifo ? " (fifo)" : ""}`;
            expect(scans, `${label} scans the table:\n${query.sql}\nplan: ${plan}`).toEqual([]);
            if (shape.columns.includes(orderKey)) {
              // The head probe reads its key's rows through an index that leads with the key, not the primary
              // key's walk. Which one: MariaDB, when its statistics say a key holds a few rows, may take the
              // (order key, lease) index and sort those few rows instead of the (order key, id) index.
              expect(plan, `${label} probes each key's head without its index:\n${query.sql}`).toContain(`${table}_order_key`);
              // The lease form's probe of the key's rows in work reads the (order key, lease) index …
              // … read in the index's order (latest lease first), so it stops after perKey entries, with no sort.
              if (form === "lease")
                expect(plan, `${label} probes the key's leases without walking their index in order:\n${query.sql}`).toMatch(leaseProbeInOrder(engine.name, table));
            }
            checked.push(`${label}: ${plan}`);
          }
        }
      }
      expect(checked.length).toBeGreaterThan(0);
    },
    120_000,
  );

  test.each(shapes.filter((s) => s.columns.includes(processedAt) && !s.columns.includes(orderKey)))(
    "$name: the retention prune reads through an index, and no claim reads the retention index",
    async (shape) => {
      const table = uniqueTable("plan_prune");
      tables.push(table);
      const ddl = describeAs(shape, table, "lease", false);
      for (const statement of engine.dialect.table.create(ddl)) await engine.db.executeQuery(statement);
      await fill(engine, ddl);
      // 90,000 rows were handled an hour ago: a prune of rows older than half an hour finds them all, and takes 500.
      const prune = engine.dialect.retention.prune(ddl, { before: new Date(Date.now() - 1_800_000), limit: 500, ...(ddl.group !== undefined ? { group: "g7" } : {}) });
      const { scans, plan } = await fullScans(engine, prune);
      expect(scans, `the prune scans the table:\n${prune.sql}\nplan: ${plan}`).toEqual([]);
      // Where the engine has partial indexes the prune reads the retention index; elsewhere the claim index, which leads with processedAt.
      expect(plan, `the prune reads neither the retention nor the claim index:\n${prune.sql}`).toMatch(new RegExp(`${table}_(processed|claim)`));
      for (const form of forms) {
        for (const [name, query] of claimStatements(engine, describeAs(shape, table, form, false), form)) {
          const claim = await fullScans(engine, query);
          expect(claim.plan, `${name} reads the retention index:\n${query.sql}`).not.toContain(`${table}_processed`);
        }
      }
    },
    120_000,
  );

  test("the check itself: without the claim index, a priority claim reads every row", async () => {
    const table = uniqueTable("plan_noidx");
    tables.push(table);
    const shape = shapes.find((s) => s.name === "priority") as Shape;
    const ddl = describeAs(shape, table, "lease", false);
    const [create] = engine.dialect.table.create(ddl);
    await engine.db.executeQuery(create as CompiledQuery);
    await fill(engine, ddl);
    const [, claim] = claimStatements(engine, ddl, "lease").at(-1) as [string, CompiledQuery];
    expect((await fullScans(engine, claim)).scans).not.toEqual([]);
  }, 120_000);
});
