/**
 * The statements a job handle reads one row's state with, per engine side by side: the row by id
 * (every column that tells a state), the row-lock probe (where the engine locks rows), the held-key
 * lookup (where advisory keys live in the server session), a dead letter by the id it kept, and the
 * cancel requests waiting for the row; and the pages `jobs(route).list` reads: a row set after a
 * cursor in id order (SQLite walking the rowid when no equality narrows it), a dead-letter table's
 * page, and a page's lock probe.
 */
import { describe, expect, test } from "vitest";
import { jobListRowsExist, postgresDialect } from "../../src/internal.js";
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
          "sql": "select "id" as "id" from "report_jobs" where "id" = $1 for share skip locked",
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

  const now = new Date("2024-05-01T12:00:00.123Z");

  test("list: a row set in id order after the cursor, with its equalities; SQLite walks the rowid with none", () => {
    expect(perEngine((d) => d.jobs.list(richAdvisory(), { rows: "due", now, after: 41, limit: 50 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            41,
            50,
          ],
          "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\`, \`jobs\`.\`retry_after\`, \`jobs\`.\`processed_at\`, \`jobs\`.\`customer_id\` from \`jobs\` where (\`jobs\`.\`processed_at\` is null and (\`jobs\`.\`retry_after\` is null or \`jobs\`.\`retry_after\` <= ?) and \`jobs\`.\`id\` > ?) order by \`jobs\`.\`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            41,
            50,
          ],
          "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $1) and "jobs"."id" > $2) order by "jobs"."id" limit $3",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            41,
            50,
          ],
          "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" not indexed where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= ?) and "jobs"."id" > ?) order by "jobs"."id" limit ?",
        },
      }
    `);
    expect(perEngine((d) => d.jobs.list(richAdvisory(), { rows: "done", now, limit: 10, equals: { customer_id: "acme" } }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "acme",
            10,
          ],
          "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\`, \`jobs\`.\`retry_after\`, \`jobs\`.\`processed_at\`, \`jobs\`.\`customer_id\` from \`jobs\` where (\`jobs\`.\`processed_at\` is not null and \`jobs\`.\`customer_id\` = ?) order by \`jobs\`.\`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            "acme",
            10,
          ],
          "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" where ("jobs"."processed_at" is not null and "jobs"."customer_id" = $1) order by "jobs"."id" limit $2",
        },
        "sqlite": {
          "parameters": [
            "acme",
            10,
          ],
          "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" where ("jobs"."processed_at" is not null and "jobs"."customer_id" = ?) order by "jobs"."id" limit ?",
        },
      }
    `);
  });

  test("list: scheduled rows in run-at order, keyset paged on (retryAfter, id); other sets refuse that order", () => {
    expect(perEngine((d) => d.jobs.list(richAdvisory(), { rows: "scheduled", now, limit: 2, byRunAt: { after: { at: now, id: 7 } } }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            "2024-05-01 12:00:00.123",
            7,
            2,
          ],
          "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\`, \`jobs\`.\`retry_after\`, \`jobs\`.\`processed_at\`, \`jobs\`.\`customer_id\` from \`jobs\` where (\`jobs\`.\`processed_at\` is null and \`jobs\`.\`retry_after\` > ? and (\`jobs\`.\`retry_after\` > ? or (\`jobs\`.\`retry_after\` = ? and \`jobs\`.\`id\` > ?))) order by \`jobs\`.\`retry_after\`, \`jobs\`.\`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            2024-05-01T12:00:00.123Z,
            7,
            2,
          ],
          "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" where ("jobs"."processed_at" is null and "jobs"."retry_after" > $1 and ("jobs"."retry_after" > $2 or ("jobs"."retry_after" = $3 and "jobs"."id" > $4))) order by "jobs"."retry_after", "jobs"."id" limit $5",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            "2024-05-01T12:00:00.123Z",
            7,
            2,
          ],
          "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" where ("jobs"."processed_at" is null and "jobs"."retry_after" > ? and ("jobs"."retry_after" > ? or ("jobs"."retry_after" = ? and "jobs"."id" > ?))) order by "jobs"."retry_after", "jobs"."id" limit ?",
        },
      }
    `);
    expect(() => postgresDialect.jobs.list(richAdvisory(), { rows: "due", now, limit: 2, byRunAt: {} })).toThrow(
      /run-at order is for "scheduled" rows of a table with a retryAfter column, not "due"/,
    );
  });

  test("list: a set the table cannot hold is refused; jobListRowsExist says so first", () => {
    expect(jobListRowsExist(seedByHand, { rows: "done", now, limit: 1 })).toBe(false);
    expect(() => postgresDialect.jobs.list(seedByHand, { rows: "done", now, limit: 1 })).toThrow(/has no column that holds "done" rows/);
  });

  test("listDeadLetters and lockProbeMany", () => {
    expect(perEngine((d) => d.jobs.listDeadLetters(deadKeepingId, { after: 7, limit: 20 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
            20,
          ],
          "sql": "select \`dead_kept\`.\`id\`, \`dead_kept\`.\`attempt\`, \`dead_kept\`.\`payload\`, \`dead_kept\`.\`customer_id\`, \`dead_kept\`.\`last_error\` from \`dead_kept\` where \`dead_kept\`.\`id\` > ? order by \`dead_kept\`.\`id\` limit ?",
        },
        "postgres": {
          "parameters": [
            7,
            20,
          ],
          "sql": "select "dead_kept"."id", "dead_kept"."attempt", "dead_kept"."payload", "dead_kept"."customer_id", "dead_kept"."last_error" from "dead_kept" where "dead_kept"."id" > $1 order by "dead_kept"."id" limit $2",
        },
        "sqlite": {
          "parameters": [
            7,
            20,
          ],
          "sql": "select "dead_kept"."id", "dead_kept"."attempt", "dead_kept"."payload", "dead_kept"."customer_id", "dead_kept"."last_error" from "dead_kept" where "dead_kept"."id" > ? order by "dead_kept"."id" limit ?",
        },
      }
    `);
    expect(perEngine((d) => d.jobs.lockProbeMany(seedByHand, [7, 8]))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            7,
            8,
          ],
          "sql": "select \`id\` as \`id\` from \`report_jobs\` where \`id\` in (?, ?) for update skip locked",
        },
        "postgres": {
          "parameters": [
            7,
            8,
          ],
          "sql": "select "id" as "id" from "report_jobs" where "id" in ($1, $2) for share skip locked",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });
});
