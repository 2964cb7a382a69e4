import { describe, expect, test } from "vitest";
import { mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect } from "../../src/index.js";
import { builds, perEngine } from "../support/render.js";
import { seedByHand } from "../support/specs.js";

describe("notify (LISTEN/NOTIFY: Postgres only)", () => {
  test("listen quotes the channel as an identifier; notify passes it and the group (empty: every group) as parameters", () => {
    expect({
      listen: perEngine((d) => d.notify?.listen('sqlinbox_odd"name')),
      unlistenAll: perEngine((d) => d.notify?.unlistenAll()),
      notify: perEngine((d) => d.notify?.notify("sqlinbox_report_jobs")),
      notifyGroup: perEngine((d) => d.notify?.notify("sqlinbox_report_jobs", "emails")),
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
              "",
            ],
            "sql": "select pg_notify($1, $2)",
          },
          "sqlite": "NOT_SUPPORTED",
        },
        "notifyGroup": {
          "mysql": "NOT_SUPPORTED",
          "postgres": {
            "parameters": [
              "sqlinbox_report_jobs",
              "emails",
            ],
            "sql": "select pg_notify($1, $2)",
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

  test("the capability says whether its statements exist", () => {
    for (const dialect of [postgresDialect, mysqlDialect, sqliteDialect] as EngineDialect[]) {
      expect(builds(() => dialect.notify.notify("c"))).toBe(dialect.capabilities.listenNotify);
      expect(builds(() => dialect.notify.listen("c"))).toBe(dialect.capabilities.listenNotify);
      expect(builds(() => dialect.notify.unlistenAll())).toBe(dialect.capabilities.listenNotify);
    }
  });
});

describe("file wakes: what a watch of a shared database file reads", () => {
  test("the statements exist where processes share a file (SQLite), and refuse naming the capability elsewhere", () => {
    for (const dialect of [postgresDialect, mysqlDialect, sqliteDialect] as EngineDialect[]) {
      expect(builds(() => dialect.fileWake.databaseFile())).toBe(dialect.capabilities.fileWakes);
      expect(builds(() => dialect.fileWake.dataVersion())).toBe(dialect.capabilities.fileWakes);
      if (!dialect.capabilities.fileWakes) expect(() => dialect.fileWake.dataVersion()).toThrow(/capabilities\.fileWakes is false/);
    }
    expect(sqliteDialect.capabilities.fileWakes).toBe(true);
    expect(sqliteDialect.fileWake.databaseFile()).toMatchObject({ sql: 'select "file" from pragma_database_list as "d" where "name" = ?', parameters: ["main"] });
    expect(sqliteDialect.fileWake.dataVersion()).toMatchObject({ sql: 'select "data_version" from pragma_data_version as "v"', parameters: [] });
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
          "fileWakes": false,
          "heldRowsAckTogether": true,
          "insertReturning": false,
          "jsonTextCast": "char",
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
          "fileWakes": false,
          "heldRowsAckTogether": true,
          "insertReturning": true,
          "jsonTextCast": "text",
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
          "fileWakes": true,
          "heldRowsAckTogether": false,
          "insertReturning": true,
          "jsonTextCast": "text",
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
      expect(builds(() => dialect.rowLock.claim(seedByHand, { limit: 1, now }))).toBe(capabilities.rowLock);
      expect(builds(() => dialect.advisory.tryLock("k", "db"))).toBe(capabilities.advisoryLocks === "session");
      expect(builds(() => dialect.advisory.tryLock("k", "db"))).toBe(capabilities.advisoryLockName !== null);
      // The one-statement claim is there exactly where UPDATE … RETURNING is.
      expect(builds(() => dialect.lease.claim(seedByHand, { limit: 1, now, until: now, precision: 3 }))).toBe(capabilities.updateReturning);
      expect(dialect.lease.claimsInOneStatement).toBe(capabilities.updateReturning);
    }
  });
});
