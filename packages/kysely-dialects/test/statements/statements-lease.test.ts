import { describe, expect, test } from "vitest";
import { NOT_SUPPORTED, perEngine } from "../support/render.js";
import { mysqlDialect, postgresDialect } from "../../src/index.js";
import { fifoLease, fifoRichLease, richLease, seedByHand, seedDeclared } from "../support/specs.js";

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
          "sql": "with "picked" as (select "report_jobs"."id" from "report_jobs" where ("report_jobs"."locked_until" is null or "report_jobs"."locked_until" <= $1) order by "report_jobs"."id" asc limit $2 for update skip locked), "claimed" as (update "report_jobs" set "locked_until" = $3, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "payload") select * from "claimed" order by "id" asc",
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
          "sql": "with "picked" as (select "jobs"."id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $1) and "jobs"."grp" = $2 and ("jobs"."locked_until" is null or "jobs"."locked_until" <= $3)) order by "jobs"."priority" asc, "jobs"."retry_after" asc nulls first, "jobs"."id" asc limit $4 for update skip locked), "claimed" as (update "jobs" set "locked_until" = $5, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "payload", "retry_after", "processed_at", "grp", "priority") select * from "claimed" order by "priority" asc, "retry_after" asc nulls first, "id" asc",
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

  test("claim, fifo group: the head of the group, only while no other row of it is in work (MySQL: see lockFifoGroup)", () => {
    expect(perEngine((d) => d.lease.claim(fifoLease(), { limit: 5, now, until, precision: 3, group: "g1" }))).toMatchInlineSnapshot(`
      {
        "mysql": "NOT_SUPPORTED",
        "postgres": {
          "parameters": [
            "g1",
            2024-05-01T12:00:00.123Z,
            1,
            2024-05-01T12:00:00.123Z,
            "g1",
            2024-05-01T12:01:00.123Z,
          ],
          "sql": "with "fifo_group" as (select "fifo_jobs"."id", "fifo_jobs"."locked_until" from "fifo_jobs" where "fifo_jobs"."grp" = $1 for update skip locked), "picked" as (select "fifo_group"."id" from "fifo_group" where ("fifo_group"."id" = (select "fifo_head"."id" from "fifo_group" as "fifo_head" order by case when "fifo_head"."locked_until" > $2 then 0 else 1 end asc, "fifo_head"."id" asc limit $3) and ("fifo_group"."locked_until" is null or "fifo_group"."locked_until" <= $4) and (select count(*) as "locked" from "fifo_group") = (select count(*) as "seen" from "fifo_jobs" as "fifo_seen" where "fifo_seen"."grp" = $5))), "claimed" as (update "fifo_jobs" set "locked_until" = $6, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "grp") select * from "claimed" order by "id" asc",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            1,
            5,
          ],
          "sql": "update "fifo_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (select "fifo_jobs"."id" from "fifo_jobs" where ("fifo_jobs"."grp" = ? and ("fifo_jobs"."locked_until" is null or "fifo_jobs"."locked_until" <= ?)) and "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where "fifo_head"."grp" = ? order by case when "fifo_head"."locked_until" > ? then 0 else 1 end asc, "fifo_head"."id" asc limit ?) order by "fifo_jobs"."id" asc limit ?) returning "id", "attempt", "locked_until", "grp"",
        },
      }
    `);
  });

  test("claim, fifo with priority, retryAfter and processedAt: a row in work first, then claim order among due rows", () => {
    expect(perEngine((d) => d.lease.claim(fifoRichLease(), { limit: 5, now, until, precision: 3, group: "g1" }))).toMatchInlineSnapshot(`
      {
        "mysql": "NOT_SUPPORTED",
        "postgres": {
          "parameters": [
            "g1",
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            1,
            2024-05-01T12:00:00.123Z,
            "g1",
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:01:00.123Z,
          ],
          "sql": "with "fifo_group" as (select "fifo_jobs"."id", "fifo_jobs"."priority", "fifo_jobs"."retry_after", "fifo_jobs"."locked_until" from "fifo_jobs" where ("fifo_jobs"."grp" = $1 and "fifo_jobs"."processed_at" is null and ("fifo_jobs"."retry_after" is null or "fifo_jobs"."retry_after" <= $2 or "fifo_jobs"."locked_until" > $3)) for update skip locked), "picked" as (select "fifo_group"."id" from "fifo_group" where ("fifo_group"."id" = (select "fifo_head"."id" from "fifo_group" as "fifo_head" order by case when "fifo_head"."locked_until" > $4 then 0 else 1 end asc, "fifo_head"."priority" asc, "fifo_head"."retry_after" asc nulls first, "fifo_head"."id" asc limit $5) and ("fifo_group"."locked_until" is null or "fifo_group"."locked_until" <= $6) and (select count(*) as "locked" from "fifo_group") = (select count(*) as "seen" from "fifo_jobs" as "fifo_seen" where ("fifo_seen"."grp" = $7 and "fifo_seen"."processed_at" is null and ("fifo_seen"."retry_after" is null or "fifo_seen"."retry_after" <= $8 or "fifo_seen"."locked_until" > $9))))), "claimed" as (update "fifo_jobs" set "locked_until" = $10, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "payload", "retry_after", "processed_at", "grp", "priority") select * from "claimed" order by "priority" asc, "retry_after" asc nulls first, "id" asc",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            1,
            5,
          ],
          "sql": "update "fifo_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (select "fifo_jobs"."id" from "fifo_jobs" where ("fifo_jobs"."processed_at" is null and ("fifo_jobs"."retry_after" is null or "fifo_jobs"."retry_after" <= ?) and "fifo_jobs"."grp" = ? and ("fifo_jobs"."locked_until" is null or "fifo_jobs"."locked_until" <= ?)) and "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = ? and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= ? or "fifo_head"."locked_until" > ?)) order by case when "fifo_head"."locked_until" > ? then 0 else 1 end asc, "fifo_head"."priority" asc, "fifo_head"."retry_after" asc, "fifo_head"."id" asc limit ?) order by "fifo_jobs"."priority" asc, "fifo_jobs"."retry_after" asc, "fifo_jobs"."id" asc limit ?) returning "id", "attempt", "locked_until", "payload", "retry_after", "processed_at", "grp", "priority"",
        },
      }
    `);
  });

  test("lockFifoGroup: MySQL/MariaDB lock the group's rows first; null where the claim does it (Postgres) or one writer runs (SQLite)", () => {
    expect(perEngine((d) => d.lease.lockFifoGroup(fifoRichLease(), { limit: 5, now, group: "g1" }), "NOT_NEEDED (null)")).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "g1",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "select \`fifo_jobs\`.\`id\` from \`fifo_jobs\` where (\`fifo_jobs\`.\`grp\` = ? and \`fifo_jobs\`.\`processed_at\` is null and (\`fifo_jobs\`.\`retry_after\` is null or \`fifo_jobs\`.\`retry_after\` <= ? or \`fifo_jobs\`.\`locked_until\` > ?)) for update skip locked",
        },
        "postgres": "NOT_NEEDED (null)",
        "sqlite": "NOT_NEEDED (null)",
      }
    `);
    expect(perEngine((d) => d.lease.lockFifoGroup(richLease(), { limit: 5, now, group: "g1" }), "NOT_NEEDED (null)")).toMatchInlineSnapshot(`
      {
        "mysql": "NOT_NEEDED (null)",
        "postgres": "NOT_NEEDED (null)",
        "sqlite": "NOT_NEEDED (null)",
      }
    `);
  });

  test("selectClaimable, fifo: the head, read without a lock, only if the group has no rows but the fifoLocked ones", () => {
    expect(perEngine((d) => d.lease.selectClaimable(fifoRichLease(), { limit: 5, now, group: "g1", fifoLocked: 3 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "g1",
            "2024-05-01 12:00:00.123",
            "g1",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            1,
            "g1",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            3,
            5,
          ],
          "sql": "select \`fifo_jobs\`.\`id\`, \`fifo_jobs\`.\`attempt\`, \`fifo_jobs\`.\`locked_until\`, \`fifo_jobs\`.\`payload\`, \`fifo_jobs\`.\`retry_after\`, \`fifo_jobs\`.\`processed_at\`, \`fifo_jobs\`.\`grp\`, \`fifo_jobs\`.\`priority\` from \`fifo_jobs\` where (\`fifo_jobs\`.\`processed_at\` is null and (\`fifo_jobs\`.\`retry_after\` is null or \`fifo_jobs\`.\`retry_after\` <= ?) and \`fifo_jobs\`.\`grp\` = ? and (\`fifo_jobs\`.\`locked_until\` is null or \`fifo_jobs\`.\`locked_until\` <= ?)) and (\`fifo_jobs\`.\`id\` = (select \`fifo_head\`.\`id\` from \`fifo_jobs\` as \`fifo_head\` where (\`fifo_head\`.\`grp\` = ? and \`fifo_head\`.\`processed_at\` is null and (\`fifo_head\`.\`retry_after\` is null or \`fifo_head\`.\`retry_after\` <= ? or \`fifo_head\`.\`locked_until\` > ?)) order by case when \`fifo_head\`.\`locked_until\` > ? then 0 else 1 end asc, \`fifo_head\`.\`priority\` asc, \`fifo_head\`.\`retry_after\` asc, \`fifo_head\`.\`id\` asc limit ?) and (select count(*) as \`seen\` from \`fifo_jobs\` as \`fifo_seen\` where (\`fifo_seen\`.\`grp\` = ? and \`fifo_seen\`.\`processed_at\` is null and (\`fifo_seen\`.\`retry_after\` is null or \`fifo_seen\`.\`retry_after\` <= ? or \`fifo_seen\`.\`locked_until\` > ?))) = ?) order by \`fifo_jobs\`.\`priority\` asc, \`fifo_jobs\`.\`retry_after\` asc, \`fifo_jobs\`.\`id\` asc limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            "g1",
            2024-05-01T12:00:00.123Z,
            "g1",
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            1,
            "g1",
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            3,
            5,
          ],
          "sql": "select "fifo_jobs"."id", "fifo_jobs"."attempt", "fifo_jobs"."locked_until", "fifo_jobs"."payload", "fifo_jobs"."retry_after", "fifo_jobs"."processed_at", "fifo_jobs"."grp", "fifo_jobs"."priority" from "fifo_jobs" where ("fifo_jobs"."processed_at" is null and ("fifo_jobs"."retry_after" is null or "fifo_jobs"."retry_after" <= $1) and "fifo_jobs"."grp" = $2 and ("fifo_jobs"."locked_until" is null or "fifo_jobs"."locked_until" <= $3)) and ("fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = $4 and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= $5 or "fifo_head"."locked_until" > $6)) order by case when "fifo_head"."locked_until" > $7 then 0 else 1 end asc, "fifo_head"."priority" asc, "fifo_head"."retry_after" asc nulls first, "fifo_head"."id" asc limit $8) and (select count(*) as "seen" from "fifo_jobs" as "fifo_seen" where ("fifo_seen"."grp" = $9 and "fifo_seen"."processed_at" is null and ("fifo_seen"."retry_after" is null or "fifo_seen"."retry_after" <= $10 or "fifo_seen"."locked_until" > $11))) = $12) order by "fifo_jobs"."priority" asc, "fifo_jobs"."retry_after" asc nulls first, "fifo_jobs"."id" asc limit $13",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            1,
            5,
          ],
          "sql": "select "fifo_jobs"."id", "fifo_jobs"."attempt", "fifo_jobs"."locked_until", "fifo_jobs"."payload", "fifo_jobs"."retry_after", "fifo_jobs"."processed_at", "fifo_jobs"."grp", "fifo_jobs"."priority" from "fifo_jobs" where ("fifo_jobs"."processed_at" is null and ("fifo_jobs"."retry_after" is null or "fifo_jobs"."retry_after" <= ?) and "fifo_jobs"."grp" = ? and ("fifo_jobs"."locked_until" is null or "fifo_jobs"."locked_until" <= ?)) and "fifo_jobs"."id" = (select "fifo_head"."id" from "fifo_jobs" as "fifo_head" where ("fifo_head"."grp" = ? and "fifo_head"."processed_at" is null and ("fifo_head"."retry_after" is null or "fifo_head"."retry_after" <= ? or "fifo_head"."locked_until" > ?)) order by case when "fifo_head"."locked_until" > ? then 0 else 1 end asc, "fifo_head"."priority" asc, "fifo_head"."retry_after" asc, "fifo_head"."id" asc limit ?) order by "fifo_jobs"."priority" asc, "fifo_jobs"."retry_after" asc, "fifo_jobs"."id" asc limit ?",
        },
      }
    `);
  });

  test("selectClaimable, fifo on MySQL/MariaDB without lockFifoGroup's count is refused", () => {
    expect(() => mysqlDialect.lease.selectClaimable(fifoRichLease(), { limit: 5, now, group: "g1" })).toThrow(/runs lockFifoGroup first/);
    expect(() => postgresDialect.lease.claim(fifoRichLease(), { limit: 5, now, until, precision: 3 })).toThrow(/names its group/);
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

  test("settleSnooze: settleRetry's release and the claim's attempt given back, in the one statement the token fences", () => {
    const retryAt = new Date("2024-05-01T12:10:00.000Z");
    expect({
      laterWithRetryAfter: perEngine((d) => d.lease.settleSnooze(richLease(), held, retryAt, 3)),
      laterInLeaseColumn: perEngine((d) => d.lease.settleSnooze(seedByHand, held, retryAt, 0)),
    }).toMatchInlineSnapshot(`
      {
        "laterInLeaseColumn": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:10:00",
              7,
              "2024-05-01 12:00:30",
            ],
            "sql": "update \`report_jobs\` set \`locked_until\` = ?, \`attempt\` = \`attempt\` - 1 where \`id\` = ? and \`locked_until\` = ?",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:10:00.000Z,
              7,
              2024-05-01T12:00:30.000Z,
            ],
            "sql": "update "report_jobs" set "locked_until" = $1, "attempt" = "attempt" - 1 where "id" = $2 and "locked_until" = $3",
          },
          "sqlite": {
            "parameters": [
              "2024-05-01T12:10:00.000Z",
              7,
              "2024-05-01T12:00:30.000Z",
            ],
            "sql": "update "report_jobs" set "locked_until" = ?, "attempt" = "attempt" - 1 where "id" = ? and "locked_until" = ?",
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
            "sql": "update \`jobs\` set \`locked_until\` = ?, \`retry_after\` = ?, \`attempt\` = \`attempt\` - 1 where \`id\` = ? and \`locked_until\` = ?",
          },
          "postgres": {
            "parameters": [
              null,
              2024-05-01T12:10:00.000Z,
              7,
              2024-05-01T12:00:30.789Z,
            ],
            "sql": "update "jobs" set "locked_until" = $1, "retry_after" = $2, "attempt" = "attempt" - 1 where "id" = $3 and "locked_until" = $4",
          },
          "sqlite": {
            "parameters": [
              null,
              "2024-05-01T12:10:00.000Z",
              7,
              "2024-05-01T12:00:30.789Z",
            ],
            "sql": "update "jobs" set "locked_until" = ?, "retry_after" = ?, "attempt" = "attempt" - 1 where "id" = ? and "locked_until" = ?",
          },
        },
      }
    `);
  });
});
