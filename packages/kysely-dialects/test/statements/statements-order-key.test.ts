import { describe, expect, test } from "vitest";
import { mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect } from "../../src/index.js";
import { perEngine } from "../support/render.js";
import { fifoLease, orderedLease, orderedRichLease, orderedRichRowLock, seedByHand } from "../support/specs.js";

const now = new Date("2024-05-01T12:00:00.123Z");
const until = new Date("2024-05-01T12:01:00.123Z");

describe("order key: each key's head among the due rows", () => {
  test("lease claim, one row of a key at a time, and none while another row of the key holds a live lease (MySQL: selectClaimable, then stampClaimed)", () => {
    expect(perEngine((d) => d.lease.claim(orderedLease(), { limit: 5, now, until, precision: 3 }))).toMatchInlineSnapshot(`
      {
        "mysql": "NOT_SUPPORTED",
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            1,
            1,
            2024-05-01T12:00:00.123Z,
            5,
            2024-05-01T12:01:00.123Z,
          ],
          "sql": "with "picked" as (select "ledger_jobs"."id" from "ledger_jobs" where ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= $1) and ("ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" order by "order_head"."id" asc limit $2) and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased" where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."id" <> "ledger_jobs"."id" order by "order_leased"."locked_until" desc nulls last limit $3) > $4, false)) order by "ledger_jobs"."id" asc limit $5 for update skip locked), "claimed" as (update "ledger_jobs" set "locked_until" = $6, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "account_id", "payload") select * from "claimed" order by "id" asc",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.123Z",
            "2024-05-01T12:00:00.123Z",
            1,
            1,
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "update "ledger_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (select "ledger_jobs"."id" from "ledger_jobs" where ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= ?) and ("ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" order by "order_head"."id" asc limit ?) and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased" where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."id" <> "ledger_jobs"."id" order by "order_leased"."locked_until" desc limit ?) > ?, false)) order by "ledger_jobs"."id" asc limit ?) returning "id", "attempt", "locked_until", "account_id", "payload"",
        },
      }
    `);
    expect(perEngine((d) => d.lease.selectClaimable(orderedLease(), { limit: 5, now }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            1,
            1,
            "2024-05-01 12:00:00.123",
            5,
          ],
          "sql": "select \`ledger_jobs\`.\`id\`, \`ledger_jobs\`.\`attempt\`, \`ledger_jobs\`.\`locked_until\`, \`ledger_jobs\`.\`account_id\`, \`ledger_jobs\`.\`payload\` from \`ledger_jobs\` where (\`ledger_jobs\`.\`locked_until\` is null or \`ledger_jobs\`.\`locked_until\` <= ?) and (\`ledger_jobs\`.\`id\` = (select \`order_head\`.\`id\` from \`ledger_jobs\` as \`order_head\` where \`order_head\`.\`account_id\` = \`ledger_jobs\`.\`account_id\` order by \`order_head\`.\`id\` asc limit ?) and not coalesce((select \`order_leased\`.\`locked_until\` from \`ledger_jobs\` as \`order_leased\` where \`order_leased\`.\`account_id\` = \`ledger_jobs\`.\`account_id\` and \`order_leased\`.\`id\` <> \`ledger_jobs\`.\`id\` order by \`order_leased\`.\`locked_until\` desc limit ?) > ?, false)) order by \`ledger_jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            1,
            1,
            2024-05-01T12:00:00.123Z,
            5,
          ],
          "sql": "select "ledger_jobs"."id", "ledger_jobs"."attempt", "ledger_jobs"."locked_until", "ledger_jobs"."account_id", "ledger_jobs"."payload" from "ledger_jobs" where ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= $1) and ("ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" order by "order_head"."id" asc limit $2) and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased" where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."id" <> "ledger_jobs"."id" order by "order_leased"."locked_until" desc nulls last limit $3) > $4, false)) order by "ledger_jobs"."id" asc limit $5 for update skip locked",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            1,
            1,
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "select "ledger_jobs"."id", "ledger_jobs"."attempt", "ledger_jobs"."locked_until", "ledger_jobs"."account_id", "ledger_jobs"."payload" from "ledger_jobs" where ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= ?) and ("ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" order by "order_head"."id" asc limit ?) and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased" where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."id" <> "ledger_jobs"."id" order by "order_leased"."locked_until" desc limit ?) > ?, false)) order by "ledger_jobs"."id" asc limit ?",
        },
      }
    `);
  });

  test("maxInWorkPerKey(3): the row is not past its key's third unprocessed row, and the key's third latest lease among its other rows is not live", () => {
    expect(perEngine((d) => d.lease.selectClaimable(orderedLease(), { limit: 5, now, perKey: 3 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            1,
            2,
            1,
            2,
            "2024-05-01 12:00:00.123",
            5,
          ],
          "sql": "select \`ledger_jobs\`.\`id\`, \`ledger_jobs\`.\`attempt\`, \`ledger_jobs\`.\`locked_until\`, \`ledger_jobs\`.\`account_id\`, \`ledger_jobs\`.\`payload\` from \`ledger_jobs\` where (\`ledger_jobs\`.\`locked_until\` is null or \`ledger_jobs\`.\`locked_until\` <= ?) and (\`ledger_jobs\`.\`id\` <= coalesce((select \`order_head\`.\`id\` from \`ledger_jobs\` as \`order_head\` where \`order_head\`.\`account_id\` = \`ledger_jobs\`.\`account_id\` order by \`order_head\`.\`id\` asc limit ? offset ?), \`ledger_jobs\`.\`id\`) and not coalesce((select \`order_leased\`.\`locked_until\` from \`ledger_jobs\` as \`order_leased\` where \`order_leased\`.\`account_id\` = \`ledger_jobs\`.\`account_id\` and \`order_leased\`.\`id\` <> \`ledger_jobs\`.\`id\` order by \`order_leased\`.\`locked_until\` desc limit ? offset ?) > ?, false)) order by \`ledger_jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            1,
            2,
            1,
            2,
            2024-05-01T12:00:00.123Z,
            5,
          ],
          "sql": "select "ledger_jobs"."id", "ledger_jobs"."attempt", "ledger_jobs"."locked_until", "ledger_jobs"."account_id", "ledger_jobs"."payload" from "ledger_jobs" where ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= $1) and ("ledger_jobs"."id" <= coalesce((select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" order by "order_head"."id" asc limit $2 offset $3), "ledger_jobs"."id") and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased" where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."id" <> "ledger_jobs"."id" order by "order_leased"."locked_until" desc nulls last limit $4 offset $5) > $6, false)) order by "ledger_jobs"."id" asc limit $7 for update skip locked",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            1,
            2,
            1,
            2,
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "select "ledger_jobs"."id", "ledger_jobs"."attempt", "ledger_jobs"."locked_until", "ledger_jobs"."account_id", "ledger_jobs"."payload" from "ledger_jobs" where ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= ?) and ("ledger_jobs"."id" <= coalesce((select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" order by "order_head"."id" asc limit ? offset ?), "ledger_jobs"."id") and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased" where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."id" <> "ledger_jobs"."id" order by "order_leased"."locked_until" desc limit ? offset ?) > ?, false)) order by "ledger_jobs"."id" asc limit ?",
        },
      }
    `);
  });

  test("row-lock claim with priority, retryAfter and processedAt: the head is the key's first unprocessed row by id, due or not", () => {
    expect(perEngine((d) => d.rowLock.claim(orderedRichRowLock(), { limit: 1, now }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            1,
            1,
          ],
          "sql": "select \`ledger_jobs\`.\`id\`, \`ledger_jobs\`.\`attempt\`, \`ledger_jobs\`.\`payload\`, \`ledger_jobs\`.\`retry_after\`, \`ledger_jobs\`.\`processed_at\`, \`ledger_jobs\`.\`priority\`, \`ledger_jobs\`.\`account_id\` from \`ledger_jobs\` where (\`ledger_jobs\`.\`processed_at\` is null and (\`ledger_jobs\`.\`retry_after\` is null or \`ledger_jobs\`.\`retry_after\` <= ?)) and \`ledger_jobs\`.\`id\` = (select \`order_head\`.\`id\` from \`ledger_jobs\` as \`order_head\` where \`order_head\`.\`account_id\` = \`ledger_jobs\`.\`account_id\` and \`order_head\`.\`processed_at\` is null order by \`order_head\`.\`id\` asc limit ?) order by \`ledger_jobs\`.\`priority\` asc, \`ledger_jobs\`.\`retry_after\` asc, \`ledger_jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            1,
            1,
          ],
          "sql": "with "picked" as (select "ledger_jobs"."id" from "ledger_jobs" where ("ledger_jobs"."processed_at" is null and ("ledger_jobs"."retry_after" is null or "ledger_jobs"."retry_after" <= $1)) and "ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" and "order_head"."processed_at" is null order by "order_head"."id" asc limit $2) order by "ledger_jobs"."priority" asc, "ledger_jobs"."retry_after" asc nulls first, "ledger_jobs"."id" asc limit $3 for update skip locked), "claimed" as (update "ledger_jobs" set "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", "payload", "retry_after", "processed_at", "priority", "account_id") select * from "claimed" order by "priority" asc, "retry_after" asc nulls first, "id" asc",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("a fifo group with perKey(2): the ordered-key rule over the group column replaces fifo's (no group lock first)", () => {
    const options = { limit: 5, now, group: "g1", perKey: 2 };
    expect(perEngine((d) => d.lease.lockFifoGroup(fifoLease(), options), "NOT_NEEDED (null)")).toEqual({
      postgres: "NOT_NEEDED (null)",
      mysql: "NOT_NEEDED (null)",
      sqlite: "NOT_NEEDED (null)",
    });
    expect(
      perEngine((d) => (d.lease.claimsInOneStatement ? d.lease.claim(fifoLease(), { ...options, until, precision: 3 }) : d.lease.selectClaimable(fifoLease(), options))),
    ).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "g1",
            "2024-05-01 12:00:00.123",
            1,
            1,
            1,
            1,
            "2024-05-01 12:00:00.123",
            5,
          ],
          "sql": "select \`fifo_jobs\`.\`id\`, \`fifo_jobs\`.\`attempt\`, \`fifo_jobs\`.\`locked_until\`, \`fifo_jobs\`.\`grp\` from \`fifo_jobs\` where (\`fifo_jobs\`.\`grp\` = ? and (\`fifo_jobs\`.\`locked_until\` is null or \`fifo_jobs\`.\`locked_until\` <= ?)) and (\`fifo_jobs\`.\`id\` <= coalesce((select \`order_head\`.\`id\` from \`fifo_jobs\` as \`order_head\` where \`order_head\`.\`grp\` = \`fifo_jobs\`.\`grp\` order by \`order_head\`.\`id\` asc limit ? offset ?), \`fifo_jobs\`.\`id\`) and not coalesce((select \`order_leased\`.\`locked_until\` from \`fifo_jobs\` as \`order_leased\` where \`order_leased\`.\`grp\` = \`fifo_jobs\`.\`grp\` and \`order_leased\`.\`id\` <> \`fifo_jobs\`.\`id\` order by \`order_leased\`.\`locked_until\` desc limit ? offset ?) > ?, false)) order by \`fifo_jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            "g1",
            2024-05-01T12:00:00.123Z,
            1,
            1,
            1,
            1,
            2024-05-01T12:00:00.123Z,
            5,
            2024-05-01T12:01:00.123Z,
          ],
          "sql": "with "picked" as (select "fifo_jobs"."id" from "fifo_jobs" where ("fifo_jobs"."grp" = $1 and ("fifo_jobs"."locked_until" is null or "fifo_jobs"."locked_until" <= $2)) and ("fifo_jobs"."id" <= coalesce((select "order_head"."id" from "fifo_jobs" as "order_head" where "order_head"."grp" = "fifo_jobs"."grp" order by "order_head"."id" asc limit $3 offset $4), "fifo_jobs"."id") and not coalesce((select "order_leased"."locked_until" from "fifo_jobs" as "order_leased" where "order_leased"."grp" = "fifo_jobs"."grp" and "order_leased"."id" <> "fifo_jobs"."id" order by "order_leased"."locked_until" desc nulls last limit $5 offset $6) > $7, false)) order by "fifo_jobs"."id" asc limit $8 for update skip locked), "claimed" as (update "fifo_jobs" set "locked_until" = $9, "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "grp") select * from "claimed" order by "id" asc",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:01:00.123Z",
            "g1",
            "2024-05-01T12:00:00.123Z",
            1,
            1,
            1,
            1,
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "update "fifo_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (select "fifo_jobs"."id" from "fifo_jobs" where ("fifo_jobs"."grp" = ? and ("fifo_jobs"."locked_until" is null or "fifo_jobs"."locked_until" <= ?)) and ("fifo_jobs"."id" <= coalesce((select "order_head"."id" from "fifo_jobs" as "order_head" where "order_head"."grp" = "fifo_jobs"."grp" order by "order_head"."id" asc limit ? offset ?), "fifo_jobs"."id") and not coalesce((select "order_leased"."locked_until" from "fifo_jobs" as "order_leased" where "order_leased"."grp" = "fifo_jobs"."grp" and "order_leased"."id" <> "fifo_jobs"."id" order by "order_leased"."locked_until" desc limit ? offset ?) > ?, false)) order by "fifo_jobs"."id" asc limit ?) returning "id", "attempt", "locked_until", "grp"",
        },
      }
    `);
  });

  test("the shape cache keeps one text per perKey", () => {
    const one = perEngine((d) => d.lease.selectClaimable(orderedLease(), { limit: 5, now }));
    const two = perEngine((d) => d.lease.selectClaimable(orderedLease(), { limit: 5, now, perKey: 2 }));
    expect(two.postgres).not.toEqual(one.postgres);
    expect(perEngine((d) => d.lease.selectClaimable(orderedLease(), { limit: 5, now }))).toEqual(one);
  });

  test("the table: the order key column NOT NULL, and the index its head probe reads (partial on unprocessed rows where the engine can)", () => {
    // The storage settings are table-ddl.test.ts's subject.
    const ddl = (d: EngineDialect) => d.table.create(orderedRichRowLock(), undefined, { queueStorage: false }).map((q) => q.sql);
    expect({ postgres: ddl(postgresDialect), mysql: ddl(mysqlDialect), sqlite: ddl(sqliteDialect) }).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`ledger_jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`payload\` longblob not null, \`retry_after\` datetime(3), \`processed_at\` datetime(3), \`priority\` int default 0 not null, \`account_id\` varchar(255) not null)",
          "create index \`ledger_jobs_claim\` on \`ledger_jobs\` (\`processed_at\`, \`priority\`, \`retry_after\`, \`id\`)",
          "create index \`ledger_jobs_order_key\` on \`ledger_jobs\` (\`account_id\`, \`processed_at\`, \`id\`)",
        ],
        "postgres": [
          "create table "ledger_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "payload" bytea not null, "retry_after" timestamptz, "processed_at" timestamptz, "priority" integer default 0 not null, "account_id" text not null)",
          "create index "ledger_jobs_claim" on "ledger_jobs" ("priority", "retry_after" nulls first, "id") where "processed_at" is null",
          "create index "ledger_jobs_processed" on "ledger_jobs" ("processed_at") where "processed_at" is not null",
          "create index "ledger_jobs_order_key" on "ledger_jobs" ("account_id", "id") where "processed_at" is null",
          "create index "ledger_jobs_order_key_done" on "ledger_jobs" ("account_id", "id") where "processed_at" is not null",
        ],
        "sqlite": [
          "create table "ledger_jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "payload" blob not null, "retry_after" text, "processed_at" text, "priority" integer default 0 not null, "account_id" text not null)",
          "create index "ledger_jobs_claim" on "ledger_jobs" ("priority", "retry_after", "id") where "processed_at" is null",
          "create index "ledger_jobs_processed" on "ledger_jobs" ("processed_at") where "processed_at" is not null",
          "create index "ledger_jobs_order_key" on "ledger_jobs" ("account_id", "id") where "processed_at" is null",
          "create index "ledger_jobs_order_key_done" on "ledger_jobs" ("account_id", "id") where "processed_at" is not null",
        ],
      }
    `);
  });

  test("lease claim with processedAt: the lease probe reads only unprocessed rows, latest lease first", () => {
    expect(perEngine((d) => d.lease.selectClaimable(orderedRichLease(), { limit: 5, now }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            1,
            1,
            "2024-05-01 12:00:00.123",
            5,
          ],
          "sql": "select \`ledger_jobs\`.\`id\`, \`ledger_jobs\`.\`attempt\`, \`ledger_jobs\`.\`locked_until\`, \`ledger_jobs\`.\`payload\`, \`ledger_jobs\`.\`processed_at\`, \`ledger_jobs\`.\`account_id\` from \`ledger_jobs\` where (\`ledger_jobs\`.\`processed_at\` is null and (\`ledger_jobs\`.\`locked_until\` is null or \`ledger_jobs\`.\`locked_until\` <= ?)) and (\`ledger_jobs\`.\`id\` = (select \`order_head\`.\`id\` from \`ledger_jobs\` as \`order_head\` where \`order_head\`.\`account_id\` = \`ledger_jobs\`.\`account_id\` and \`order_head\`.\`processed_at\` is null order by \`order_head\`.\`id\` asc limit ?) and not coalesce((select \`order_leased\`.\`locked_until\` from \`ledger_jobs\` as \`order_leased\` where \`order_leased\`.\`account_id\` = \`ledger_jobs\`.\`account_id\` and \`order_leased\`.\`processed_at\` is null and \`order_leased\`.\`id\` <> \`ledger_jobs\`.\`id\` order by \`order_leased\`.\`locked_until\` desc limit ?) > ?, false)) order by \`ledger_jobs\`.\`id\` asc limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            1,
            1,
            2024-05-01T12:00:00.123Z,
            5,
          ],
          "sql": "select "ledger_jobs"."id", "ledger_jobs"."attempt", "ledger_jobs"."locked_until", "ledger_jobs"."payload", "ledger_jobs"."processed_at", "ledger_jobs"."account_id" from "ledger_jobs" where ("ledger_jobs"."processed_at" is null and ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= $1)) and ("ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" and "order_head"."processed_at" is null order by "order_head"."id" asc limit $2) and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased" where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."processed_at" is null and "order_leased"."id" <> "ledger_jobs"."id" order by "order_leased"."locked_until" desc nulls last limit $3) > $4, false)) order by "ledger_jobs"."id" asc limit $5 for update skip locked",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            1,
            1,
            "2024-05-01T12:00:00.123Z",
            5,
          ],
          "sql": "select "ledger_jobs"."id", "ledger_jobs"."attempt", "ledger_jobs"."locked_until", "ledger_jobs"."payload", "ledger_jobs"."processed_at", "ledger_jobs"."account_id" from "ledger_jobs" where ("ledger_jobs"."processed_at" is null and ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= ?)) and ("ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head" where "order_head"."account_id" = "ledger_jobs"."account_id" and "order_head"."processed_at" is null order by "order_head"."id" asc limit ?) and not coalesce((select "order_leased"."locked_until" from "ledger_jobs" as "order_leased" where "order_leased"."account_id" = "ledger_jobs"."account_id" and "order_leased"."processed_at" is null and "order_leased"."id" <> "ledger_jobs"."id" order by "order_leased"."locked_until" desc limit ?) > ?, false)) order by "ledger_jobs"."id" asc limit ?",
        },
      }
    `);
  });

  test("the lease table: a second index for the lease probe, the key then the lease column (processedAt between where the engine has no partial index; NULL first where ascending order puts it last)", () => {
    const ddl = (d: EngineDialect) => d.table.create(orderedRichLease(), undefined, { queueStorage: false }).map((q) => q.sql);
    expect({ postgres: ddl(postgresDialect), mysql: ddl(mysqlDialect), sqlite: ddl(sqliteDialect) }).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`ledger_jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`locked_until\` datetime(3), \`payload\` longblob not null, \`processed_at\` datetime(3), \`account_id\` varchar(255) not null)",
          "create index \`ledger_jobs_claim\` on \`ledger_jobs\` (\`processed_at\`, \`id\`)",
          "create index \`ledger_jobs_order_key\` on \`ledger_jobs\` (\`account_id\`, \`processed_at\`, \`id\`)",
          "create index \`ledger_jobs_order_key_lease\` on \`ledger_jobs\` (\`account_id\`, \`processed_at\`, \`locked_until\`)",
        ],
        "postgres": [
          "create table "ledger_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null, "processed_at" timestamptz, "account_id" text not null)",
          "create index "ledger_jobs_claim" on "ledger_jobs" ("id") where "processed_at" is null",
          "create index "ledger_jobs_processed" on "ledger_jobs" ("processed_at") where "processed_at" is not null",
          "create index "ledger_jobs_order_key" on "ledger_jobs" ("account_id", "id") where "processed_at" is null",
          "create index "ledger_jobs_order_key_lease" on "ledger_jobs" ("account_id", "locked_until" nulls first) where "processed_at" is null",
          "create index "ledger_jobs_order_key_done" on "ledger_jobs" ("account_id", "id") where "processed_at" is not null",
        ],
        "sqlite": [
          "create table "ledger_jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "locked_until" text, "payload" blob not null, "processed_at" text, "account_id" text not null)",
          "create index "ledger_jobs_claim" on "ledger_jobs" ("id") where "processed_at" is null",
          "create index "ledger_jobs_processed" on "ledger_jobs" ("processed_at") where "processed_at" is not null",
          "create index "ledger_jobs_order_key" on "ledger_jobs" ("account_id", "id") where "processed_at" is null",
          "create index "ledger_jobs_order_key_lease" on "ledger_jobs" ("account_id", "locked_until") where "processed_at" is null",
          "create index "ledger_jobs_order_key_done" on "ledger_jobs" ("account_id", "id") where "processed_at" is not null",
        ],
      }
    `);
  });

  test("a perKey that is not a positive integer is refused", () => {
    expect(() => perEngine((d) => d.lease.selectClaimable(orderedLease(), { limit: 5, now, perKey: 0 }))).toThrow(/perKey must be a positive integer, got 0/);
  });

  test("row lock: each claimed row's key, a slot of perKey taken without waiting (transaction locks on Postgres, user locks on MySQL/MariaDB)", () => {
    expect(perEngine((d) => d.rowLock.lockOrderKeys(orderedRichRowLock(), {}, [7, 8], [0]))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "sqlinbox order key ledger_jobs#0",
            7,
            8,
          ],
          "sql": "select \`ledger_jobs\`.\`id\` as \`id\`, case when GET_LOCK(sha2(concat_ws('|', database(), ?, \`ledger_jobs\`.\`account_id\`), 256), 0) = 1 then 0 end as \`order_slot\` from \`ledger_jobs\` where \`ledger_jobs\`.\`id\` in (?, ?)",
        },
        "postgres": {
          "parameters": [
            7,
            8,
          ],
          "sql": "select "ledger_jobs"."id" as "id", case when pg_try_advisory_xact_lock(1754607304, hashtext(cast("ledger_jobs"."account_id" as text))) then 0 end as "order_slot" from "ledger_jobs" where "ledger_jobs"."id" in ($1, $2)",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
    // maxInWorkPerKey(3), for a key whose slot 0 this transaction already holds: slot 1, else 2.
    expect(perEngine((d) => d.rowLock.lockOrderKeys(orderedRichRowLock(), { perKey: 3 }, [9], [1, 2]))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "sqlinbox order key ledger_jobs#1",
            "sqlinbox order key ledger_jobs#2",
            9,
          ],
          "sql": "select \`ledger_jobs\`.\`id\` as \`id\`, case when GET_LOCK(sha2(concat_ws('|', database(), ?, \`ledger_jobs\`.\`account_id\`), 256), 0) = 1 then 1 when GET_LOCK(sha2(concat_ws('|', database(), ?, \`ledger_jobs\`.\`account_id\`), 256), 0) = 1 then 2 end as \`order_slot\` from \`ledger_jobs\` where \`ledger_jobs\`.\`id\` in (?)",
        },
        "postgres": {
          "parameters": [
            9,
          ],
          "sql": "select "ledger_jobs"."id" as "id", case when pg_try_advisory_xact_lock(462578242, hashtext(cast("ledger_jobs"."account_id" as text))) then 1 when pg_try_advisory_xact_lock(1959891587, hashtext(cast("ledger_jobs"."account_id" as text))) then 2 end as "order_slot" from "ledger_jobs" where "ledger_jobs"."id" in ($1)",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
    expect(perEngine((d) => d.rowLock.releaseOrderKeys(), "null (Postgres: the transaction's end releases them; SQLite: no row lock)")).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "select RELEASE_ALL_LOCKS() as \`released\`",
        },
        "postgres": "null (Postgres: the transaction's end releases them; SQLite: no row lock)",
        "sqlite": "null (Postgres: the transaction's end releases them; SQLite: no row lock)",
      }
    `);
  });

  test("row lock: no key locks on a table without an ordered key", () => {
    expect(perEngine((d) => d.rowLock.lockOrderKeys(seedByHand, {}, [7], [0]), "NOT_NEEDED (null)")).toEqual({
      postgres: "NOT_NEEDED (null)",
      mysql: "NOT_NEEDED (null)",
      sqlite: "NOT_NEEDED (null)",
    });
  });
});
