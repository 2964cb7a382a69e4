import { column, InboxSpec } from "@sqlinbox/core";
import type { CompiledQuery } from "kysely";
import { describe, expect, test } from "vitest";
import { operatorFor, waitingOf, type DeadLetterPlace, type OperatorStatements } from "../../src/operator/index.js";
import { isNoStatement } from "../../src/shared/no-statement.js";
import { NOT_SUPPORTED } from "../support/render.js";
import { fifoBareRowLock, fifoRichLease, fifoRowLock, richAdvisory, richLease, richRowLock, seedByHand } from "../support/specs.js";

const now = new Date("2024-05-01T12:00:00.123Z");

/** One operator statement on the three engines, side by side. */
function perEngine(build: (ops: OperatorStatements) => CompiledQuery | readonly CompiledQuery[]) {
  const show = (q: CompiledQuery) => ({ sql: q.sql, parameters: q.parameters });
  const run = (ops: OperatorStatements) => {
    let built: CompiledQuery | readonly CompiledQuery[];
    try {
      built = build(ops);
    } catch (error) {
      // A statement the engine has none of refuses (its trait says so): shown as absent.
      if (isNoStatement(error)) return NOT_SUPPORTED;
      throw error;
    }
    return Array.isArray(built) ? built.map(show) : show(built as CompiledQuery);
  };
  return { postgres: run(operatorFor("postgres")), mysql: run(operatorFor("mysql")), sqlite: run(operatorFor("sqlite")) };
}

const deadTable = InboxSpec.table("jobs_dead", column("id").generated())
  .attempt(column("attempts"))
  .payload(column("payload"))
  .group(column("grp"))
  .data(column("last_error")).description;
const toTable: DeadLetterPlace = { kind: "table", destination: deadTable };
const toGroup: DeadLetterPlace = { kind: "group", group: "reports", deadGroup: "reports.dead" };

describe("operator: status", () => {
  test("countByState: every state in one pass, per group, against the host's now", () => {
    expect(perEngine((o) => o.countByState({ spec: richLease(), createdAt: "created_at" }, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "select \`grp\` as \`grp\`, count(*) as \`total\`, count(case when \`processed_at\` is not null then 1 end) as \`done\`, count(case when (\`processed_at\` is null and \`locked_until\` > ?) then 1 end) as \`leased\`, count(case when (\`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?) and \`retry_after\` > ?) then 1 end) as \`delayed\`, count(case when (\`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?) and (\`retry_after\` is null or \`retry_after\` <= ?)) then 1 end) as \`claimable\`, min(case when \`processed_at\` is null then \`created_at\` end) as \`oldest\`, max(\`attempt\`) as \`max_attempt\`, max(\`id\`) as \`max_id\` from \`jobs\` group by \`grp\` order by \`grp\`",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "select "grp" as "grp", count(*) as "total", count(case when "processed_at" is not null then 1 end) as "done", count(case when ("processed_at" is null and "locked_until" > $1) then 1 end) as "leased", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= $2) and "retry_after" > $3) then 1 end) as "delayed", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= $4) and ("retry_after" is null or "retry_after" <= $5)) then 1 end) as "claimable", min(case when "processed_at" is null then "created_at" end) as "oldest", max("attempt") as "max_attempt", max("id") as "max_id" from "jobs" group by "grp" order by "grp"",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "select "grp" as "grp", count(*) as "total", count(case when "processed_at" is not null then 1 end) as "done", count(case when ("processed_at" is null and "locked_until" > ?) then 1 end) as "leased", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= ?) and "retry_after" > ?) then 1 end) as "delayed", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= ?) and ("retry_after" is null or "retry_after" <= ?)) then 1 end) as "claimable", min(case when "processed_at" is null then "created_at" end) as "oldest", max("attempt") as "max_attempt", max("id") as "max_id" from "jobs" group by "grp" order by "grp"",
        },
      }
    `);
  });
  test("countByState without group, processedAt or created-at column", () => {
    expect(perEngine((o) => o.countByState({ spec: seedByHand }, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "select null as \`grp\`, count(*) as \`total\`, 0 as \`done\`, count(case when \`locked_until\` > ? then 1 end) as \`leased\`, 0 as \`delayed\`, count(case when (\`locked_until\` is null or \`locked_until\` <= ?) then 1 end) as \`claimable\`, null as \`oldest\`, max(\`attempt\`) as \`max_attempt\`, max(\`id\`) as \`max_id\` from \`report_jobs\`",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "select null as "grp", count(*) as "total", 0 as "done", count(case when "locked_until" > $1 then 1 end) as "leased", 0 as "delayed", count(case when ("locked_until" is null or "locked_until" <= $2) then 1 end) as "claimable", null as "oldest", max("attempt") as "max_attempt", max("id") as "max_id" from "report_jobs"",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "select null as "grp", count(*) as "total", 0 as "done", count(case when "locked_until" > ? then 1 end) as "leased", 0 as "delayed", count(case when ("locked_until" is null or "locked_until" <= ?) then 1 end) as "claimable", null as "oldest", max("attempt") as "max_attempt", max("id") as "max_id" from "report_jobs"",
        },
      }
    `);
  });
  test("attemptHistogram, and NOT_SUPPORTED without an attempt column", () => {
    expect(perEngine((o) => o.attemptHistogram(richRowLock()))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "select \`grp\` as \`grp\`, \`attempt\` as \`attempt\`, count(*) as \`rows\` from \`jobs\` where \`processed_at\` is null group by \`grp\`, \`attempt\` order by \`grp\`, \`attempt\`",
        },
        "postgres": {
          "parameters": [],
          "sql": "select "grp" as "grp", "attempt" as "attempt", count(*) as "rows" from "jobs" where "processed_at" is null group by "grp", "attempt" order by "grp", "attempt"",
        },
        "sqlite": {
          "parameters": [],
          "sql": "select "grp" as "grp", "attempt" as "attempt", count(*) as "rows" from "jobs" where "processed_at" is null group by "grp", "attempt" order by "grp", "attempt"",
        },
      }
    `);
    expect(() => operatorFor("postgres").attemptHistogram(InboxSpec.table("t", column("id")).description)).toThrow(
      /Declaration: no operator.attemptHistogram statement for this table: it has no attempt column/,
    );
  });
  test("expiringLeases", () => {
    expect(perEngine((o) => o.expiringLeases(seedByHand, now, new Date(now.getTime() + 30_000), 5))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:30.123",
            5,
          ],
          "sql": "select \`id\` as \`id\`, null as \`grp\`, \`locked_until\` as \`locked_until\`, \`attempt\` as \`attempt\` from \`report_jobs\` where \`locked_until\` > ? and \`locked_until\` <= ? order by \`locked_until\`, \`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:30.123Z,
            5,
          ],
          "sql": "select "id" as "id", null as "grp", "locked_until" as "locked_until", "attempt" as "attempt" from "report_jobs" where "locked_until" > $1 and "locked_until" <= $2 order by "locked_until", "id" limit $3",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:30.123Z",
            5,
          ],
          "sql": "select "id" as "id", null as "grp", "locked_until" as "locked_until", "attempt" as "attempt" from "report_jobs" where "locked_until" > ? and "locked_until" <= ? order by "locked_until", "id" limit ?",
        },
      }
    `);
  });
});

describe("operator: what is in work", () => {
  test("lockableProbe: a skipping lock over ready rows (FOR SHARE on Postgres, FOR UPDATE on MySQL; SQLite has no row locks)", () => {
    expect(perEngine((o) => o.lockableProbe(richRowLock(), now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
          ],
          "sql": "select \`id\` as \`id\`, \`grp\` as \`grp\` from \`jobs\` where (\`processed_at\` is null and (\`retry_after\` is null or \`retry_after\` <= ?)) for update skip locked",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "select "id" as "id", "grp" as "grp" from "jobs" where ("processed_at" is null and ("retry_after" is null or "retry_after" <= $1)) for share skip locked",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });
  test("advisoryCandidates: the key columns of ready rows", () => {
    expect(perEngine((o) => o.advisoryCandidates(richAdvisory(), now, 1000))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            1000,
          ],
          "sql": "select \`id\` as \`id\`, null as \`grp\`, \`customer_id\` as \`customer_id\` from \`jobs\` where (\`processed_at\` is null and (\`retry_after\` is null or \`retry_after\` <= ?)) order by \`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            1000,
          ],
          "sql": "select "id" as "id", null as "grp", "customer_id" as "customer_id" from "jobs" where ("processed_at" is null and ("retry_after" is null or "retry_after" <= $1)) order by "id" limit $2",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            1000,
          ],
          "sql": "select "id" as "id", null as "grp", "customer_id" as "customer_id" from "jobs" where ("processed_at" is null and ("retry_after" is null or "retry_after" <= ?)) order by "id" limit ?",
        },
      }
    `);
  });
  test("heldAdvisoryKeys: pg_locks on Postgres, IS_USED_LOCK on MySQL/MariaDB, unknown on SQLite", () => {
    expect(perEngine((o) => o.heldAdvisoryKeys(["jobs:report-acme", "jobs:report-zeta"], "app"))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "jobs:report-acme",
            "app.jobs:report-acme",
            "jobs:report-zeta",
            "app.jobs:report-zeta",
          ],
          "sql": "select \`k\`.\`key\` as \`key\` from (select ? as \`key\`, ? as \`lock_name\` union all select ? as \`key\`, ? as \`lock_name\`) as \`k\` where IS_USED_LOCK(\`k\`.\`lock_name\`) is not null",
        },
        "postgres": {
          "parameters": [
            [
              "jobs:report-acme",
              "jobs:report-zeta",
            ],
          ],
          "sql": "select "key" as "key" from unnest(cast($1 as text[])) as "key" where exists (select 1 as "one" from "pg_locks" as "l" where l.locktype = 'advisory' and l.granted and l.objsubid = 1 and l.database = (select oid from pg_database where datname = current_database()) and ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended("key", 0))",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });
});

describe("operator: rows", () => {
  test("peek by state and group", () => {
    expect(perEngine((o) => o.peek({ spec: richLease() }, { state: "delayed", now, group: "reports", limit: 20 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "reports",
            20,
          ],
          "sql": "select * from \`jobs\` where (\`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?) and \`retry_after\` > ?) and \`grp\` = ? order by \`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            "reports",
            20,
          ],
          "sql": "select * from "jobs" where ("processed_at" is null and ("locked_until" is null or "locked_until" <= $1) and "retry_after" > $2) and "grp" = $3 order by "id" limit $4",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "reports",
            20,
          ],
          "sql": "select * from "jobs" where ("processed_at" is null and ("locked_until" is null or "locked_until" <= ?) and "retry_after" > ?) and "grp" = ? order by "id" limit ?",
        },
      }
    `);
  });
  test("purge of done rows, and of given ids", () => {
    expect(perEngine((o) => o.purge({ spec: richRowLock() }, { state: "done", now }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "delete from \`jobs\` where \`processed_at\` is not null",
        },
        "postgres": {
          "parameters": [],
          "sql": "delete from "jobs" where "processed_at" is not null",
        },
        "sqlite": {
          "parameters": [],
          "sql": "delete from "jobs" where "processed_at" is not null",
        },
      }
    `);
    expect(perEngine((o) => o.purge({ spec: seedByHand }, { state: "all", now, ids: [3, 4] }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            3,
            4,
          ],
          "sql": "delete from \`report_jobs\` where \`id\` in (?, ?)",
        },
        "postgres": {
          "parameters": [
            3,
            4,
          ],
          "sql": "delete from "report_jobs" where "id" in ($1, $2)",
        },
        "sqlite": {
          "parameters": [
            3,
            4,
          ],
          "sql": "delete from "report_jobs" where "id" in (?, ?)",
        },
      }
    `);
  });
});

describe("operator: fifo groups (ready is the head only, waiting is behind it)", () => {
  test("countByState: claimable counts each group's head by the claim's own rule, due the rows ready or waiting (no head subquery)", () => {
    expect(perEngine((o) => o.countByState({ spec: fifoRichLease() }, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            1,
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "select \`grp\` as \`grp\`, count(*) as \`total\`, count(case when \`processed_at\` is not null then 1 end) as \`done\`, count(case when (\`processed_at\` is null and \`locked_until\` > ?) then 1 end) as \`leased\`, count(case when (\`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?) and \`retry_after\` > ?) then 1 end) as \`delayed\`, count(case when (\`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?) and (\`retry_after\` is null or \`retry_after\` <= ?) and \`fifo_jobs\`.\`id\` = (select \`fifo_head\`.\`id\` from \`fifo_jobs\` as \`fifo_head\` where (\`fifo_head\`.\`grp\` = \`fifo_jobs\`.\`grp\` and \`fifo_head\`.\`processed_at\` is null and (\`fifo_head\`.\`retry_after\` is null or \`fifo_head\`.\`retry_after\` <= ? or \`fifo_head\`.\`locked_until\` > ?)) order by case when \`fifo_head\`.\`locked_until\` > ? then 0 else 1 end asc, \`fifo_head\`.\`priority\` asc, \`fifo_head\`.\`retry_after\` asc, \`fifo_head\`.\`id\` asc limit ?)) then 1 end) as \`claimable\`, count(case when (\`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?) and (\`retry_after\` is null or \`retry_after\` <= ?)) then 1 end) as \`due\`, null as \`oldest\`, max(\`attempt\`) as \`max_attempt\`, max(\`id\`) as \`max_id\` from \`fifo_jobs\` group by \`grp\` order by \`grp\`",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            1,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "select "grp" as "grp", count(*) as "total", count(case when "processed_at" is not null then 1 end) as "done", count(case when ("processed_at" is null and "locked_until" > $1) then 1 end) as "leased", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= $2) and "retry_after" > $3) then 1 end) as "delayed", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= $4) and ("retry_after" is null or "retry_after" <= $5) and "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = "fifo_jobs"."grp" and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= $6 or "fifo_head"."locked_until" > $7)) order by case when "fifo_head"."locked_until" > $8 then 0 else 1 end asc, "fifo_head"."priority" asc, "fifo_head"."retry_after" asc nulls first, "fifo_head"."id" asc limit $9)) then 1 end) as "claimable", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= $10) and ("retry_after" is null or "retry_after" <= $11)) then 1 end) as "due", null as "oldest", max("attempt") as "max_attempt", max("id") as "max_id" from "fifo_jobs" group by "grp" order by "grp"",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            1,
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "select "grp" as "grp", count(*) as "total", count(case when "processed_at" is not null then 1 end) as "done", count(case when ("processed_at" is null and "locked_until" > ?) then 1 end) as "leased", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= ?) and "retry_after" > ?) then 1 end) as "delayed", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= ?) and ("retry_after" is null or "retry_after" <= ?) and "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = "fifo_jobs"."grp" and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= ? or "fifo_head"."locked_until" > ?)) order by case when "fifo_head"."locked_until" > ? then 0 else 1 end asc, "fifo_head"."priority" asc, "fifo_head"."retry_after" asc, "fifo_head"."id" asc limit ?)) then 1 end) as "claimable", count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= ?) and ("retry_after" is null or "retry_after" <= ?)) then 1 end) as "due", null as "oldest", max("attempt") as "max_attempt", max("id") as "max_id" from "fifo_jobs" group by "grp" order by "grp"",
        },
      }
    `);
  });
  test("countByState evaluates the head subquery once per row, on every engine", () => {
    for (const engine of ["postgres", "mysql", "sqlite"] as const) {
      const { sql } = operatorFor(engine).countByState({ spec: fifoRichLease() }, now);
      expect(sql.match(/ as .fifo_head. /g)).toHaveLength(1);
    }
  });
  test("waitingOf: due less claimable on a fifo table, null without fifo, an error naming the table for a row without the counts", () => {
    expect(waitingOf(fifoRichLease(), { grp: "a", claimable: "1", due: "4" })).toBe(3);
    expect(waitingOf(fifoRichLease(), { grp: "a", claimable: 0, due: 0 })).toBe(0);
    expect(waitingOf(richLease(), { grp: "a", claimable: "4" })).toBeNull();
    expect(() => waitingOf(fifoRichLease(), { grp: "a", claimable: "1", waiting: "3" })).toThrow(
      'waitingOf: a countByState row of the fifo table "fifo_jobs" has due and claimable counts; this one has grp, claimable, waiting',
    );
  });
  test("peek of waiting rows in the row-lock form (no lease: claim order alone picks the head)", () => {
    expect(perEngine((o) => o.peek({ spec: fifoRowLock() }, { state: "waiting", now, group: "reports", limit: 20 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            1,
            "reports",
            20,
          ],
          "sql": "select * from \`fifo_jobs\` where (\`processed_at\` is null and (\`retry_after\` is null or \`retry_after\` <= ?) and case when \`fifo_jobs\`.\`id\` = (select \`fifo_head\`.\`id\` from \`fifo_jobs\` as \`fifo_head\` where (\`fifo_head\`.\`grp\` = \`fifo_jobs\`.\`grp\` and \`fifo_head\`.\`processed_at\` is null and (\`fifo_head\`.\`retry_after\` is null or \`fifo_head\`.\`retry_after\` <= ?)) order by \`fifo_head\`.\`priority\` asc, \`fifo_head\`.\`retry_after\` asc, \`fifo_head\`.\`id\` asc limit ?) then 0 else 1 end = 1) and \`grp\` = ? order by \`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            1,
            "reports",
            20,
          ],
          "sql": "select * from "fifo_jobs" where ("processed_at" is null and ("retry_after" is null or "retry_after" <= $1) and case when "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = "fifo_jobs"."grp" and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= $2)) order by "fifo_head"."priority" asc, "fifo_head"."retry_after" asc nulls first, "fifo_head"."id" asc limit $3) then 0 else 1 end = 1) and "grp" = $4 order by "id" limit $5",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            1,
            "reports",
            20,
          ],
          "sql": "select * from "fifo_jobs" where ("processed_at" is null and ("retry_after" is null or "retry_after" <= ?) and case when "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = "fifo_jobs"."grp" and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= ?)) order by "fifo_head"."priority" asc, "fifo_head"."retry_after" asc, "fifo_head"."id" asc limit ?) then 0 else 1 end = 1) and "grp" = ? order by "id" limit ?",
        },
      }
    `);
  });
  test("ready on a fifo table with no state column is still narrowed to the heads", () => {
    expect(perEngine((o) => o.peek({ spec: fifoBareRowLock() }, { state: "ready", now, limit: 20 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            1,
            20,
          ],
          "sql": "select * from \`fifo_jobs\` where \`fifo_jobs\`.\`id\` = (select \`fifo_head\`.\`id\` from \`fifo_jobs\` as \`fifo_head\` where \`fifo_head\`.\`grp\` = \`fifo_jobs\`.\`grp\` order by \`fifo_head\`.\`priority\` asc, \`fifo_head\`.\`id\` asc limit ?) order by \`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            1,
            20,
          ],
          "sql": "select * from "fifo_jobs" where "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where "fifo_head"."grp" = "fifo_jobs"."grp" order by "fifo_head"."priority" asc, "fifo_head"."id" asc limit $1) order by "id" limit $2",
        },
        "sqlite": {
          "parameters": [
            1,
            20,
          ],
          "sql": "select * from "fifo_jobs" where "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where "fifo_head"."grp" = "fifo_jobs"."grp" order by "fifo_head"."priority" asc, "fifo_head"."id" asc limit ?) order by "id" limit ?",
        },
      }
    `);
  });
  test("purge of waiting rows chooses the ids in a derived table (MySQL refuses a DELETE whose subquery reads its target)", () => {
    expect(perEngine((o) => o.purge({ spec: fifoRichLease() }, { state: "waiting", now }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            1,
          ],
          "sql": "delete from \`fifo_jobs\` where \`id\` in (select \`fifo_rows\`.\`id\` from (select \`id\` from \`fifo_jobs\` where (\`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?) and (\`retry_after\` is null or \`retry_after\` <= ?) and case when \`fifo_jobs\`.\`id\` = (select \`fifo_head\`.\`id\` from \`fifo_jobs\` as \`fifo_head\` where (\`fifo_head\`.\`grp\` = \`fifo_jobs\`.\`grp\` and \`fifo_head\`.\`processed_at\` is null and (\`fifo_head\`.\`retry_after\` is null or \`fifo_head\`.\`retry_after\` <= ? or \`fifo_head\`.\`locked_until\` > ?)) order by case when \`fifo_head\`.\`locked_until\` > ? then 0 else 1 end asc, \`fifo_head\`.\`priority\` asc, \`fifo_head\`.\`retry_after\` asc, \`fifo_head\`.\`id\` asc limit ?) then 0 else 1 end = 1)) as \`fifo_rows\`)",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            1,
          ],
          "sql": "delete from "fifo_jobs" where "id" in (select "fifo_rows"."id" from (select "id" from "fifo_jobs" where ("processed_at" is null and ("locked_until" is null or "locked_until" <= $1) and ("retry_after" is null or "retry_after" <= $2) and case when "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = "fifo_jobs"."grp" and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= $3 or "fifo_head"."locked_until" > $4)) order by case when "fifo_head"."locked_until" > $5 then 0 else 1 end asc, "fifo_head"."priority" asc, "fifo_head"."retry_after" asc nulls first, "fifo_head"."id" asc limit $6) then 0 else 1 end = 1)) as "fifo_rows")",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            1,
          ],
          "sql": "delete from "fifo_jobs" where "id" in (select "fifo_rows"."id" from (select "id" from "fifo_jobs" where ("processed_at" is null and ("locked_until" is null or "locked_until" <= ?) and ("retry_after" is null or "retry_after" <= ?) and case when "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = "fifo_jobs"."grp" and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= ? or "fifo_head"."locked_until" > ?)) order by case when "fifo_head"."locked_until" > ? then 0 else 1 end asc, "fifo_head"."priority" asc, "fifo_head"."retry_after" asc, "fifo_head"."id" asc limit ?) then 0 else 1 end = 1)) as "fifo_rows")",
        },
      }
    `);
  });
  test("waiting does not exist on a table without fifo", () => {
    expect(operatorFor("postgres").peek({ spec: richLease() }, { state: "waiting", now, limit: 20 }).sql).toBe('select * from "jobs" where 1 = 0 order by "id" limit $1');
  });
});

describe("operator: dead letters", () => {
  test("a dead-letter table: lock a chunk, insert into the source, delete from the destination", () => {
    expect({
      lock: perEngine((o) => o.lockDeadLetterIds(richLease(), toTable, 500)),
      retry: perEngine((o) => o.retryDeadLetters(richLease(), toTable, [7, 8])),
    }).toMatchInlineSnapshot(`
      {
        "lock": {
          "mysql": {
            "parameters": [
              500,
            ],
            "sql": "select \`id\` as \`id\` from \`jobs_dead\` order by \`id\` limit ? for update",
          },
          "postgres": {
            "parameters": [
              500,
            ],
            "sql": "select "id" as "id" from "jobs_dead" order by "id" limit $1 for update",
          },
          "sqlite": {
            "parameters": [
              500,
            ],
            "sql": "select "id" as "id" from "jobs_dead" order by "id" limit ?",
          },
        },
        "retry": {
          "mysql": [
            {
              "parameters": [
                7,
                8,
              ],
              "sql": "insert into \`jobs\` (\`payload\`, \`grp\`) select \`payload\`, \`grp\` from \`jobs_dead\` where \`id\` in (?, ?) order by \`id\`",
            },
            {
              "parameters": [
                7,
                8,
              ],
              "sql": "delete from \`jobs_dead\` where \`id\` in (?, ?)",
            },
          ],
          "postgres": [
            {
              "parameters": [
                7,
                8,
              ],
              "sql": "insert into "jobs" ("payload", "grp") select "payload", "grp" from "jobs_dead" where "id" in ($1, $2) order by "id"",
            },
            {
              "parameters": [
                7,
                8,
              ],
              "sql": "delete from "jobs_dead" where "id" in ($1, $2)",
            },
          ],
          "sqlite": [
            {
              "parameters": [
                7,
                8,
              ],
              "sql": "insert into "jobs" ("payload", "grp") select "payload", "grp" from "jobs_dead" where "id" in (?, ?) order by "id"",
            },
            {
              "parameters": [
                7,
                8,
              ],
              "sql": "delete from "jobs_dead" where "id" in (?, ?)",
            },
          ],
        },
      }
    `);
  });
  test("a dead-letter table that generates no id holds the source's: the row goes back under it", () => {
    const keeping = InboxSpec.table("jobs_dead", column("id")).payload(column("payload")).group(column("grp")).description;
    const [insert] = operatorFor("postgres").retryDeadLetters(richLease(), { kind: "table", destination: keeping }, [7]);
    expect(insert?.sql).toBe('insert into "jobs" ("id", "payload", "grp") select "id", "payload", "grp" from "jobs_dead" where "id" in ($1) order by "id"');
  });
  test("a dead group: the group set back, attempt to its default, lease and delays cleared", () => {
    expect({
      peek: perEngine((o) => o.peekDeadLetters(richLease(), toGroup, 10)),
      count: perEngine((o) => o.countDeadLetters(richLease(), toGroup)),
      retry: perEngine((o) => o.retryDeadLetters(richLease(), toGroup, [7])),
      purge: perEngine((o) => o.purgeDeadLetters(richLease(), toGroup)),
    }).toMatchInlineSnapshot(`
      {
        "count": {
          "mysql": {
            "parameters": [
              "reports.dead",
            ],
            "sql": "select \`grp\` as \`grp\`, count(*) as \`rows\` from \`jobs\` where \`grp\` = ? group by \`grp\`",
          },
          "postgres": {
            "parameters": [
              "reports.dead",
            ],
            "sql": "select "grp" as "grp", count(*) as "rows" from "jobs" where "grp" = $1 group by "grp"",
          },
          "sqlite": {
            "parameters": [
              "reports.dead",
            ],
            "sql": "select "grp" as "grp", count(*) as "rows" from "jobs" where "grp" = ? group by "grp"",
          },
        },
        "peek": {
          "mysql": {
            "parameters": [
              "reports.dead",
              10,
            ],
            "sql": "select * from \`jobs\` where \`grp\` = ? order by \`id\` limit ?",
          },
          "postgres": {
            "parameters": [
              "reports.dead",
              10,
            ],
            "sql": "select * from "jobs" where "grp" = $1 order by "id" limit $2",
          },
          "sqlite": {
            "parameters": [
              "reports.dead",
              10,
            ],
            "sql": "select * from "jobs" where "grp" = ? order by "id" limit ?",
          },
        },
        "purge": {
          "mysql": {
            "parameters": [
              "reports.dead",
            ],
            "sql": "delete from \`jobs\` where \`grp\` = ?",
          },
          "postgres": {
            "parameters": [
              "reports.dead",
            ],
            "sql": "delete from "jobs" where "grp" = $1",
          },
          "sqlite": {
            "parameters": [
              "reports.dead",
            ],
            "sql": "delete from "jobs" where "grp" = ?",
          },
        },
        "retry": {
          "mysql": [
            {
              "parameters": [
                "reports",
                null,
                null,
                null,
                "reports.dead",
                7,
              ],
              "sql": "update \`jobs\` set \`grp\` = ?, \`locked_until\` = ?, \`retry_after\` = ?, \`processed_at\` = ?, \`attempt\` = default where \`grp\` = ? and \`id\` in (?)",
            },
          ],
          "postgres": [
            {
              "parameters": [
                "reports",
                null,
                null,
                null,
                "reports.dead",
                7,
              ],
              "sql": "update "jobs" set "grp" = $1, "locked_until" = $2, "retry_after" = $3, "processed_at" = $4, "attempt" = default where "grp" = $5 and "id" in ($6)",
            },
          ],
          "sqlite": [
            {
              "parameters": [
                "reports",
                null,
                null,
                null,
                "jobs",
                "attempt",
                "reports.dead",
                7,
              ],
              "sql": "update "jobs" set "grp" = ?, "locked_until" = ?, "retry_after" = ?, "processed_at" = ?, "attempt" = (select coalesce(cast(dflt_value as integer), 0) from pragma_table_info(?) where name = ?) where "grp" = ? and "id" in (?)",
            },
          ],
        },
      }
    `);
  });
  test("a dead group on a table without a group column is refused", () => {
    expect(() => operatorFor("sqlite").retryDeadLetters(seedByHand, toGroup, [1])).toThrow(/need a group column/);
  });
});
