import { describe, expect, test } from "vitest";
import { inboxTableSql, mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect } from "../../src/index.js";
import { NOT_SUPPORTED, perEngine } from "../support/render.js";
import { richLease, seedByHand } from "../support/specs.js";

const rate = { name: "rate:report_jobs:reports" };
const cap = { name: "cap:report_jobs:reports", schema: "app" };

describe("flow: the slot table", () => {
  test("createSlotTable: one row per slot of one limit, created if missing", () => {
    expect(perEngine((d) => d.flow.createSlotTable())).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "create table if not exists \`sqlinbox_slots\` (\`name\` varchar(255) not null, \`slot\` int not null, \`started_ms\` bigint default 0 not null, constraint \`sqlinbox_slots_pkey\` primary key (\`name\`, \`slot\`))",
        },
        "postgres": {
          "parameters": [],
          "sql": "create table if not exists "sqlinbox_slots" ("name" text not null, "slot" integer not null, "started_ms" bigint default 0 not null, constraint "sqlinbox_slots_pkey" primary key ("name", "slot"))",
        },
        "sqlite": {
          "parameters": [],
          "sql": "create table if not exists "sqlinbox_slots" ("name" text not null, "slot" integer not null, "started_ms" integer default 0 not null, constraint "sqlinbox_slots_pkey" primary key ("name", "slot"))",
        },
      }
    `);
  });

  test("the slot table follows the queue table's schema", () => {
    expect(perEngine((d) => (d.capabilities.tableSchemas ? d.flow.createSlotTable("app") : null))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "create table if not exists \`app\`.\`sqlinbox_slots\` (\`name\` varchar(255) not null, \`slot\` int not null, \`started_ms\` bigint default 0 not null, constraint \`sqlinbox_slots_pkey\` primary key (\`name\`, \`slot\`))",
        },
        "postgres": {
          "parameters": [],
          "sql": "create table if not exists "app"."sqlinbox_slots" ("name" text not null, "slot" integer not null, "started_ms" bigint default 0 not null, constraint "sqlinbox_slots_pkey" primary key ("name", "slot"))",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("inboxTableSql adds the slot table when asked, and only then", () => {
    expect(inboxTableSql(seedByHand, "postgres")).toHaveLength(1);
    expect(inboxTableSql(seedByHand, "postgres", { slotTable: true })).toMatchInlineSnapshot(`
      [
        "create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
        "create table if not exists "sqlinbox_slots" ("name" text not null, "slot" integer not null, "started_ms" bigint default 0 not null, constraint "sqlinbox_slots_pkey" primary key ("name", "slot"))",
      ]
    `);
  });

  test("ensureSlots inserts the missing slots and leaves the others", () => {
    expect(perEngine((d) => d.flow.ensureSlots(rate, 2))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "rate:report_jobs:reports",
            0,
            0,
            "rate:report_jobs:reports",
            1,
            0,
          ],
          "sql": "insert into \`sqlinbox_slots\` (\`name\`, \`slot\`, \`started_ms\`) values (?, ?, ?), (?, ?, ?) on duplicate key update \`slot\` = \`slot\`",
        },
        "postgres": {
          "parameters": [
            "rate:report_jobs:reports",
            0,
            0,
            "rate:report_jobs:reports",
            1,
            0,
          ],
          "sql": "insert into "sqlinbox_slots" ("name", "slot", "started_ms") values ($1, $2, $3), ($4, $5, $6) on conflict ("name", "slot") do nothing",
        },
        "sqlite": {
          "parameters": [
            "rate:report_jobs:reports",
            0,
            0,
            "rate:report_jobs:reports",
            1,
            0,
          ],
          "sql": "insert into "sqlinbox_slots" ("name", "slot", "started_ms") values (?, ?, ?), (?, ?, ?) on conflict ("name", "slot") do nothing",
        },
      }
    `);
  });
});

describe("flow: rate slots", () => {
  const pick = { max: 10, take: 2, freeBefore: 1_000 };

  test("takeRateSlots takes free slots and reserves them in one statement where updates return rows", () => {
    expect(perEngine((d) => d.flow.takeRateSlots(rate, pick, 5_000))).toMatchInlineSnapshot(`
      {
        "mysql": "NOT_SUPPORTED",
        "postgres": {
          "parameters": [
            5000,
            "rate:report_jobs:reports",
            "rate:report_jobs:reports",
            10,
            1000,
            2,
          ],
          "sql": "update "sqlinbox_slots" set "started_ms" = $1 where "name" = $2 and "slot" in (select "slot" from "sqlinbox_slots" where "name" = $3 and "slot" < $4 and "started_ms" <= $5 order by "started_ms" limit $6 for update skip locked) returning "slot"",
        },
        "sqlite": {
          "parameters": [
            5000,
            "rate:report_jobs:reports",
            "rate:report_jobs:reports",
            10,
            1000,
            2,
          ],
          "sql": "update "sqlinbox_slots" set "started_ms" = ? where "name" = ? and "slot" in (select "slot" from "sqlinbox_slots" where "name" = ? and "slot" < ? and "started_ms" <= ? order by "started_ms" limit ?) returning "slot"",
        },
      }
    `);
  });

  test("selectRateSlots locks the free slots for the two-statement take", () => {
    expect(perEngine((d) => d.flow.selectRateSlots(rate, pick))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "rate:report_jobs:reports",
            10,
            1000,
            2,
          ],
          "sql": "select \`slot\` from \`sqlinbox_slots\` where \`name\` = ? and \`slot\` < ? and \`started_ms\` <= ? order by \`started_ms\` limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            "rate:report_jobs:reports",
            10,
            1000,
            2,
          ],
          "sql": "select "slot" from "sqlinbox_slots" where "name" = $1 and "slot" < $2 and "started_ms" <= $3 order by "started_ms" limit $4 for update skip locked",
        },
        "sqlite": {
          "parameters": [
            "rate:report_jobs:reports",
            10,
            1000,
            2,
          ],
          "sql": "select "slot" from "sqlinbox_slots" where "name" = ? and "slot" < ? and "started_ms" <= ? order by "started_ms" limit ?",
        },
      }
    `);
  });

  test("stampSlots, fenced by the reservation", () => {
    expect(perEngine((d) => d.flow.stampSlots(rate, [1, 4], 2_000, 5_000))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            2000,
            "rate:report_jobs:reports",
            1,
            4,
            5000,
          ],
          "sql": "update \`sqlinbox_slots\` set \`started_ms\` = ? where \`name\` = ? and \`slot\` in (?, ?) and \`started_ms\` = ?",
        },
        "postgres": {
          "parameters": [
            2000,
            "rate:report_jobs:reports",
            1,
            4,
            5000,
          ],
          "sql": "update "sqlinbox_slots" set "started_ms" = $1 where "name" = $2 and "slot" in ($3, $4) and "started_ms" = $5",
        },
        "sqlite": {
          "parameters": [
            2000,
            "rate:report_jobs:reports",
            1,
            4,
            5000,
          ],
          "sql": "update "sqlinbox_slots" set "started_ms" = ? where "name" = ? and "slot" in (?, ?) and "started_ms" = ?",
        },
      }
    `);
  });

  test("oldestStart: when the window frees a slot", () => {
    expect(perEngine((d) => d.flow.oldestStart(rate, 10))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "rate:report_jobs:reports",
            10,
          ],
          "sql": "select min(\`started_ms\`) as \`oldest\` from \`sqlinbox_slots\` where \`name\` = ? and \`slot\` < ?",
        },
        "postgres": {
          "parameters": [
            "rate:report_jobs:reports",
            10,
          ],
          "sql": "select min("started_ms") as "oldest" from "sqlinbox_slots" where "name" = $1 and "slot" < $2",
        },
        "sqlite": {
          "parameters": [
            "rate:report_jobs:reports",
            10,
          ],
          "sql": "select min("started_ms") as "oldest" from "sqlinbox_slots" where "name" = ? and "slot" < ?",
        },
      }
    `);
  });
});

describe("flow: caps", () => {
  test("lockCapSlots locks slots for the claim's transaction where rows lock", () => {
    expect(perEngine((d) => d.flow.lockCapSlots(cap, 3, 1), NOT_SUPPORTED)).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "cap:report_jobs:reports",
            3,
            1,
          ],
          "sql": "select \`slot\` from \`app\`.\`sqlinbox_slots\` where \`name\` = ? and \`slot\` < ? limit ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            "cap:report_jobs:reports",
            3,
            1,
          ],
          "sql": "select "slot" from "app"."sqlinbox_slots" where "name" = $1 and "slot" < $2 limit $3 for update skip locked",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("waitCapSlot waits for one slot (no skipping) where rows lock, between the lock wait's bound and its end", () => {
    expect(perEngine((d) => d.flow.waitCapSlot(cap, 2), NOT_SUPPORTED)).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "cap:report_jobs:reports",
            2,
          ],
          "sql": "select \`slot\` from \`app\`.\`sqlinbox_slots\` where \`name\` = ? and \`slot\` = ? for update",
        },
        "postgres": {
          "parameters": [
            "cap:report_jobs:reports",
            2,
          ],
          "sql": "select "slot" from "app"."sqlinbox_slots" where "name" = $1 and "slot" = $2 for update",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
    // MySQL/MariaDB count whole seconds: 1.5 s waits 2.
    expect(perEngine((d) => d.flow.lockWait.bound(1000), NOT_SUPPORTED)).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "set @sqlinbox_lock_wait = @@innodb_lock_wait_timeout, innodb_lock_wait_timeout = 1",
        },
        "postgres": {
          "parameters": [
            "1000ms",
          ],
          "sql": "select set_config('lock_timeout', $1, true) as "lock_timeout"",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
    expect(perEngine((d) => d.flow.lockWait.bound(1500), NOT_SUPPORTED)).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "set @sqlinbox_lock_wait = @@innodb_lock_wait_timeout, innodb_lock_wait_timeout = 2",
        },
        "postgres": {
          "parameters": [
            "1500ms",
          ],
          "sql": "select set_config('lock_timeout', $1, true) as "lock_timeout"",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
    expect(perEngine((d) => d.flow.lockWait.unbound(), NOT_SUPPORTED)).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "set innodb_lock_wait_timeout = @sqlinbox_lock_wait",
        },
        "postgres": {
          "parameters": [],
          "sql": "set local lock_timeout to default",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("a lock wait past its bound: Postgres 55P03 aborts the transaction; InnoDB 1205 fails the statement", () => {
    const read = (d: EngineDialect) => ({
      postgres: d.flow.lockWait.timedOut({ code: "55P03" }),
      innodb: d.flow.lockWait.timedOut({ errno: 1205, code: "ER_LOCK_WAIT_TIMEOUT" }),
      deadlock: d.flow.lockWait.timedOut({ errno: 1213, code: "40P01" }),
      abortsTransaction: d.flow.lockWait.timeoutAbortsTransaction,
    });
    expect({ mysql: read(mysqlDialect), postgres: read(postgresDialect), sqlite: read(sqliteDialect) }).toEqual({
      mysql: { postgres: false, innodb: true, deadlock: false, abortsTransaction: false },
      postgres: { postgres: true, innodb: false, deadlock: false, abortsTransaction: true },
      sqlite: { postgres: false, innodb: false, deadlock: false, abortsTransaction: false },
    });
  });

  test("countLiveLeases counts the group's unprocessed rows whose deadline is ahead", () => {
    expect(perEngine((d) => d.flow.countLiveLeases(richLease(), { now: new Date("2024-05-01T12:00:00.123Z"), group: "reports" }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "reports",
          ],
          "sql": "select count(*) as \`live\` from \`jobs\` where \`jobs\`.\`locked_until\` > ? and \`jobs\`.\`processed_at\` is null and \`jobs\`.\`grp\` = ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            "reports",
          ],
          "sql": "select count(*) as "live" from "jobs" where "jobs"."locked_until" > $1 and "jobs"."processed_at" is null and "jobs"."grp" = $2",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "reports",
          ],
          "sql": "select count(*) as "live" from "jobs" where "jobs"."locked_until" > ? and "jobs"."processed_at" is null and "jobs"."grp" = ?",
        },
      }
    `);
  });

  test("countLiveLeases refuses a table with no lease column", () => {
    const description = { ...richLease(), lease: undefined };
    expect(() => perEngine((d) => d.flow.countLiveLeases(description, { now: new Date() }))).toThrow(/no lease column/);
  });
});
