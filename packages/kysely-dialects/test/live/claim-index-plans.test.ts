/**
 * Every claim statement walks an index, never the whole table: on a table of 100,000 rows made by
 * the generated DDL and analyzed, each claim of each shape (plain, priority, group and fifo,
 * retryAfter, processedAt, an advisory key, every role at once) is compiled by the dialect and
 * EXPLAINed on the real server. A full scan of a queue table fails, with the plan in the message. So does
 * retention's prune of handled rows, which no claim may read through the retention index.
 */
import { buildDescription, type ClaimForm, type ColumnDescription, type ColumnRole, type InboxDescription, type PortableType } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { describe, expect, test } from "vitest";
import { fifoRuleApplies } from "../../src/internal.js";
import { fill, fullScans, planServers, usePlanEngine } from "../support/plans.js";
import { uniqueTable, type LiveEngine } from "../support/servers.js";

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
    // An idle two-statement claim's probe.
    if (!d.lease.claimsInOneStatement && !fifo) out.push(["lease.probeClaimable", d.lease.probeClaimable(spec, { now, ...(spec.group !== undefined ? { group: "g7" } : {}) })]);
  } else {
    out.push(["advisory.selectCandidates", d.advisory.selectCandidates(spec, options)]);
  }
  return out;
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

describe.each(planServers)("claim plans on %s, 100,000 rows", (_name, connect, forms) => {
  let engine!: LiveEngine;
  const tables = usePlanEngine(connect, (connected) => {
    engine = connected;
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
