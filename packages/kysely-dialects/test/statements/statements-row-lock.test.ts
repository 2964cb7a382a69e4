import { describe, expect, test } from "vitest";
import { dialectFor } from "../../src/index.js";
import { NOT_NEEDED, NOT_SUPPORTED, perEngine } from "../support/render.js";
import { fifoBareRowLock, fifoRowLock, richRowLock, simpleRowLock } from "../support/specs.js";

const now = new Date("2024-05-01T12:00:00.123Z");
const retryAt = new Date("2024-05-01T12:05:00.456Z");

describe("row lock (SQLite: NOT_SUPPORTED)", () => {
  test("claim, simple spec", () => {
    expect(perEngine((d) => d.rowLock.claim(simpleRowLock(), { limit: 5, now }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            5,
          ],
          "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\` from \`jobs\` order by \`jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            5,
          ],
          "sql": "with "picked" as (select "jobs"."id" from "jobs" order by "jobs"."id" asc limit $1 for update skip locked), "claimed" as (update "jobs" set "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", "payload") select * from "claimed" order by "id" asc",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("claim, fifo: the group's head, only while no other row of it is held (Postgres locks the group in the claim; MySQL/MariaDB after lockFifoGroup)", () => {
    expect(perEngine((d) => d.rowLock.claim(fifoRowLock(), { limit: 1, now, group: "reports", fifoLocked: 4 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "reports",
            "reports",
            "2024-05-01 12:00:00.123",
            1,
            "reports",
            "2024-05-01 12:00:00.123",
            4,
            1,
          ],
          "sql": "select \`fifo_jobs\`.\`id\`, \`fifo_jobs\`.\`attempt\`, \`fifo_jobs\`.\`payload\`, \`fifo_jobs\`.\`retry_after\`, \`fifo_jobs\`.\`processed_at\`, \`fifo_jobs\`.\`grp\`, \`fifo_jobs\`.\`priority\` from \`fifo_jobs\` where (\`fifo_jobs\`.\`processed_at\` is null and (\`fifo_jobs\`.\`retry_after\` is null or \`fifo_jobs\`.\`retry_after\` <= ?) and \`fifo_jobs\`.\`grp\` = ?) and (\`fifo_jobs\`.\`id\` = (select \`fifo_head\`.\`id\` from \`fifo_jobs\` as \`fifo_head\` where (\`fifo_head\`.\`grp\` = ? and \`fifo_head\`.\`processed_at\` is null and (\`fifo_head\`.\`retry_after\` is null or \`fifo_head\`.\`retry_after\` <= ?)) order by \`fifo_head\`.\`priority\` asc, \`fifo_head\`.\`retry_after\` asc, \`fifo_head\`.\`id\` asc limit ?) and (select count(*) as \`seen\` from \`fifo_jobs\` as \`fifo_seen\` where (\`fifo_seen\`.\`grp\` = ? and \`fifo_seen\`.\`processed_at\` is null and (\`fifo_seen\`.\`retry_after\` is null or \`fifo_seen\`.\`retry_after\` <= ?))) = ?) order by \`fifo_jobs\`.\`priority\` asc, \`fifo_jobs\`.\`retry_after\` asc, \`fifo_jobs\`.\`id\` asc limit ?",
        },
        "postgres": {
          "parameters": [
            "reports",
            2024-05-01T12:00:00.123Z,
            1,
            "reports",
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "with "fifo_group" as (select "fifo_jobs"."id", "fifo_jobs"."priority", "fifo_jobs"."retry_after" from "fifo_jobs" where ("fifo_jobs"."grp" = $1 and "fifo_jobs"."processed_at" is null and ("fifo_jobs"."retry_after" is null or "fifo_jobs"."retry_after" <= $2)) for update skip locked), "picked" as (select "fifo_group"."id" from "fifo_group" where ("fifo_group"."id" = (select "fifo_head"."id" from "fifo_group" as "fifo_head" order by "fifo_head"."priority" asc, "fifo_head"."retry_after" asc nulls first, "fifo_head"."id" asc limit $3) and (select count(*) as "locked" from "fifo_group") = (select count(*) as "seen" from "fifo_jobs" as "fifo_seen" where ("fifo_seen"."grp" = $4 and "fifo_seen"."processed_at" is null and ("fifo_seen"."retry_after" is null or "fifo_seen"."retry_after" <= $5))))), "claimed" as (update "fifo_jobs" set "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", "payload", "retry_after", "processed_at", "grp", "priority") select * from "claimed" order by "priority" asc, "retry_after" asc nulls first, "id" asc",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("claim, fifo without an attempt column: nothing to write, the head is selected", () => {
    expect(perEngine((d) => d.rowLock.claim(fifoBareRowLock(), { limit: 1, now, group: "reports", fifoLocked: 4 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "reports",
            "reports",
            1,
            "reports",
            4,
            1,
          ],
          "sql": "select \`fifo_jobs\`.\`id\`, \`fifo_jobs\`.\`payload\`, \`fifo_jobs\`.\`grp\`, \`fifo_jobs\`.\`priority\` from \`fifo_jobs\` where \`fifo_jobs\`.\`grp\` = ? and (\`fifo_jobs\`.\`id\` = (select \`fifo_head\`.\`id\` from \`fifo_jobs\` as \`fifo_head\` where \`fifo_head\`.\`grp\` = ? order by \`fifo_head\`.\`priority\` asc, \`fifo_head\`.\`id\` asc limit ?) and (select count(*) as \`seen\` from \`fifo_jobs\` as \`fifo_seen\` where \`fifo_seen\`.\`grp\` = ?) = ?) order by \`fifo_jobs\`.\`priority\` asc, \`fifo_jobs\`.\`id\` asc limit ?",
        },
        "postgres": {
          "parameters": [
            "reports",
            1,
            "reports",
          ],
          "sql": "with "fifo_group" as (select "fifo_jobs"."id", "fifo_jobs"."priority" from "fifo_jobs" where "fifo_jobs"."grp" = $1 for update skip locked), "picked" as (select "fifo_group"."id" from "fifo_group" where ("fifo_group"."id" = (select "fifo_head"."id" from "fifo_group" as "fifo_head" order by "fifo_head"."priority" asc, "fifo_head"."id" asc limit $2) and (select count(*) as "locked" from "fifo_group") = (select count(*) as "seen" from "fifo_jobs" as "fifo_seen" where "fifo_seen"."grp" = $3))) select "fifo_jobs"."id", "fifo_jobs"."payload", "fifo_jobs"."grp", "fifo_jobs"."priority" from "fifo_jobs" where "fifo_jobs"."id" in (select "id" from "picked") for update",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("lockFifoGroup (MySQL/MariaDB only)", () => {
    expect(perEngine((d) => d.rowLock.lockFifoGroup(fifoRowLock(), { limit: 1, now, group: "reports" }), "NOT_NEEDED (null)")).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "reports",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "select \`fifo_jobs\`.\`id\` from \`fifo_jobs\` where (\`fifo_jobs\`.\`grp\` = ? and \`fifo_jobs\`.\`processed_at\` is null and (\`fifo_jobs\`.\`retry_after\` is null or \`fifo_jobs\`.\`retry_after\` <= ?)) for update skip locked",
        },
        "postgres": "NOT_NEEDED (null)",
        "sqlite": "NOT_NEEDED (null)",
      }
    `);
  });

  test("claim, every role (retryAfter, processedAt, group, priority)", () => {
    expect(perEngine((d) => d.rowLock.claim(richRowLock(), { limit: 5, now, group: "reports" }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "reports",
            5,
          ],
          "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\`, \`jobs\`.\`retry_after\`, \`jobs\`.\`processed_at\`, \`jobs\`.\`grp\`, \`jobs\`.\`priority\` from \`jobs\` where (\`jobs\`.\`processed_at\` is null and (\`jobs\`.\`retry_after\` is null or \`jobs\`.\`retry_after\` <= ?) and \`jobs\`.\`grp\` = ?) order by \`jobs\`.\`priority\` asc, \`jobs\`.\`retry_after\` asc, \`jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            "reports",
            5,
          ],
          "sql": "with "picked" as (select "jobs"."id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $1) and "jobs"."grp" = $2) order by "jobs"."priority" asc, "jobs"."retry_after" asc nulls first, "jobs"."id" asc limit $3 for update skip locked), "claimed" as (update "jobs" set "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", "payload", "retry_after", "processed_at", "grp", "priority") select * from "claimed" order by "priority" asc, "retry_after" asc nulls first, "id" asc",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("countAttempts", () => {
    expect(perEngine((d) => d.rowLock.countAttempts(simpleRowLock(), [1, 2]), NOT_NEEDED)).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            1,
            2,
          ],
          "sql": "update \`jobs\` set \`attempt\` = \`attempt\` + 1 where \`id\` in (?, ?)",
        },
        "postgres": "NOT_NEEDED (null: the claim did it)",
        "sqlite": "NOT_NEEDED (null: the claim did it)",
      }
    `);
  });

  test("uncountAttempts: a stopped shared claim's unstarted rows leave as they came", () => {
    expect(perEngine((d) => d.rowLock.uncountAttempts(simpleRowLock(), [1, 2]))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            1,
            2,
          ],
          "sql": "update \`jobs\` set \`attempt\` = \`attempt\` - 1 where \`id\` in (?, ?)",
        },
        "postgres": {
          "parameters": [
            1,
            2,
          ],
          "sql": "update "jobs" set "attempt" = "attempt" - 1 where "id" in ($1, $2)",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("settleAck: delete, or mark processedAt", () => {
    expect({
      delete: perEngine((d) => d.rowLock.settleAck(simpleRowLock(), 7, now)),
      processedAt: perEngine((d) => d.rowLock.settleAck(richRowLock(), 7, now)),
    }).toMatchInlineSnapshot(`
      {
        "delete": {
          "mysql": {
            "parameters": [
              7,
            ],
            "sql": "delete from \`jobs\` where \`id\` = ?",
          },
          "postgres": {
            "parameters": [
              7,
            ],
            "sql": "delete from "jobs" where "id" = $1",
          },
          "sqlite": "NOT_SUPPORTED",
        },
        "processedAt": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:00:00.123",
              7,
            ],
            "sql": "update \`jobs\` set \`processed_at\` = ? where \`id\` = ?",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:00:00.123Z,
              7,
            ],
            "sql": "update "jobs" set "processed_at" = $1 where "id" = $2",
          },
          "sqlite": "NOT_SUPPORTED",
        },
      }
    `);
  });

  test("settleAckMany: the rows of a shared claim in one statement, delete or mark processedAt; Postgres: one array parameter for any number of ids; MySQL/MariaDB: a DELETE ordered by the key and limited to the list", () => {
    expect({
      delete: perEngine((d) => d.rowLock.settleAckMany(simpleRowLock(), [7, 8, 9], now)),
      processedAt: perEngine((d) => d.rowLock.settleAckMany(richRowLock(), [7, 8], now)),
    }).toMatchInlineSnapshot(`
      {
        "delete": {
          "mysql": {
            "parameters": [
              7,
              8,
              9,
              3,
            ],
            "sql": "delete from \`jobs\` where \`id\` in (?, ?, ?) order by \`id\` limit ?",
          },
          "postgres": {
            "parameters": [
              [
                7,
                8,
                9,
              ],
            ],
            "sql": "delete from "jobs" where "id" = any($1)",
          },
          "sqlite": "NOT_SUPPORTED",
        },
        "processedAt": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:00:00.123",
              7,
              8,
            ],
            "sql": "update \`jobs\` set \`processed_at\` = ? where \`id\` in (?, ?)",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:00:00.123Z,
              [
                7,
                8,
              ],
            ],
            "sql": "update "jobs" set "processed_at" = $1 where "id" = any($2)",
          },
          "sqlite": "NOT_SUPPORTED",
        },
      }
    `);
    const pg = perEngine((d) => d.rowLock.settleAckMany(simpleRowLock(), [1, 2, 3, 4, 5], now)) as Record<string, { sql: string }>;
    const pgThree = perEngine((d) => d.rowLock.settleAckMany(simpleRowLock(), [7, 8, 9], now)) as Record<string, { sql: string }>;
    expect(pg["postgres"]?.sql).toBe(pgThree["postgres"]?.sql);
    expect(() => dialectFor("postgres").rowLock.settleAckMany(simpleRowLock(), [], now)).toThrow(/no ids/);
  });

  test("settleRetry: hidden until retryAt (a retry at once writes nothing: the commit gives the row back, and there is no statement to ask for)", () => {
    expect({
      later: perEngine((d) => d.rowLock.settleRetry(richRowLock(), 7, retryAt)),
    }).toMatchInlineSnapshot(`
      {
        "later": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:05:00.456",
              7,
            ],
            "sql": "update \`jobs\` set \`retry_after\` = ? where \`id\` = ?",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:05:00.456Z,
              7,
            ],
            "sql": "update "jobs" set "retry_after" = $1 where "id" = $2",
          },
          "sqlite": "NOT_SUPPORTED",
        },
      }
    `);
    expect(NOT_SUPPORTED).toBe("NOT_SUPPORTED");
  });

  test("a retry at a later time without a retryAfter column is refused", () => {
    expect(() => perEngine((d) => d.rowLock.settleRetry(simpleRowLock(), 7, retryAt))).toThrow(/retryAfter column/);
  });

  test("settleSnooze: hidden until retryAt where a retryAfter column holds it, and the claim's attempt given back in the same statement", () => {
    expect({
      later: perEngine((d) => d.rowLock.settleSnooze(richRowLock(), 7, retryAt)),
      refundOnly: perEngine((d) => d.rowLock.settleSnooze(richRowLock(), 7, null)),
    }).toMatchInlineSnapshot(`
      {
        "later": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:05:00.456",
              7,
            ],
            "sql": "update \`jobs\` set \`retry_after\` = ?, \`attempt\` = \`attempt\` - 1 where \`id\` = ?",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:05:00.456Z,
              7,
            ],
            "sql": "update "jobs" set "retry_after" = $1, "attempt" = "attempt" - 1 where "id" = $2",
          },
          "sqlite": "NOT_SUPPORTED",
        },
        "refundOnly": {
          "mysql": {
            "parameters": [
              7,
            ],
            "sql": "update \`jobs\` set \`attempt\` = \`attempt\` - 1 where \`id\` = ?",
          },
          "postgres": {
            "parameters": [
              7,
            ],
            "sql": "update "jobs" set "attempt" = "attempt" - 1 where "id" = $1",
          },
          "sqlite": "NOT_SUPPORTED",
        },
      }
    `);
  });
});

describe("transactions on a held connection", () => {
  test("begin, commit, rollback: what Kysely's startTransaction() sends, READ COMMITTED on MySQL/MariaDB (the runtime sends them on a connection it holds)", () => {
    const ends = (engine: "postgres" | "mysql" | "sqlite") => {
      const t = dialectFor(engine).transaction;
      return { begin: t.begin.map((q) => [q.sql, q.parameters]), commit: t.commit.sql, rollback: t.rollback.sql };
    };
    expect({ postgres: ends("postgres"), mysql: ends("mysql"), sqlite: ends("sqlite") }).toEqual({
      postgres: { begin: [["begin", []]], commit: "commit", rollback: "rollback" },
      mysql: {
        begin: [
          ["set transaction isolation level read committed", []],
          ["begin", []],
        ],
        commit: "commit",
        rollback: "rollback",
      },
      sqlite: { begin: [["begin", []]], commit: "commit", rollback: "rollback" },
    });
  });
});
