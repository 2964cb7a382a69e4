import { describe, expect, test } from "vitest";
import { NOT_SUPPORTED, perEngine } from "./render.js";
import { fifoLease, richLease, seedByHand, seedDeclared } from "./specs.js";

const now = new Date("2024-05-01T12:00:00.123Z");
const until = new Date("2024-05-01T12:01:00.123Z");
const held = { id: 7, held: new Date("2024-05-01T12:00:30.789Z") };

describe("lease", () => {
  test("both ways to describe the seed's table give the same statements", () => {
    expect(perEngine((d) => d.lease.claim(seedDeclared, { limit: 5, now, until, precision: 3 }))).toEqual(
      perEngine((d) => d.lease.claim(seedByHand, { limit: 5, now, until, precision: 3 })),
    );
  });

  test("claim, seed spec (MySQL: NOT_SUPPORTED in one statement, see selectClaimable + stampClaimed)", () => {
    expect(perEngine((d) => d.lease.claim(seedByHand, { limit: 5, now, until, precision: 3 }))).toMatchInlineSnapshot(`
      {
        "mysql": "NOT_SUPPORTED",
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            5,
            2024-05-01T12:01:00.123Z,
          ],
          "sql": "with "picked" as (select "report_jobs"."id" from "report_jobs" where ("report_jobs"."locked_until" is null or "report_jobs"."locked_until" <= $1) order by "report_jobs"."id" asc limit $2 for update skip locked), "claimed" as (update "report_jobs" set "locked_until" = $3, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", "locked_until", "payload") select * from "claimed" order by "id" asc",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.123Z",
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "update "report_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (select "report_jobs"."id" from "report_jobs" where ("report_jobs"."locked_until" is null or "report_jobs"."locked_until" <= ?) order by "report_jobs"."id" asc limit ?) returning "id", "attempt", "locked_until", "payload"",
        },
      }
    `);
  });

  test("claim, every role", () => {
    expect(perEngine((d) => d.lease.claim(richLease(), { limit: 5, now, until, precision: 0, group: "g1" }))).toMatchInlineSnapshot(`
      {
        "mysql": "NOT_SUPPORTED",
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            "g1",
            2024-05-01T12:00:00.123Z,
            5,
            2024-05-01T12:01:00.000Z,
          ],
          "sql": "with "picked" as (select "jobs"."id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $1) and "jobs"."grp" = $2 and ("jobs"."locked_until" is null or "jobs"."locked_until" <= $3)) order by "jobs"."priority" asc, "jobs"."retry_after" asc nulls first, "jobs"."id" asc limit $4 for update skip locked), "claimed" as (update "jobs" set "locked_until" = $5, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", "locked_until", "payload", "retry_after", "processed_at", "grp", "priority") select * from "claimed" order by "priority" asc, "retry_after" asc nulls first, "id" asc",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.000Z",
            "2024-05-01T12:00:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "update "jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (select "jobs"."id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= ?) and "jobs"."grp" = ? and ("jobs"."locked_until" is null or "jobs"."locked_until" <= ?)) order by "jobs"."priority" asc, "jobs"."retry_after" asc, "jobs"."id" asc limit ?) returning "id", "attempt", "locked_until", "payload", "retry_after", "processed_at", "grp", "priority"",
        },
      }
    `);
  });

  test("claim, fifo group: only the head of a group", () => {
    expect(perEngine((d) => d.lease.claim(fifoLease(), { limit: 5, now, until, precision: 3, group: "g1" }))).toMatchInlineSnapshot(`
      {
        "mysql": "NOT_SUPPORTED",
        "postgres": {
          "parameters": [
            "g1",
            2024-05-01T12:00:00.123Z,
            5,
            2024-05-01T12:01:00.123Z,
          ],
          "sql": "with "picked" as (select "fifo_jobs"."id" from "fifo_jobs" where ("fifo_jobs"."grp" = $1 and ("fifo_jobs"."locked_until" is null or "fifo_jobs"."locked_until" <= $2) and "fifo_jobs"."id" = (select min("fifo_head"."id") as "head" from "fifo_jobs" as "fifo_head" where "fifo_head"."grp" = "fifo_jobs"."grp")) order by "fifo_jobs"."id" asc limit $3 for update skip locked), "claimed" as (update "fifo_jobs" set "locked_until" = $4, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", "locked_until", "grp") select * from "claimed" order by "id" asc",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "update "fifo_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (select "fifo_jobs"."id" from "fifo_jobs" where ("fifo_jobs"."grp" = ? and ("fifo_jobs"."locked_until" is null or "fifo_jobs"."locked_until" <= ?) and "fifo_jobs"."id" = (select min("fifo_head"."id") as "head" from "fifo_jobs" as "fifo_head" where "fifo_head"."grp" = "fifo_jobs"."grp")) order by "fifo_jobs"."id" asc limit ?) returning "id", "attempt", "locked_until", "grp"",
        },
      }
    `);
  });

  test("selectClaimable (first half of the two-statement claim)", () => {
    expect(perEngine((d) => d.lease.selectClaimable(seedByHand, { limit: 5, now }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            5,
          ],
          "sql": "select \`report_jobs\`.\`id\`, \`report_jobs\`.\`attempt\`, \`report_jobs\`.\`locked_until\`, \`report_jobs\`.\`payload\` from \`report_jobs\` where (\`report_jobs\`.\`locked_until\` is null or \`report_jobs\`.\`locked_until\` <= ?) order by \`report_jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            5,
          ],
          "sql": "select "report_jobs"."id", "report_jobs"."attempt", "report_jobs"."locked_until", "report_jobs"."payload" from "report_jobs" where ("report_jobs"."locked_until" is null or "report_jobs"."locked_until" <= $1) order by "report_jobs"."id" asc limit $2 for update skip locked",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "select "report_jobs"."id", "report_jobs"."attempt", "report_jobs"."locked_until", "report_jobs"."payload" from "report_jobs" where ("report_jobs"."locked_until" is null or "report_jobs"."locked_until" <= ?) order by "report_jobs"."id" asc limit ?",
        },
      }
    `);
  });

  test("stampClaimed (second half)", () => {
    expect(perEngine((d) => d.lease.stampClaimed(seedByHand, [1, 2], until, 0))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:01:00",
            1,
            2,
          ],
          "sql": "update \`report_jobs\` set \`locked_until\` = ?, \`attempt\` = \`attempt\` + 1 where \`id\` in (?, ?)",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:01:00.000Z,
            1,
            2,
          ],
          "sql": "update "report_jobs" set "locked_until" = $1, "attempt" = "attempt" + 1 where "id" in ($2, $3)",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.000Z",
            1,
            2,
          ],
          "sql": "update "report_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (?, ?)",
        },
      }
    `);
  });

  test("extend: one statement, each row only while it holds its token", () => {
    const leases = [held, { id: 8, held: new Date("2024-05-01T12:00:31.000Z") }];
    expect(perEngine((d) => d.lease.extend(seedByHand, leases, until, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:01:00.123",
            7,
            "2024-05-01 12:00:30.789",
            8,
            "2024-05-01 12:00:31.000",
          ],
          "sql": "update \`report_jobs\` set \`locked_until\` = ? where ((\`id\` = ? and \`locked_until\` = ?) or (\`id\` = ? and \`locked_until\` = ?))",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:01:00.123Z,
            7,
            2024-05-01T12:00:30.789Z,
            8,
            2024-05-01T12:00:31.000Z,
          ],
          "sql": "update "report_jobs" set "locked_until" = $1 where (("id" = $2 and "locked_until" = $3) or ("id" = $4 and "locked_until" = $5)) returning "id"",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.123Z",
            7,
            "2024-05-01T12:00:30.789Z",
            8,
            "2024-05-01T12:00:31.000Z",
          ],
          "sql": "update "report_jobs" set "locked_until" = ? where (("id" = ? and "locked_until" = ?) or ("id" = ? and "locked_until" = ?)) returning "id"",
        },
      }
    `);
  });

  test("extend with nothing in work matches nothing", () => {
    expect(perEngine((d) => d.lease.extend(seedByHand, [], until, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:01:00.123",
          ],
          "sql": "update \`report_jobs\` set \`locked_until\` = ? where false",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:01:00.123Z,
          ],
          "sql": "update "report_jobs" set "locked_until" = $1 where false returning "id"",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.123Z",
          ],
          "sql": "update "report_jobs" set "locked_until" = ? where false returning "id"",
        },
      }
    `);
  });

  test("readLeases", () => {
    expect(perEngine((d) => d.lease.readLeases(seedByHand, [7, 8]))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
            8,
          ],
          "sql": "select \`id\`, \`locked_until\` from \`report_jobs\` where \`id\` in (?, ?)",
        },
        "postgres": {
          "parameters": [
            7,
            8,
          ],
          "sql": "select "id", "locked_until" from "report_jobs" where "id" in ($1, $2)",
        },
        "sqlite": {
          "parameters": [
            7,
            8,
          ],
          "sql": "select "id", "locked_until" from "report_jobs" where "id" in (?, ?)",
        },
      }
    `);
  });

  test("settleAck carries the token", () => {
    expect({
      delete: perEngine((d) => d.lease.settleAck(seedByHand, held, now, 3)),
      processedAt: perEngine((d) => d.lease.settleAck(richLease(), held, now, 6)),
    }).toMatchInlineSnapshot(`
      {
        "delete": {
          "mysql": {
            "parameters": [
              7,
              "2024-05-01 12:00:30.789",
            ],
            "sql": "delete from \`report_jobs\` where \`id\` = ? and \`locked_until\` = ?",
          },
          "postgres": {
            "parameters": [
              7,
              2024-05-01T12:00:30.789Z,
            ],
            "sql": "delete from "report_jobs" where "id" = $1 and "locked_until" = $2",
          },
          "sqlite": {
            "parameters": [
              7,
              "2024-05-01T12:00:30.789Z",
            ],
            "sql": "delete from "report_jobs" where "id" = ? and "locked_until" = ?",
          },
        },
        "processedAt": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:00:00.123",
              7,
              "2024-05-01 12:00:30.789000",
            ],
            "sql": "update \`jobs\` set \`processed_at\` = ? where \`id\` = ? and \`locked_until\` = ?",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:00:00.123Z,
              7,
              2024-05-01T12:00:30.789Z,
            ],
            "sql": "update "jobs" set "processed_at" = $1 where "id" = $2 and "locked_until" = $3",
          },
          "sqlite": {
            "parameters": [
              "2024-05-01T12:00:00.123Z",
              7,
              "2024-05-01T12:00:30.789Z",
            ],
            "sql": "update "jobs" set "processed_at" = ? where "id" = ? and "locked_until" = ?",
          },
        },
      }
    `);
  });

  test("settleRetry releases without counting: NULL, retryAt in retry_after, or retryAt in the lease column", () => {
    const retryAt = new Date("2024-05-01T12:10:00.000Z");
    expect({
      atOnce: perEngine((d) => d.lease.settleRetry(seedByHand, held, null, 3)),
      laterWithRetryAfter: perEngine((d) => d.lease.settleRetry(richLease(), held, retryAt, 3)),
      laterInLeaseColumn: perEngine((d) => d.lease.settleRetry(seedByHand, held, retryAt, 0)),
    }).toMatchInlineSnapshot(`
      {
        "atOnce": {
          "mysql": {
            "parameters": [
              null,
              7,
              "2024-05-01 12:00:30.789",
            ],
            "sql": "update \`report_jobs\` set \`locked_until\` = ? where \`id\` = ? and \`locked_until\` = ?",
          },
          "postgres": {
            "parameters": [
              null,
              7,
              2024-05-01T12:00:30.789Z,
            ],
            "sql": "update "report_jobs" set "locked_until" = $1 where "id" = $2 and "locked_until" = $3",
          },
          "sqlite": {
            "parameters": [
              null,
              7,
              "2024-05-01T12:00:30.789Z",
            ],
            "sql": "update "report_jobs" set "locked_until" = ? where "id" = ? and "locked_until" = ?",
          },
        },
        "laterInLeaseColumn": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:10:00",
              7,
              "2024-05-01 12:00:30",
            ],
            "sql": "update \`report_jobs\` set \`locked_until\` = ? where \`id\` = ? and \`locked_until\` = ?",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:10:00.000Z,
              7,
              2024-05-01T12:00:30.000Z,
            ],
            "sql": "update "report_jobs" set "locked_until" = $1 where "id" = $2 and "locked_until" = $3",
          },
          "sqlite": {
            "parameters": [
              "2024-05-01T12:10:00.000Z",
              7,
              "2024-05-01T12:00:30.000Z",
            ],
            "sql": "update "report_jobs" set "locked_until" = ? where "id" = ? and "locked_until" = ?",
          },
        },
        "laterWithRetryAfter": {
          "mysql": {
            "parameters": [
              null,
              "2024-05-01 12:10:00.000",
              7,
              "2024-05-01 12:00:30.789",
            ],
            "sql": "update \`jobs\` set \`locked_until\` = ?, \`retry_after\` = ? where \`id\` = ? and \`locked_until\` = ?",
          },
          "postgres": {
            "parameters": [
              null,
              2024-05-01T12:10:00.000Z,
              7,
              2024-05-01T12:00:30.789Z,
            ],
            "sql": "update "jobs" set "locked_until" = $1, "retry_after" = $2 where "id" = $3 and "locked_until" = $4",
          },
          "sqlite": {
            "parameters": [
              null,
              "2024-05-01T12:10:00.000Z",
              7,
              "2024-05-01T12:00:30.789Z",
            ],
            "sql": "update "jobs" set "locked_until" = ?, "retry_after" = ? where "id" = ? and "locked_until" = ?",
          },
        },
      }
    `);
    expect(NOT_SUPPORTED).toBe("NOT_SUPPORTED");
  });
  // Rows 7 and 9 were claimed together (one token), row 8 by another claim: one group per token.
  const batch = [held, { id: 8, held: new Date("2024-05-01T12:00:31.000Z") }, { id: 9, held: held.held }];

  test("settleAckMany: one statement, each row only with its own token, grouped by token (MySQL: no RETURNING, see selectHeld)", () => {
    expect({
      delete: perEngine((d) => d.lease.settleAckMany(seedByHand, batch, now, 3)),
      processedAt: perEngine((d) => d.lease.settleAckMany(richLease(), batch, now, 6)),
      oneToken: perEngine((d) => d.lease.settleAckMany(seedByHand, [held, { id: 9, held: held.held }], now, 3)),
    }).toMatchInlineSnapshot(`
      {
        "delete": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:00:30.789",
              7,
              9,
              "2024-05-01 12:00:31.000",
              8,
            ],
            "sql": "delete from \`report_jobs\` where ((\`locked_until\` = ? and \`id\` in (?, ?)) or (\`locked_until\` = ? and \`id\` = ?))",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:00:30.789Z,
              [
                7,
                9,
              ],
              2024-05-01T12:00:31.000Z,
              [
                8,
              ],
            ],
            "sql": "delete from "report_jobs" where (("locked_until" = $1 and "id" = any($2)) or ("locked_until" = $3 and "id" = any($4))) returning "id"",
          },
          "sqlite": {
            "parameters": [
              "2024-05-01T12:00:30.789Z",
              7,
              9,
              "2024-05-01T12:00:31.000Z",
              8,
            ],
            "sql": "delete from "report_jobs" where (("locked_until" = ? and "id" in (?, ?)) or ("locked_until" = ? and "id" = ?)) returning "id"",
          },
        },
        "oneToken": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:00:30.789",
              7,
              9,
            ],
            "sql": "delete from \`report_jobs\` where (\`locked_until\` = ? and \`id\` in (?, ?))",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:00:30.789Z,
              [
                7,
                9,
              ],
            ],
            "sql": "delete from "report_jobs" where ("locked_until" = $1 and "id" = any($2)) returning "id"",
          },
          "sqlite": {
            "parameters": [
              "2024-05-01T12:00:30.789Z",
              7,
              9,
            ],
            "sql": "delete from "report_jobs" where ("locked_until" = ? and "id" in (?, ?)) returning "id"",
          },
        },
        "processedAt": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:00:00.123",
              "2024-05-01 12:00:30.789000",
              7,
              9,
              "2024-05-01 12:00:31.000000",
              8,
            ],
            "sql": "update \`jobs\` set \`processed_at\` = ? where ((\`locked_until\` = ? and \`id\` in (?, ?)) or (\`locked_until\` = ? and \`id\` = ?))",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:00:00.123Z,
              2024-05-01T12:00:30.789Z,
              [
                7,
                9,
              ],
              2024-05-01T12:00:31.000Z,
              [
                8,
              ],
            ],
            "sql": "update "jobs" set "processed_at" = $1 where (("locked_until" = $2 and "id" = any($3)) or ("locked_until" = $4 and "id" = any($5))) returning "id"",
          },
          "sqlite": {
            "parameters": [
              "2024-05-01T12:00:00.123Z",
              "2024-05-01T12:00:30.789Z",
              7,
              9,
              "2024-05-01T12:00:31.000Z",
              8,
            ],
            "sql": "update "jobs" set "processed_at" = ? where (("locked_until" = ? and "id" in (?, ?)) or ("locked_until" = ? and "id" = ?)) returning "id"",
          },
        },
      }
    `);
  });

  test("selectHeld: the leases still held, locked until the transaction ends (SQLite: no lock clause)", () => {
    expect(perEngine((d) => d.lease.selectHeld(seedByHand, batch, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:30.789",
            7,
            9,
            "2024-05-01 12:00:31.000",
            8,
          ],
          "sql": "select \`id\` from \`report_jobs\` where ((\`locked_until\` = ? and \`id\` in (?, ?)) or (\`locked_until\` = ? and \`id\` = ?)) for update",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:30.789Z,
            [
              7,
              9,
            ],
            2024-05-01T12:00:31.000Z,
            [
              8,
            ],
          ],
          "sql": "select "id" from "report_jobs" where (("locked_until" = $1 and "id" = any($2)) or ("locked_until" = $3 and "id" = any($4))) for update",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:30.789Z",
            7,
            9,
            "2024-05-01T12:00:31.000Z",
            8,
          ],
          "sql": "select "id" from "report_jobs" where (("locked_until" = ? and "id" in (?, ?)) or ("locked_until" = ? and "id" = ?))",
        },
      }
    `);
  });

  test("releaseUnstarted: gives rows back and undoes the claim's attempt, each only while it holds its token", () => {
    expect(perEngine((d) => d.lease.releaseUnstarted(seedByHand, batch, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            null,
            "2024-05-01 12:00:30.789",
            7,
            9,
            "2024-05-01 12:00:31.000",
            8,
          ],
          "sql": "update \`report_jobs\` set \`locked_until\` = ?, \`attempt\` = \`attempt\` - 1 where ((\`locked_until\` = ? and \`id\` in (?, ?)) or (\`locked_until\` = ? and \`id\` = ?))",
        },
        "postgres": {
          "parameters": [
            null,
            2024-05-01T12:00:30.789Z,
            [
              7,
              9,
            ],
            2024-05-01T12:00:31.000Z,
            [
              8,
            ],
          ],
          "sql": "update "report_jobs" set "locked_until" = $1, "attempt" = "attempt" - 1 where (("locked_until" = $2 and "id" = any($3)) or ("locked_until" = $4 and "id" = any($5))) returning "id"",
        },
        "sqlite": {
          "parameters": [
            null,
            "2024-05-01T12:00:30.789Z",
            7,
            9,
            "2024-05-01T12:00:31.000Z",
            8,
          ],
          "sql": "update "report_jobs" set "locked_until" = ?, "attempt" = "attempt" - 1 where (("locked_until" = ? and "id" in (?, ?)) or ("locked_until" = ? and "id" = ?)) returning "id"",
        },
      }
    `);
  });

  test("batched statements with no leases match nothing", () => {
    expect({
      ack: perEngine((d) => d.lease.settleAckMany(seedByHand, [], now, 3)),
      held: perEngine((d) => d.lease.selectHeld(seedByHand, [], 3)),
    }).toMatchInlineSnapshot(`
      {
        "ack": {
          "mysql": {
            "parameters": [],
            "sql": "delete from \`report_jobs\` where false",
          },
          "postgres": {
            "parameters": [],
            "sql": "delete from "report_jobs" where false returning "id"",
          },
          "sqlite": {
            "parameters": [],
            "sql": "delete from "report_jobs" where false returning "id"",
          },
        },
        "held": {
          "mysql": {
            "parameters": [],
            "sql": "select \`id\` from \`report_jobs\` where false for update",
          },
          "postgres": {
            "parameters": [],
            "sql": "select "id" from "report_jobs" where false for update",
          },
          "sqlite": {
            "parameters": [],
            "sql": "select "id" from "report_jobs" where false",
          },
        },
      }
    `);
  });
});
