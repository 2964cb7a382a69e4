/**
 * A description with a schema (a Postgres schema, a MySQL/MariaDB database): every statement of
 * every form names `schema.table`, and is otherwise the unqualified statement byte for byte.
 */
import type { InboxDescription } from "@sqlinbox/core/internal";
import { InboxSpec, column } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { describe, expect, test } from "vitest";
import { advisoryKeyOf, fifoRuleApplies, mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect } from "../../src/internal.js";
import { perEngine } from "../support/render.js";
import { fifoLease, fifoRichLease, fifoRowLock, richAdvisory, richLease, richRowLock } from "../support/specs.js";

const now = new Date("2026-01-01T00:00:00.000Z");
const until = new Date("2026-01-01T00:01:00.000Z");
const lease = { id: 7, held: until };

/** The same description in schema `jobs`. */
function inJobs(spec: InboxDescription): InboxDescription {
  return { ...spec, schema: "jobs" };
}

/** Every statement a form builds for `spec`, by name: each one its traits say the engine and the table have. */
function statementsOf(d: EngineDialect, spec: InboxDescription): Record<string, CompiledQuery> {
  // fifoLocked: what a fifo claim on MySQL/MariaDB is given by lockFifoGroup (ignored elsewhere).
  const options = { limit: 5, now, group: "g", fifoLocked: 2 };
  const fifo = fifoRuleApplies(spec, {});
  const out: Record<string, CompiledQuery> = {
    "publish.insert": d.publish.insert(spec, [{ [spec.columns.find((c) => !c.generated)?.name ?? "payload"]: "a" }]),
    "advisory.selectCandidates": d.advisory.selectCandidates(spec, options),
    "advisory.take": d.advisory.take(spec, 7, now),
    ...(d.advisory.takeReturnsRow ? {} : { "advisory.readTaken": d.advisory.readTaken(spec, 7) }),
    "advisory.settleAck": d.advisory.settleAck(spec, 7, now),
    ...(spec.retryAfter === undefined ? {} : { "advisory.settleRetry": d.advisory.settleRetry(spec, 7, until) }),
  };
  if (spec.lease !== undefined) {
    Object.assign(out, {
      ...(fifo && !d.lease.claimsInOneStatement ? { "lease.lockFifoGroup": d.lease.lockFifoGroup(spec, options) } : {}),
      ...(d.lease.claimsInOneStatement ? { "lease.claim": d.lease.claim(spec, { ...options, until, precision: 3 }) } : {}),
      "lease.selectClaimable": d.lease.selectClaimable(spec, options),
      "lease.stampClaimed": d.lease.stampClaimed(spec, [7], until, 3),
      "lease.extend": d.lease.extend(spec, [lease], until, 3),
      "lease.readLeases": d.lease.readLeases(spec, [7]),
      "lease.settleAck": d.lease.settleAck(spec, lease, now, 3),
      "lease.settleRetry": d.lease.settleRetry(spec, lease, until, 3),
      "lease.settleAckMany": d.lease.settleAckMany(spec, [lease], now, 3),
      "lease.selectHeld": d.lease.selectHeld(spec, [lease], 3),
      "lease.releaseUnstarted": d.lease.releaseUnstarted(spec, [lease], 3),
    });
  }
  if (d.capabilities.rowLock && spec.lease === undefined) {
    Object.assign(out, {
      ...(fifo && !d.rowLock.claimLocksFifoGroup ? { "rowLock.lockFifoGroup": d.rowLock.lockFifoGroup(spec, options) } : {}),
      "rowLock.claim": d.rowLock.claim(spec, options),
      ...(spec.attempt !== undefined && !d.rowLock.countsInClaim ? { "rowLock.countAttempts": d.rowLock.countAttempts(spec, [7]) } : {}),
      "rowLock.settleAck": d.rowLock.settleAck(spec, 7, now),
      ...(spec.retryAfter === undefined ? {} : { "rowLock.settleRetry": d.rowLock.settleRetry(spec, 7, until) }),
    });
  }
  return out;
}

const dialects = { postgres: postgresDialect, mysql: mysqlDialect, sqlite: sqliteDialect };
const forms = {
  rowLock: richRowLock("jobs_t"),
  lease: richLease("jobs_t"),
  fifoLease: fifoLease("jobs_t"),
  fifoRichLease: fifoRichLease("jobs_t"),
  fifoRowLock: fifoRowLock("jobs_t"),
  advisory: richAdvisory("jobs_t"),
};

describe.each(Object.entries(dialects))("schema-qualified statements on %s", (engine, dialect) => {
  const q = engine === "mysql" ? "`" : '"';
  const bare = `${q}jobs_t${q}`;
  const qualified = `${q}jobs${q}.${q}jobs_t${q}`;
  test.each(Object.entries(forms))("%s: every statement names the schema, and differs from the unqualified one in nothing else", (_form, spec) => {
    const plain = statementsOf(dialect, spec);
    const inSchema = statementsOf(dialect, inJobs(spec));
    expect(Object.keys(inSchema)).toEqual(Object.keys(plain));
    for (const [name, query] of Object.entries(plain)) {
      const schemaQuery = inSchema[name];
      expect(schemaQuery, name).toBeDefined();
      expect(query.sql, name).toContain(bare);
      expect(schemaQuery?.sql.includes(qualified), `${name}: ${schemaQuery?.sql}`).toBe(true);
      expect(schemaQuery?.sql, name).toBe(query.sql.split(bare).join(qualified));
      expect(schemaQuery?.parameters, name).toEqual(query.parameters);
    }
  });
});

describe("schema-qualified, side by side", () => {
  const spec = InboxSpec.table("report_jobs", column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .payload(column("payload"))
    .schema("jobs").description;

  test("the lease claim", () => {
    expect(
      perEngine((d) => (d.lease.claimsInOneStatement ? d.lease.claim(spec, { limit: 5, now, until, precision: 3 }) : d.lease.selectClaimable(spec, { limit: 5, now }))),
    ).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2026-01-01 00:00:00.000",
            5,
          ],
          "sql": "select \`jobs\`.\`report_jobs\`.\`id\`, \`jobs\`.\`report_jobs\`.\`attempt\`, \`jobs\`.\`report_jobs\`.\`locked_until\`, \`jobs\`.\`report_jobs\`.\`payload\` from \`jobs\`.\`report_jobs\` where (\`jobs\`.\`report_jobs\`.\`locked_until\` is null or \`jobs\`.\`report_jobs\`.\`locked_until\` <= ?) order by \`jobs\`.\`report_jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            2026-01-01T00:00:00.000Z,
            5,
            2026-01-01T00:01:00.000Z,
          ],
          "sql": "with "picked" as (select "jobs"."report_jobs"."id" from "jobs"."report_jobs" where ("jobs"."report_jobs"."locked_until" is null or "jobs"."report_jobs"."locked_until" <= $1) order by "jobs"."report_jobs"."id" asc limit $2 for update skip locked), "claimed" as (update "jobs"."report_jobs" set "locked_until" = $3, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "payload") select * from "claimed" order by "id" asc",
        },
        "sqlite": {
          "parameters": [
            "2026-01-01T00:01:00.000Z",
            "2026-01-01T00:00:00.000Z",
            5,
          ],
          "sql": "update "jobs"."report_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (select "jobs"."report_jobs"."id" from "jobs"."report_jobs" where ("jobs"."report_jobs"."locked_until" is null or "jobs"."report_jobs"."locked_until" <= ?) order by "jobs"."report_jobs"."id" asc limit ?) returning "id", "attempt", "locked_until", "payload"",
        },
      }
    `);
  });

  test("the schema check reads the named schema, not the connection's own", () => {
    expect(perEngine((d) => d.schema.describeTable("report_jobs", "jobs"))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "jobs",
            "report_jobs",
          ],
          "sql": "select \`COLUMN_NAME\` as \`name\`, \`DATA_TYPE\` as \`data_type\`, \`DATETIME_PRECISION\` as \`precision\`, \`IS_NULLABLE\` as \`nullable\` from \`information_schema\`.\`COLUMNS\` where \`TABLE_SCHEMA\` = ? and \`TABLE_NAME\` = ? order by \`ORDINAL_POSITION\`",
        },
        "postgres": {
          "parameters": [
            "jobs",
            "report_jobs",
          ],
          "sql": "select "column_name" as "name", "data_type", "datetime_precision" as "precision", "is_nullable" as "nullable" from "information_schema"."columns" where "table_schema" = $1 and "table_name" = $2 order by "ordinal_position"",
        },
        "sqlite": {
          "parameters": [
            "report_jobs",
          ],
          "sql": "select "name", "type" as "data_type", null as "precision", "notnull" = 0 as "nullable" from pragma_table_info(?) as "c" order by "cid"",
        },
      }
    `);
  });

  test("the advisory key names the schema, so same-named tables of two schemas never share a key", () => {
    const keyed = InboxSpec.table("report_jobs", column("id").generated()).advisoryLock("r-{id}");
    expect(advisoryKeyOf(keyed.description, { id: 7 })).toBe("report_jobs:r-7");
    expect(advisoryKeyOf(keyed.schema("jobs").description, { id: 7 })).toBe("jobs.report_jobs:r-7");
  });

  test("a schema name is validated like any identifier", () => {
    expect(() => InboxSpec.table("report_jobs", column("id")).schema("jobs; drop")).toThrow(/schema of table "report_jobs" name "jobs; drop" cannot be an identifier/);
  });
});
