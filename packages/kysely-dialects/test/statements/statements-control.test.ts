import { describe, expect, test } from "vitest";
import { controlTableSql } from "../../src/index.js";
import { perEngine } from "../support/render.js";
import { richLease, richRowLock, seedByHand } from "../support/specs.js";

const now = new Date("2024-05-01T12:00:00.123Z");

describe("control", () => {
  test("the control table: kind, route, target and when, keyed by the first three", () => {
    expect({ postgres: controlTableSql("postgres"), mysql: controlTableSql("mysql"), sqlite: controlTableSql("sqlite") }).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table if not exists \`sqlinbox_control\` (\`kind\` varchar(255) not null, \`route\` varchar(255) not null, \`target\` varchar(255) not null, \`requested_at\` datetime(3) not null, constraint \`sqlinbox_control_pkey\` primary key (\`kind\`, \`route\`, \`target\`))",
        ],
        "postgres": [
          "create table if not exists "sqlinbox_control" ("kind" text not null, "route" text not null, "target" text not null, "requested_at" timestamptz not null, constraint "sqlinbox_control_pkey" primary key ("kind", "route", "target"))",
        ],
        "sqlite": [
          "create table if not exists "sqlinbox_control" ("kind" text not null, "route" text not null, "target" text not null, "requested_at" text not null, constraint "sqlinbox_control_pkey" primary key ("kind", "route", "target"))",
        ],
      }
    `);
  });

  test("a pause replaces any pause of the route; resume deletes it", () => {
    expect(perEngine((d) => d.control.pause("reports", now)[1] ?? null)).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "pause",
            "reports",
            "",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "insert into \`sqlinbox_control\` (\`kind\`, \`route\`, \`target\`, \`requested_at\`) values (?, ?, ?, ?)",
        },
        "postgres": {
          "parameters": [
            "pause",
            "reports",
            "",
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "insert into "sqlinbox_control" ("kind", "route", "target", "requested_at") values ($1, $2, $3, $4)",
        },
        "sqlite": {
          "parameters": [
            "pause",
            "reports",
            "",
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "insert into "sqlinbox_control" ("kind", "route", "target", "requested_at") values (?, ?, ?, ?)",
        },
      }
    `);
    expect(perEngine((d) => d.control.resume("reports"))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "pause",
            "reports",
          ],
          "sql": "delete from \`sqlinbox_control\` where \`kind\` = ? and \`route\` = ?",
        },
        "postgres": {
          "parameters": [
            "pause",
            "reports",
          ],
          "sql": "delete from "sqlinbox_control" where "kind" = $1 and "route" = $2",
        },
        "sqlite": {
          "parameters": [
            "pause",
            "reports",
          ],
          "sql": "delete from "sqlinbox_control" where "kind" = ? and "route" = ?",
        },
      }
    `);
  });

  test("an app records the routes it serves, one row per route and app, refreshed in place; old records pruned; recent ones read", () => {
    expect(perEngine((d) => d.control.recordRoutes(["reports", "mail"], "reports-app", now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "route",
            "reports",
            "reports-app",
            "2024-05-01 12:00:00.123",
            "route",
            "mail",
            "reports-app",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "insert into \`sqlinbox_control\` (\`kind\`, \`route\`, \`target\`, \`requested_at\`) values (?, ?, ?, ?), (?, ?, ?, ?) on duplicate key update \`requested_at\` = ?",
        },
        "postgres": {
          "parameters": [
            "route",
            "reports",
            "reports-app",
            2024-05-01T12:00:00.123Z,
            "route",
            "mail",
            "reports-app",
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "insert into "sqlinbox_control" ("kind", "route", "target", "requested_at") values ($1, $2, $3, $4), ($5, $6, $7, $8) on conflict ("kind", "route", "target") do update set "requested_at" = $9",
        },
        "sqlite": {
          "parameters": [
            "route",
            "reports",
            "reports-app",
            "2024-05-01T12:00:00.123Z",
            "route",
            "mail",
            "reports-app",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "insert into "sqlinbox_control" ("kind", "route", "target", "requested_at") values (?, ?, ?, ?), (?, ?, ?, ?) on conflict ("kind", "route", "target") do update set "requested_at" = ?",
        },
      }
    `);
    expect(perEngine((d) => d.control.pruneRoutes(now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "route",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "delete from \`sqlinbox_control\` where \`kind\` = ? and \`requested_at\` < ?",
        },
        "postgres": {
          "parameters": [
            "route",
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "delete from "sqlinbox_control" where "kind" = $1 and "requested_at" < $2",
        },
        "sqlite": {
          "parameters": [
            "route",
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "delete from "sqlinbox_control" where "kind" = ? and "requested_at" < ?",
        },
      }
    `);
    expect(perEngine((d) => d.control.readRoutes(now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "route",
            "2024-05-01 12:00:00.123",
          ],
          "sql": "select \`kind\`, \`route\`, \`target\` from \`sqlinbox_control\` where \`kind\` = ? and \`requested_at\` >= ?",
        },
        "postgres": {
          "parameters": [
            "route",
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "select "kind", "route", "target" from "sqlinbox_control" where "kind" = $1 and "requested_at" >= $2",
        },
        "sqlite": {
          "parameters": [
            "route",
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "select "kind", "route", "target" from "sqlinbox_control" where "kind" = ? and "requested_at" >= ?",
        },
      }
    `);
  });

  test("a row not in work is removed: deleted unless a live lease holds it, or marked processed where the table keeps rows", () => {
    expect(perEngine((d) => d.control.removeQueued(seedByHand, 7, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
            "2024-05-01 12:00:00.123",
          ],
          "sql": "delete from \`report_jobs\` where (\`id\` = ? and (\`locked_until\` is null or \`locked_until\` <= ?))",
        },
        "postgres": {
          "parameters": [
            7,
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "delete from "report_jobs" where ("id" = $1 and ("locked_until" is null or "locked_until" <= $2))",
        },
        "sqlite": {
          "parameters": [
            7,
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "delete from "report_jobs" where ("id" = ? and ("locked_until" is null or "locked_until" <= ?))",
        },
      }
    `);
    expect(perEngine((d) => d.control.removeQueued(richLease(), 7, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            7,
            "2024-05-01 12:00:00.123",
          ],
          "sql": "update \`jobs\` set \`processed_at\` = ? where (\`id\` = ? and \`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?))",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            7,
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "update "jobs" set "processed_at" = $1 where ("id" = $2 and "processed_at" is null and ("locked_until" is null or "locked_until" <= $3))",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            7,
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "update "jobs" set "processed_at" = ? where ("id" = ? and "processed_at" is null and ("locked_until" is null or "locked_until" <= ?))",
        },
      }
    `);
  });

  test("deleteQueued: the row deleted under removeQueued's condition, even where the table keeps handled rows", () => {
    expect(perEngine((d) => d.control.deleteQueued(richLease(), 7, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
            "2024-05-01 12:00:00.123",
          ],
          "sql": "delete from \`jobs\` where (\`id\` = ? and \`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?))",
        },
        "postgres": {
          "parameters": [
            7,
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "delete from "jobs" where ("id" = $1 and "processed_at" is null and ("locked_until" is null or "locked_until" <= $2))",
        },
        "sqlite": {
          "parameters": [
            7,
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "delete from "jobs" where ("id" = ? and "processed_at" is null and ("locked_until" is null or "locked_until" <= ?))",
        },
      }
    `);
  });

  test("a batch of rows: locked unless a claim holds them, written under the same condition, their cancel requests cleared at once", () => {
    const ids = [7, 8, 9];
    expect(perEngine((d) => d.control.lockQueuedMany(richRowLock(), ids))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
            8,
            9,
          ],
          "sql": "select \`id\` as \`id\` from \`jobs\` where \`id\` in (?, ?, ?) for update skip locked",
        },
        "postgres": {
          "parameters": [
            7,
            8,
            9,
          ],
          "sql": "select "id" as "id" from "jobs" where "id" in ($1, $2, $3) for update skip locked",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
    expect(perEngine((d) => d.control.removeQueuedMany(richLease(), ids, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            7,
            8,
            9,
            "2024-05-01 12:00:00.123",
          ],
          "sql": "update \`jobs\` set \`processed_at\` = ? where (\`id\` in (?, ?, ?) and \`processed_at\` is null and (\`locked_until\` is null or \`locked_until\` <= ?))",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            7,
            8,
            9,
            2024-05-01T12:00:00.123Z,
          ],
          "sql": "update "jobs" set "processed_at" = $1 where ("id" in ($2, $3, $4) and "processed_at" is null and ("locked_until" is null or "locked_until" <= $5))",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            7,
            8,
            9,
            "2024-05-01T12:00:00.123Z",
          ],
          "sql": "update "jobs" set "processed_at" = ? where ("id" in (?, ?, ?) and "processed_at" is null and ("locked_until" is null or "locked_until" <= ?))",
        },
      }
    `);
    expect(perEngine((d) => d.control.updateQueuedMany(richRowLock(), ids, { retry_after: now }, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            7,
            8,
            9,
          ],
          "sql": "update \`jobs\` set \`retry_after\` = ? where (\`id\` in (?, ?, ?) and \`processed_at\` is null)",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            7,
            8,
            9,
          ],
          "sql": "update "jobs" set "retry_after" = $1 where ("id" in ($2, $3, $4) and "processed_at" is null)",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            7,
            8,
            9,
          ],
          "sql": "update "jobs" set "retry_after" = ? where ("id" in (?, ?, ?) and "processed_at" is null)",
        },
      }
    `);
    expect(perEngine((d) => d.control.clearCancels("reports", ["7", "8"]))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "cancel",
            "reports",
            "7",
            "8",
          ],
          "sql": "delete from \`sqlinbox_control\` where \`kind\` = ? and \`route\` = ? and \`target\` in (?, ?)",
        },
        "postgres": {
          "parameters": [
            "cancel",
            "reports",
            "7",
            "8",
          ],
          "sql": "delete from "sqlinbox_control" where "kind" = $1 and "route" = $2 and "target" in ($3, $4)",
        },
        "sqlite": {
          "parameters": [
            "cancel",
            "reports",
            "7",
            "8",
          ],
          "sql": "delete from "sqlinbox_control" where "kind" = ? and "route" = ? and "target" in (?, ?)",
        },
      }
    `);
  });

  test("row lock: the row is locked unless a claim holds it; SQLite has no row locks", () => {
    expect(perEngine((d) => d.control.lockQueued(seedByHand, 7))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
          ],
          "sql": "select \`id\` as \`id\` from \`report_jobs\` where \`id\` = ? for update skip locked",
        },
        "postgres": {
          "parameters": [
            7,
          ],
          "sql": "select "id" as "id" from "report_jobs" where "id" = $1 for update skip locked",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("updateQueued: the changes, under removeQueued's condition (not done, no live lease at now); a run-at encoded as time", () => {
    const runAt = new Date("2024-05-01T13:00:00.000Z");
    expect({
      lease: perEngine((d) => d.control.updateQueued(seedByHand, 7, { payload: "{}", locked_until: runAt }, now)),
      rowLock: perEngine((d) => d.control.updateQueued(richRowLock(), 7, { retry_after: runAt }, now)),
    }).toMatchInlineSnapshot(`
      {
        "lease": {
          "mysql": {
            "parameters": [
              "{}",
              "2024-05-01 13:00:00.000",
              7,
              "2024-05-01 12:00:00.123",
            ],
            "sql": "update \`report_jobs\` set \`payload\` = ?, \`locked_until\` = ? where (\`id\` = ? and (\`locked_until\` is null or \`locked_until\` <= ?))",
          },
          "postgres": {
            "parameters": [
              "{}",
              2024-05-01T13:00:00.000Z,
              7,
              2024-05-01T12:00:00.123Z,
            ],
            "sql": "update "report_jobs" set "payload" = $1, "locked_until" = $2 where ("id" = $3 and ("locked_until" is null or "locked_until" <= $4))",
          },
          "sqlite": {
            "parameters": [
              "{}",
              "2024-05-01T13:00:00.000Z",
              7,
              "2024-05-01T12:00:00.123Z",
            ],
            "sql": "update "report_jobs" set "payload" = ?, "locked_until" = ? where ("id" = ? and ("locked_until" is null or "locked_until" <= ?))",
          },
        },
        "rowLock": {
          "mysql": {
            "parameters": [
              "2024-05-01 13:00:00.000",
              7,
            ],
            "sql": "update \`jobs\` set \`retry_after\` = ? where (\`id\` = ? and \`processed_at\` is null)",
          },
          "postgres": {
            "parameters": [
              2024-05-01T13:00:00.000Z,
              7,
            ],
            "sql": "update "jobs" set "retry_after" = $1 where ("id" = $2 and "processed_at" is null)",
          },
          "sqlite": {
            "parameters": [
              "2024-05-01T13:00:00.000Z",
              7,
            ],
            "sql": "update "jobs" set "retry_after" = ? where ("id" = ? and "processed_at" is null)",
          },
        },
      }
    `);
    expect(() => perEngine((d) => d.control.updateQueued(seedByHand, 7, { id: 8 }, now))).toThrow(/not a writable described column/);
    expect(() => perEngine((d) => d.control.updateQueued(seedByHand, 7, {}, now))).toThrow(/nothing to change/);
  });
});
