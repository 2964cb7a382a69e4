import { describe, expect, test } from "vitest";
import { advisoryKeyOf, mysqlLockName } from "../../src/internal.js";
import { mysqlDialect, postgresDialect } from "../../src/index.js";
import { perEngine } from "../support/render.js";
import { idAdvisory, richAdvisory } from "../support/specs.js";

const now = new Date("2024-05-01T12:00:00.123Z");

describe("advisory (SQLite: keys in the process, tryLock/unlock NOT_SUPPORTED)", () => {
  test("selectCandidates: claimable rows with their key columns, no lock", () => {
    expect(perEngine((d) => d.advisory.selectCandidates(richAdvisory(), { limit: 10, now }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            10,
          ],
          "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\`, \`jobs\`.\`retry_after\`, \`jobs\`.\`processed_at\`, \`jobs\`.\`customer_id\` from \`jobs\` where (\`jobs\`.\`processed_at\` is null and (\`jobs\`.\`retry_after\` is null or \`jobs\`.\`retry_after\` <= ?)) order by \`jobs\`.\`retry_after\` asc, \`jobs\`.\`id\` asc limit ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            10,
          ],
          "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $1)) order by "jobs"."retry_after" asc nulls first, "jobs"."id" asc limit $2",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            10,
          ],
          "sql": "select "jobs"."id", "jobs"."attempt", "jobs"."payload", "jobs"."retry_after", "jobs"."processed_at", "jobs"."customer_id" from "jobs" where ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= ?)) order by "jobs"."retry_after" asc, "jobs"."id" asc limit ?",
        },
      }
    `);
  });

  test("tryLock and unlock", () => {
    const key = advisoryKeyOf(richAdvisory(), { id: 1, customer_id: "acme" });
    expect({
      key,
      tryLock: perEngine((d) => d.advisory.tryLock(key, "test")),
      unlock: perEngine((d) => d.advisory.unlock(key, "test")),
    }).toMatchInlineSnapshot(`
      {
        "key": "jobs:report-acme",
        "tryLock": {
          "mysql": {
            "parameters": [
              "test.jobs:report-acme",
            ],
            "sql": "select GET_LOCK(?, 0) as \`locked\`",
          },
          "postgres": {
            "parameters": [
              "jobs:report-acme",
            ],
            "sql": "select pg_try_advisory_lock(hashtextextended($1, 0)) as "locked"",
          },
          "sqlite": "NOT_SUPPORTED",
        },
        "unlock": {
          "mysql": {
            "parameters": [
              "test.jobs:report-acme",
            ],
            "sql": "select RELEASE_LOCK(?) as \`unlocked\`",
          },
          "postgres": {
            "parameters": [
              "jobs:report-acme",
            ],
            "sql": "select pg_advisory_unlock(hashtextextended($1, 0)) as "unlocked"",
          },
          "sqlite": "NOT_SUPPORTED",
        },
      }
    `);
  });

  test("batch claim: every key tried in one statement, the locked rows taken in one (MySQL: read back on the batch's session), acked and unlocked in one each", () => {
    const keys = ["jobs:report-acme", "jobs:report-bolt"];
    const ids = [7, 8];
    expect({
      tryLockMany: perEngine((d) => d.advisory.tryLockMany(keys, "test")),
      unlockMany: perEngine((d) => d.advisory.unlockMany(keys, "test")),
      takeMany: perEngine((d) => d.advisory.takeMany(richAdvisory(), ids, now)),
      readTakenMany: perEngine((d) => d.advisory.readTakenMany(richAdvisory(), ids, now)),
      settleAckMany: perEngine((d) => d.advisory.settleAckMany(richAdvisory(), ids, now)),
      uncountMany: perEngine((d) => d.advisory.uncountMany(richAdvisory(), ids)),
    }).toMatchInlineSnapshot(`
      {
        "readTakenMany": {
          "mysql": {
            "parameters": [
              7,
              8,
              "2024-05-01 12:00:00.123",
            ],
            "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\`, \`jobs\`.\`retry_after\`, \`jobs\`.\`processed_at\`, \`jobs\`.\`customer_id\` from \`jobs\` where \`id\` in (?, ?) and (\`jobs\`.\`processed_at\` is null and (\`jobs\`.\`retry_after\` is null or \`jobs\`.\`retry_after\` <= ?))",
          },
          "postgres": "NOT_SUPPORTED",
          "sqlite": "NOT_SUPPORTED",
        },
        "settleAckMany": {
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
          "sqlite": {
            "parameters": [
              "2024-05-01T12:00:00.123Z",
              7,
              8,
            ],
            "sql": "update "jobs" set "processed_at" = ? where "id" in (?, ?)",
          },
        },
        "takeMany": {
          "mysql": {
            "parameters": [
              7,
              8,
              "2024-05-01 12:00:00.123",
            ],
            "sql": "update \`jobs\` set \`attempt\` = \`attempt\` + 1 where \`id\` in (?, ?) and (\`jobs\`.\`processed_at\` is null and (\`jobs\`.\`retry_after\` is null or \`jobs\`.\`retry_after\` <= ?))",
          },
          "postgres": {
            "parameters": [
              [
                7,
                8,
              ],
              2024-05-01T12:00:00.123Z,
            ],
            "sql": "update "jobs" set "attempt" = "attempt" + 1 where "id" = any($1) and ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $2)) returning "id", "attempt", "payload", "retry_after", "processed_at", "customer_id"",
          },
          "sqlite": {
            "parameters": [
              7,
              8,
              "2024-05-01T12:00:00.123Z",
            ],
            "sql": "update "jobs" set "attempt" = "attempt" + 1 where "id" in (?, ?) and ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= ?)) returning "id", "attempt", "payload", "retry_after", "processed_at", "customer_id"",
          },
        },
        "tryLockMany": {
          "mysql": {
            "parameters": [
              "test.jobs:report-acme",
              "test.jobs:report-bolt",
            ],
            "sql": "select GET_LOCK(?, 0) as \`0\`, GET_LOCK(?, 0) as \`1\`",
          },
          "postgres": {
            "parameters": [
              "jobs:report-acme",
              "jobs:report-bolt",
            ],
            "sql": "select pg_try_advisory_lock(hashtextextended($1, 0)) as "0", pg_try_advisory_lock(hashtextextended($2, 0)) as "1"",
          },
          "sqlite": "NOT_SUPPORTED",
        },
        "uncountMany": {
          "mysql": {
            "parameters": [
              7,
              8,
            ],
            "sql": "update \`jobs\` set \`attempt\` = \`attempt\` - 1 where \`id\` in (?, ?)",
          },
          "postgres": {
            "parameters": [
              7,
              8,
            ],
            "sql": "update "jobs" set "attempt" = "attempt" - 1 where "id" in ($1, $2)",
          },
          "sqlite": {
            "parameters": [
              7,
              8,
            ],
            "sql": "update "jobs" set "attempt" = "attempt" - 1 where "id" in (?, ?)",
          },
        },
        "unlockMany": {
          "mysql": {
            "parameters": [
              "test.jobs:report-acme",
              "test.jobs:report-bolt",
            ],
            "sql": "select RELEASE_LOCK(?) as \`0\`, RELEASE_LOCK(?) as \`1\`",
          },
          "postgres": {
            "parameters": [
              "jobs:report-acme",
              "jobs:report-bolt",
            ],
            "sql": "select pg_advisory_unlock(hashtextextended($1, 0)) as "0", pg_advisory_unlock(hashtextextended($2, 0)) as "1"",
          },
          "sqlite": "NOT_SUPPORTED",
        },
      }
    `);
  });

  test("batch claim: a key listed twice or an empty list is refused (a session that locks a key twice holds it twice)", () => {
    for (const d of [postgresDialect, mysqlDialect]) {
      expect(() => d.advisory.tryLockMany(["jobs:a", "jobs:a"], "test")).toThrow(/a key is listed twice \(jobs:a, jobs:a\)/);
      expect(() => d.advisory.tryLockMany([], "test")).toThrow(/no keys/);
      expect(() => d.advisory.takeMany(richAdvisory(), [], now)).toThrow(/no ids/);
    }
  });

  test("take: count the attempt while the row is still claimable, returning the row as counted (MySQL: read back on the key's session)", () => {
    expect({
      withAttempt: perEngine((d) => d.advisory.take(richAdvisory(), 7, now)),
      withoutAttempt: perEngine((d) => d.advisory.take(idAdvisory(), 7, now)),
      readTaken: perEngine((d) => d.advisory.readTaken(richAdvisory(), 7)),
    }).toMatchInlineSnapshot(`
      {
        "readTaken": {
          "mysql": {
            "parameters": [
              7,
            ],
            "sql": "select \`jobs\`.\`id\`, \`jobs\`.\`attempt\`, \`jobs\`.\`payload\`, \`jobs\`.\`retry_after\`, \`jobs\`.\`processed_at\`, \`jobs\`.\`customer_id\` from \`jobs\` where \`jobs\`.\`id\` = ?",
          },
          "postgres": "NOT_SUPPORTED",
          "sqlite": "NOT_SUPPORTED",
        },
        "withAttempt": {
          "mysql": {
            "parameters": [
              7,
              "2024-05-01 12:00:00.123",
            ],
            "sql": "update \`jobs\` set \`attempt\` = \`attempt\` + 1 where \`id\` = ? and (\`jobs\`.\`processed_at\` is null and (\`jobs\`.\`retry_after\` is null or \`jobs\`.\`retry_after\` <= ?))",
          },
          "postgres": {
            "parameters": [
              7,
              2024-05-01T12:00:00.123Z,
            ],
            "sql": "update "jobs" set "attempt" = "attempt" + 1 where "id" = $1 and ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $2)) returning "id", "attempt", "payload", "retry_after", "processed_at", "customer_id"",
          },
          "sqlite": {
            "parameters": [
              7,
              "2024-05-01T12:00:00.123Z",
            ],
            "sql": "update "jobs" set "attempt" = "attempt" + 1 where "id" = ? and ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= ?)) returning "id", "attempt", "payload", "retry_after", "processed_at", "customer_id"",
          },
        },
        "withoutAttempt": {
          "mysql": {
            "parameters": [
              7,
            ],
            "sql": "update \`jobs\` set \`id\` = \`id\` where \`id\` = ?",
          },
          "postgres": {
            "parameters": [
              7,
            ],
            "sql": "update "jobs" set "id" = "id" where "id" = $1 returning "id", "payload"",
          },
          "sqlite": {
            "parameters": [
              7,
            ],
            "sql": "update "jobs" set "id" = "id" where "id" = ? returning "id", "payload"",
          },
        },
      }
    `);
  });

  test("settlements", () => {
    expect({
      ack: perEngine((d) => d.advisory.settleAck(richAdvisory(), 7, now)),
      ackDelete: perEngine((d) => d.advisory.settleAck(idAdvisory(), 7, now)),
      retryLater: perEngine((d) => d.advisory.settleRetry(richAdvisory(), 7, new Date("2024-05-01T12:10:00.000Z"))),
    }).toMatchInlineSnapshot(`
      {
        "ack": {
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
          "sqlite": {
            "parameters": [
              "2024-05-01T12:00:00.123Z",
              7,
            ],
            "sql": "update "jobs" set "processed_at" = ? where "id" = ?",
          },
        },
        "ackDelete": {
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
          "sqlite": {
            "parameters": [
              7,
            ],
            "sql": "delete from "jobs" where "id" = ?",
          },
        },
        "retryLater": {
          "mysql": {
            "parameters": [
              "2024-05-01 12:10:00.000",
              7,
            ],
            "sql": "update \`jobs\` set \`retry_after\` = ? where \`id\` = ?",
          },
          "postgres": {
            "parameters": [
              2024-05-01T12:10:00.000Z,
              7,
            ],
            "sql": "update "jobs" set "retry_after" = $1 where "id" = $2",
          },
          "sqlite": {
            "parameters": [
              "2024-05-01T12:10:00.000Z",
              7,
            ],
            "sql": "update "jobs" set "retry_after" = ? where "id" = ?",
          },
        },
      }
    `);
  });

  test("keys: from the template, table-prefixed; MySQL names prefixed by the database and hashed past 64", () => {
    expect(advisoryKeyOf(idAdvisory(), { id: 42 })).toBe("jobs:job-42");
    expect(advisoryKeyOf(richAdvisory(), { customer_id: "acme" })).toBe("jobs:report-acme");
    expect(() => advisoryKeyOf(richAdvisory(), { id: 1 })).toThrow(/customer_id/);
    expect(mysqlLockName("test", "jobs:job-42")).toBe("test.jobs:job-42");
    const long = mysqlLockName("test", `jobs:${"x".repeat(80)}`);
    expect(long).toMatch(/^[0-9a-f]{64}$/);
    expect(mysqlLockName("test", `jobs:${"x".repeat(80)}`)).toBe(long);
    expect(mysqlLockName("test", "x".repeat(59))).toHaveLength(64);
    expect(mysqlLockName("test", "x".repeat(60))).toMatch(/^[0-9a-f]{64}$/);
  });

  test("settleSnooze: the retryAfter column and the take's attempt given back, in one statement on the key's session", () => {
    expect(perEngine((d) => d.advisory.settleSnooze(richAdvisory(), 7, new Date("2024-05-01T12:10:00.000Z")))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:10:00.000",
            7,
          ],
          "sql": "update \`jobs\` set \`retry_after\` = ?, \`attempt\` = \`attempt\` - 1 where \`id\` = ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:10:00.000Z,
            7,
          ],
          "sql": "update "jobs" set "retry_after" = $1, "attempt" = "attempt" - 1 where "id" = $2",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:10:00.000Z",
            7,
          ],
          "sql": "update "jobs" set "retry_after" = ?, "attempt" = "attempt" - 1 where "id" = ?",
        },
      }
    `);
  });
});
