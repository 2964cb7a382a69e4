import { describe, expect, test } from "vitest";
import { perEngine } from "../support/render.js";
import { deadJobs, deadKeepingId, groupedLease, richAdvisory, richRowLock, seedByHand } from "../support/specs.js";

const held = { id: 7, held: new Date("2024-05-01T12:00:30.789Z") };
const record = { lastError: "Error: boom", attempts: 3 };

describe("dead letters", () => {
  test("lease: to a table, fenced by the held token (insert from a select of the held row, then delete)", () => {
    expect(perEngine((d) => d.deadLetter.toTable(seedByHand, deadJobs, 7, record, held, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "Error: boom",
            3,
            7,
            "2024-05-01 12:00:30.789",
          ],
          "sql": "insert into \`dead_jobs\` (\`payload\`, \`last_error\`, \`failed_attempts\`) select \`report_jobs\`.\`payload\` as \`payload\`, ? as \`last_error\`, ? + 0 as \`failed_attempts\` from \`report_jobs\` where \`report_jobs\`.\`id\` = ? and \`report_jobs\`.\`locked_until\` = ?",
        },
        "postgres": {
          "parameters": [
            "Error: boom",
            3,
            7,
            2024-05-01T12:00:30.789Z,
          ],
          "sql": "insert into "dead_jobs" ("payload", "last_error", "failed_attempts") select "report_jobs"."payload" as "payload", $1 as "last_error", $2 + 0 as "failed_attempts" from "report_jobs" where "report_jobs"."id" = $3 and "report_jobs"."locked_until" = $4",
        },
        "sqlite": {
          "parameters": [
            "Error: boom",
            3,
            7,
            "2024-05-01T12:00:30.789Z",
          ],
          "sql": "insert into "dead_jobs" ("payload", "last_error", "failed_attempts") select "report_jobs"."payload" as "payload", ? as "last_error", ? + 0 as "failed_attempts" from "report_jobs" where "report_jobs"."id" = ? and "report_jobs"."locked_until" = ?",
        },
      }
    `);
    expect(perEngine((d) => d.deadLetter.removeMoved(seedByHand, 7, held, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
            "2024-05-01 12:00:30.789",
          ],
          "sql": "delete from \`report_jobs\` where \`report_jobs\`.\`id\` = ? and \`report_jobs\`.\`locked_until\` = ?",
        },
        "postgres": {
          "parameters": [
            7,
            2024-05-01T12:00:30.789Z,
          ],
          "sql": "delete from "report_jobs" where "report_jobs"."id" = $1 and "report_jobs"."locked_until" = $2",
        },
        "sqlite": {
          "parameters": [
            7,
            "2024-05-01T12:00:30.789Z",
          ],
          "sql": "delete from "report_jobs" where "report_jobs"."id" = ? and "report_jobs"."locked_until" = ?",
        },
      }
    `);
  });

  test("row lock and advisory: to a table that keeps the source id, copies attempt and a data column of the same name (the claim's transaction fences it)", () => {
    const source = richAdvisory();
    expect(perEngine((d) => d.deadLetter.toTable(source, deadKeepingId, 7, record))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "Error: boom",
            7,
          ],
          "sql": "insert into \`dead_kept\` (\`id\`, \`attempt\`, \`payload\`, \`customer_id\`, \`last_error\`) select \`jobs\`.\`id\` as \`id\`, \`jobs\`.\`attempt\` as \`attempt\`, \`jobs\`.\`payload\` as \`payload\`, \`jobs\`.\`customer_id\` as \`customer_id\`, ? as \`last_error\` from \`jobs\` where \`jobs\`.\`id\` = ?",
        },
        "postgres": {
          "parameters": [
            "Error: boom",
            7,
          ],
          "sql": "insert into "dead_kept" ("id", "attempt", "payload", "customer_id", "last_error") select "jobs"."id" as "id", "jobs"."attempt" as "attempt", "jobs"."payload" as "payload", "jobs"."customer_id" as "customer_id", $1 as "last_error" from "jobs" where "jobs"."id" = $2",
        },
        "sqlite": {
          "parameters": [
            "Error: boom",
            7,
          ],
          "sql": "insert into "dead_kept" ("id", "attempt", "payload", "customer_id", "last_error") select "jobs"."id" as "id", "jobs"."attempt" as "attempt", "jobs"."payload" as "payload", "jobs"."customer_id" as "customer_id", ? as "last_error" from "jobs" where "jobs"."id" = ?",
        },
      }
    `);
    expect(perEngine((d) => d.deadLetter.removeMoved(richRowLock(), 7))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
          ],
          "sql": "delete from \`jobs\` where \`jobs\`.\`id\` = ?",
        },
        "postgres": {
          "parameters": [
            7,
          ],
          "sql": "delete from "jobs" where "jobs"."id" = $1",
        },
        "sqlite": {
          "parameters": [
            7,
          ],
          "sql": "delete from "jobs" where "jobs"."id" = ?",
        },
      }
    `);
  });

  test("no attempt count known: the column gets NULL", () => {
    expect(perEngine((d) => d.deadLetter.toTable(seedByHand, deadJobs, 7, { lastError: null, attempts: null })).postgres).toMatchInlineSnapshot(`
      {
        "parameters": [
          null,
          null,
          7,
        ],
        "sql": "insert into "dead_jobs" ("payload", "last_error", "failed_attempts") select "report_jobs"."payload" as "payload", $1 as "last_error", $2 as "failed_attempts" from "report_jobs" where "report_jobs"."id" = $3",
      }
    `);
  });

  test("to a group of the same table: lease form clears the lease and matches the token; row lock and advisory set the group only", () => {
    expect(perEngine((d) => d.deadLetter.toGroup(groupedLease, 7, "dead", record, held, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "dead",
            null,
            7,
            "2024-05-01 12:00:30.789",
          ],
          "sql": "update \`jobs\` set \`grp\` = ?, \`locked_until\` = ? where \`jobs\`.\`id\` = ? and \`jobs\`.\`locked_until\` = ?",
        },
        "postgres": {
          "parameters": [
            "dead",
            null,
            7,
            2024-05-01T12:00:30.789Z,
          ],
          "sql": "update "jobs" set "grp" = $1, "locked_until" = $2 where "jobs"."id" = $3 and "jobs"."locked_until" = $4",
        },
        "sqlite": {
          "parameters": [
            "dead",
            null,
            7,
            "2024-05-01T12:00:30.789Z",
          ],
          "sql": "update "jobs" set "grp" = ?, "locked_until" = ? where "jobs"."id" = ? and "jobs"."locked_until" = ?",
        },
      }
    `);
    expect(perEngine((d) => d.deadLetter.toGroup(richRowLock(), 7, "dead", record))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "dead",
            7,
          ],
          "sql": "update \`jobs\` set \`grp\` = ? where \`jobs\`.\`id\` = ?",
        },
        "postgres": {
          "parameters": [
            "dead",
            7,
          ],
          "sql": "update "jobs" set "grp" = $1 where "jobs"."id" = $2",
        },
        "sqlite": {
          "parameters": [
            "dead",
            7,
          ],
          "sql": "update "jobs" set "grp" = ? where "jobs"."id" = ?",
        },
      }
    `);
  });

  test("a group move on a table without a group column is refused", () => {
    expect(() => perEngine((d) => d.deadLetter.toGroup(seedByHand, 7, "dead", record))).toThrow(/group column/);
  });

  test("claims leave out the ids this process parked", () => {
    const now = new Date("2024-05-01T12:00:00.123Z");
    expect(perEngine((d) => d.rowLock.claim(richRowLock(), { limit: 1, now, exclude: [3, 4] }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            3,
            4,
            1,
          ],
          "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\`, \`jobs\`.\`retry_after\`, \`jobs\`.\`processed_at\`, \`jobs\`.\`grp\`, \`jobs\`.\`priority\` from \`jobs\` where (\`jobs\`.\`processed_at\` is null and (\`jobs\`.\`retry_after\` is null or \`jobs\`.\`retry_after\` <= ?) and \`jobs\`.\`id\` not in (?, ?)) order by \`jobs\`.\`priority\` asc, \`jobs\`.\`retry_after\` asc, \`jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            3,
            4,
            1,
          ],
          "sql": "with "picked" as (select "jobs"."id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $1) and "jobs"."id" not in ($2, $3)) order by "jobs"."priority" asc, "jobs"."retry_after" asc nulls first, "jobs"."id" asc limit $4 for update skip locked), "claimed" as (update "jobs" set "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", "payload", "retry_after", "processed_at", "grp", "priority") select * from "claimed" order by "priority" asc, "retry_after" asc nulls first, "id" asc",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
    expect(perEngine((d) => d.advisory.selectCandidates(richAdvisory(), { limit: 64, now, exclude: [3] })).sqlite).toMatchInlineSnapshot(`
      {
        "parameters": [
          "2024-05-01T12:00:00.123Z",
          3,
          64,
        ],
        "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= ?) and "jobs"."id" not in (?)) order by "jobs"."retry_after" asc, "jobs"."id" asc limit ?",
      }
    `);
  });
});
