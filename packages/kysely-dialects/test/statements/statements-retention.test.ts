import { column, InboxSpec } from "@sqlinbox/core";
import { describe, expect, test } from "vitest";
import { operatorFor } from "../../src/operator/index.js";
import { perEngine } from "../support/render.js";
import { richLease, seedByHand } from "../support/specs.js";

const before = new Date("2024-05-01T12:00:00.123Z");
const done = InboxSpec.table("done_jobs", column("id").generated()).payload(column("payload")).processedAt(column("processed_at")).description;
const deadWithTime = InboxSpec.table("dead_jobs", column("id").generated()).payload(column("payload")).lastError(column("last_error")).processedAt(column("dead_at")).description;

describe("retention", () => {
  test("prune: a bounded batch of the oldest processed rows (Postgres: an array of the ids a select picks, skipping locked rows; SQLite: the ids of a select; MySQL/MariaDB: the delete's own limit)", () => {
    expect(perEngine((d) => d.retention.prune(done, { before, limit: 500 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            500,
          ],
          "sql": "delete from \`done_jobs\` where \`processed_at\` < ? order by \`processed_at\` limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            500,
          ],
          "sql": "delete from "done_jobs" where "id" = any(array((select "id" from "done_jobs" where "processed_at" < $1 order by "processed_at" limit $2 for update skip locked)))",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            500,
          ],
          "sql": "delete from "done_jobs" where "id" in (select "id" from "done_jobs" where "processed_at" < ? order by "processed_at" limit ?)",
        },
      }
    `);
  });

  test("prune of a group's rows: the group first, as the retention index (and MySQL's claim index) leads with it", () => {
    expect(perEngine((d) => d.retention.prune(richLease(), { before, limit: 500, group: "g1" }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "g1",
            "2024-05-01 12:00:00.123",
            500,
          ],
          "sql": "delete from \`jobs\` where \`grp\` = ? and \`processed_at\` < ? order by \`processed_at\` limit ?",
        },
        "postgres": {
          "parameters": [
            "g1",
            2024-05-01T12:00:00.123Z,
            500,
          ],
          "sql": "delete from "jobs" where "id" = any(array((select "id" from "jobs" where "grp" = $1 and "processed_at" < $2 order by "processed_at" limit $3 for update skip locked)))",
        },
        "sqlite": {
          "parameters": [
            "g1",
            "2024-05-01T12:00:00.123Z",
            500,
          ],
          "sql": "delete from "jobs" where "id" in (select "id" from "jobs" where "grp" = ? and "processed_at" < ? order by "processed_at" limit ?)",
        },
      }
    `);
  });

  test("prune refuses a table with no processedAt column: its ack deletes the row", () => {
    expect(() => perEngine((d) => d.retention.prune(seedByHand, { before, limit: 500 }))).toThrow(/needs a processedAt column/);
  });

  test("a move into a dead-letter table with a processedAt column stamps it with the move's time, cast to the column's type", () => {
    expect(perEngine((d) => d.deadLetter.toTable(seedByHand, deadWithTime, 7, { lastError: "boom", attempts: null, at: before })).postgres).toMatchInlineSnapshot(`
      {
        "parameters": [
          "boom",
          2024-05-01T12:00:00.123Z,
          7,
        ],
        "sql": "insert into "dead_jobs" ("payload", "last_error", "dead_at") select "report_jobs"."payload" as "payload", $1 as "last_error", cast($2 as timestamptz) as "dead_at" from "report_jobs" where "report_jobs"."id" = $3",
      }
    `);
    expect(perEngine((d) => d.deadLetter.toTable(seedByHand, deadWithTime, 7, { lastError: "boom", attempts: null, at: before })).mysql).toMatchInlineSnapshot(`
      {
        "parameters": [
          "boom",
          "2024-05-01 12:00:00.123",
          7,
        ],
        "sql": "insert into \`dead_jobs\` (\`payload\`, \`last_error\`, \`dead_at\`) select \`report_jobs\`.\`payload\` as \`payload\`, ? as \`last_error\`, cast(? as datetime(3)) as \`dead_at\` from \`report_jobs\` where \`report_jobs\`.\`id\` = ?",
      }
    `);
  });

  test("operator: done rows handled before a time, counted and purged (sqlinbox purge --older-than)", () => {
    const ops = operatorFor("postgres");
    expect(ops.countRows({ spec: done }, { state: "done", now: before, processedBefore: before }).sql).toMatchInlineSnapshot(
      `"select count(*) as "rows" from "done_jobs" where "processed_at" is not null and "processed_at" < $1"`,
    );
    expect(ops.purge({ spec: done }, { state: "done", now: before, processedBefore: before }).sql).toMatchInlineSnapshot(
      `"delete from "done_jobs" where "processed_at" is not null and "processed_at" < $1"`,
    );
    expect(() => ops.purge({ spec: seedByHand }, { state: "all", now: before, processedBefore: before })).toThrow(/need a processedAt column/);
  });
});
