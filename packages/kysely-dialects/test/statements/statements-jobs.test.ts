/**
 * The statements a job handle reads one row's state with, per engine side by side: the row by id
 * (every column that tells a state), the row-lock probe (where the engine locks rows), the held-key
 * lookup (where advisory keys live in the server session), a dead letter by the id it kept, and the
 * cancel requests waiting for the row.
 */
import { describe, expect, test } from "vitest";
import { perEngine } from "../support/render.js";
import { deadKeepingId, richAdvisory, seedByHand } from "../support/specs.js";

describe("jobs", () => {
  test("read: the id and every column that tells a state, advisory key columns included; no lock", () => {
    expect(perEngine((d) => d.jobs.read(richAdvisory(), 7))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
          ],
          "sql": "select \`id\`, \`attempt\`, \`retry_after\`, \`processed_at\`, \`customer_id\` from \`jobs\` where \`id\` = ?",
        },
        "postgres": {
          "parameters": [
            7,
          ],
          "sql": "select "id", "attempt", "retry_after", "processed_at", "customer_id" from "jobs" where "id" = $1",
        },
        "sqlite": {
          "parameters": [
            7,
          ],
          "sql": "select "id", "attempt", "retry_after", "processed_at", "customer_id" from "jobs" where "id" = ?",
        },
      }
    `);
  });

  test("lockProbe: SKIP LOCKED by id, where the engine locks rows", () => {
    expect(perEngine((d) => d.jobs.lockProbe(seedByHand, 7))).toMatchInlineSnapshot(`
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

  test("keyHeld: the server's lock table, where keys live in the session", () => {
    expect(perEngine((d) => d.jobs.keyHeld("report_jobs:acme", "app"))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "report_jobs:acme",
            "app.report_jobs:acme",
          ],
          "sql": "select \`k\`.\`key\` as \`key\` from (select ? as \`key\`, ? as \`lock_name\`) as \`k\` where IS_USED_LOCK(\`k\`.\`lock_name\`) is not null",
        },
        "postgres": {
          "parameters": [
            [
              "report_jobs:acme",
            ],
          ],
          "sql": "select "key" as "key" from unnest(cast($1 as text[])) as "key" where exists (select 1 as "one" from "pg_locks" as "l" where l.locktype = 'advisory' and l.granted and l.objsubid = 1 and l.database = (select oid from pg_database where datname = current_database()) and ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended("key", 0))",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("readDeadLetter and cancelRequested", () => {
    expect(perEngine((d) => d.jobs.readDeadLetter(deadKeepingId, 7))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
          ],
          "sql": "select \`id\`, \`last_error\` from \`dead_kept\` where \`id\` = ?",
        },
        "postgres": {
          "parameters": [
            7,
          ],
          "sql": "select "id", "last_error" from "dead_kept" where "id" = $1",
        },
        "sqlite": {
          "parameters": [
            7,
          ],
          "sql": "select "id", "last_error" from "dead_kept" where "id" = ?",
        },
      }
    `);
    expect(perEngine((d) => d.jobs.cancelRequested(seedByHand, "reports", 7))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "cancel",
            "7",
            "reports",
            "report_jobs",
          ],
          "sql": "select \`target\` from \`sqlinbox_control\` where \`kind\` = ? and \`target\` = ? and \`route\` in (?, ?)",
        },
        "postgres": {
          "parameters": [
            "cancel",
            "7",
            "reports",
            "report_jobs",
          ],
          "sql": "select "target" from "sqlinbox_control" where "kind" = $1 and "target" = $2 and "route" in ($3, $4)",
        },
        "sqlite": {
          "parameters": [
            "cancel",
            "7",
            "reports",
            "report_jobs",
          ],
          "sql": "select "target" from "sqlinbox_control" where "kind" = ? and "target" = ? and "route" in (?, ?)",
        },
      }
    `);
  });
});
