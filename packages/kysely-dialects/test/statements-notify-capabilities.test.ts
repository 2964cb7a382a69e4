import { describe, expect, test } from "vitest";
import { mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect } from "../src/index.js";
import { perEngine } from "./render.js";
import { seedByHand } from "./specs.js";

describe("notify (LISTEN/NOTIFY: Postgres only)", () => {
  test("listen quotes the channel as an identifier; notify passes it as a parameter", () => {
    expect({
      listen: perEngine((d) => d.notify?.listen('sqlinbox_odd"name')),
      unlistenAll: perEngine((d) => d.notify?.unlistenAll()),
      notify: perEngine((d) => d.notify?.notify("sqlinbox_report_jobs")),
    }).toMatchInlineSnapshot(`
      {
        "listen": {
          "mysql": "NOT_SUPPORTED",
          "postgres": {
            "parameters": [],
            "sql": "LISTEN "sqlinbox_odd""name"",
          },
          "sqlite": "NOT_SUPPORTED",
        },
        "notify": {
          "mysql": "NOT_SUPPORTED",
          "postgres": {
            "parameters": [
              "sqlinbox_report_jobs",
            ],
            "sql": "select pg_notify($1, '')",
          },
          "sqlite": "NOT_SUPPORTED",
        },
        "unlistenAll": {
          "mysql": "NOT_SUPPORTED",
          "postgres": {
            "parameters": [],
            "sql": "UNLISTEN *",
          },
          "sqlite": "NOT_SUPPORTED",
        },
      }
    `);
  });

  test("the capability says whether the group is there", () => {
    for (const dialect of [postgresDialect, mysqlDialect, sqliteDialect] as EngineDialect[]) {
      expect(dialect.notify !== null).toBe(dialect.capabilities.listenNotify);
    }
  });
});

describe("capabilities, side by side", () => {
  test("every engine states each capability", () => {
    expect({
      postgres: postgresDialect.capabilities,
      mysql: mysqlDialect.capabilities,
      sqlite: sqliteDialect.capabilities,
    }).toMatchInlineSnapshot(`
      {
        "mysql": {
          "advisoryLockName": "database-and-key",
          "advisoryLocks": "session",
          "arrayParameters": false,
          "claimIsolation": "read committed",
          "engine": "mysql",
          "heldRowsAckTogether": true,
          "insertReturning": false,
          "listenNotify": false,
          "maxParameters": 65535,
          "nullsFirstByDefault": true,
          "readsTimeAsDate": false,
          "rowLock": true,
          "singleWriter": false,
          "tableSchemas": true,
          "updateReturning": false,
        },
        "postgres": {
          "advisoryLockName": "key-hash",
          "advisoryLocks": "session",
          "arrayParameters": true,
          "engine": "postgres",
          "heldRowsAckTogether": true,
          "insertReturning": true,
          "listenNotify": true,
          "maxParameters": 65535,
          "nullsFirstByDefault": false,
          "readsTimeAsDate": true,
          "rowLock": true,
          "singleWriter": false,
          "tableSchemas": true,
          "updateReturning": true,
        },
        "sqlite": {
          "advisoryLockName": null,
          "advisoryLocks": "process",
          "arrayParameters": false,
          "engine": "sqlite",
          "heldRowsAckTogether": false,
          "insertReturning": true,
          "listenNotify": false,
          "maxParameters": 32766,
          "nullsFirstByDefault": true,
          "readsTimeAsDate": false,
          "rowLock": false,
          "singleWriter": true,
          "tableSchemas": false,
          "updateReturning": true,
        },
      }
    `);
  });

  test("forms follow the capabilities: no row lock without SKIP LOCKED, no one-statement claim without UPDATE … RETURNING, no lock statements for process-held keys", () => {
    const now = new Date("2024-05-01T12:00:00.000Z");
    for (const dialect of [postgresDialect, mysqlDialect, sqliteDialect] as EngineDialect[]) {
      const { capabilities } = dialect;
      expect(dialect.rowLock !== null).toBe(capabilities.rowLock);
      expect(dialect.advisory.tryLock("k", "db") !== null).toBe(capabilities.advisoryLocks === "session");
      expect(dialect.advisory.tryLock("k", "db") !== null).toBe(capabilities.advisoryLockName !== null);
      // The one-statement claim is there exactly where UPDATE … RETURNING is.
      expect(dialect.lease.claim(seedByHand, { limit: 1, now, until: now, precision: 3 }) !== null).toBe(capabilities.updateReturning);
    }
  });
});
