import { describe, expect, test } from "vitest";
import { checkServerVersion, formatUtcText, mysqlDialect, parseUtcText, postgresDialect, sqliteDialect, truncateToPrecision } from "../../src/internal.js";

const t = new Date("2024-05-01T12:34:56.789Z");

describe("time codecs", () => {
  test("truncate rounds down to the column's precision", () => {
    expect(truncateToPrecision(t, 6).toISOString()).toBe("2024-05-01T12:34:56.789Z");
    expect(truncateToPrecision(t, 3).toISOString()).toBe("2024-05-01T12:34:56.789Z");
    expect(truncateToPrecision(t, 1).toISOString()).toBe("2024-05-01T12:34:56.700Z");
    expect(truncateToPrecision(t, 0).toISOString()).toBe("2024-05-01T12:34:56.000Z");
  });

  test("each engine's parameter: Date (Postgres), DATETIME(n) text (MySQL), fixed-width ISO text (SQLite)", () => {
    expect(postgresDialect.time.encode(t, 6)).toEqual(t);
    expect(mysqlDialect.time.encode(t, 0)).toBe("2024-05-01 12:34:56");
    expect(mysqlDialect.time.encode(t, 3)).toBe("2024-05-01 12:34:56.789");
    expect(mysqlDialect.time.encode(t, 6)).toBe("2024-05-01 12:34:56.789000");
    expect(sqliteDialect.time.encode(t, 3)).toBe("2024-05-01T12:34:56.789Z");
    expect(sqliteDialect.time.encode(new Date("2024-05-01T00:00:00Z"), 3)).toHaveLength(24);
    expect(formatUtcText(new Date("0999-01-02T03:04:05.006Z"), 3)).toBe("0999-01-02 03:04:05.006");
  });

  test("decode reads what the drivers return", () => {
    expect(mysqlDialect.time.decode("2024-05-01 12:34:56.789000")).toEqual(t);
    expect(mysqlDialect.time.decode("2024-05-01 12:34:56")).toEqual(truncateToPrecision(t, 0));
    expect(mysqlDialect.time.decode(t)).toEqual(t);
    expect(postgresDialect.time.decode("2024-05-01 14:34:56.789+02")).toEqual(t);
    expect(postgresDialect.time.decode(null)).toBeNull();
    expect(sqliteDialect.time.decode("2024-05-01T12:34:56.789Z")).toEqual(t);
    expect(parseUtcText("2024-05-01T10:34:56.789-02:00")).toEqual(t);
  });
});

describe("server versions", () => {
  test.each([
    ["postgres", "10.4", "11"],
    ["mysql", "8.0.0", "8.0.1"],
    ["mysql", "10.5.9-MariaDB", "10.6"],
    ["sqlite", "3.34.1", "3.35"],
  ] as const)("%s %s is refused, naming %s", (engine, found, required) => {
    expect(() => checkServerVersion(engine, found)).toThrow(expect.objectContaining({ code: "ServerTooOld" }));
    expect(() => checkServerVersion(engine, found)).toThrow(new RegExp(`${found.replace(/\./g, "\\.")} is older than ${required.replace(/\./g, "\\.")}`));
  });

  test("TiDB is refused by name: it reports MySQL 8.0.11 but runs SKIP LOCKED without locking", () => {
    expect(() => checkServerVersion("mysql", "8.0.11-TiDB-v7.5.1")).toThrow(expect.objectContaining({ code: "UnsupportedForm" }));
    expect(() => checkServerVersion("mysql", "8.0.11-TiDB-v7.5.1")).toThrow(/TiDB \(8\.0\.11-TiDB-v7\.5\.1\) runs FOR UPDATE SKIP LOCKED without locking/);
  });

  test.each([
    ["postgres", "15.20 (Debian 15.20-0+deb12u1)", "PostgreSQL 15.20"],
    ["postgres", "11.0", "PostgreSQL 11.0"],
    ["mysql", "8.0.36", "MySQL 8.0.36"],
    ["mysql", "8.0.1", "MySQL 8.0.1"],
    ["mysql", "10.11.19-MariaDB-0+deb12u1", "MariaDB 10.11.19"],
    ["mysql", "5.5.5-10.6.2-MariaDB", "MariaDB 10.6.2"],
    ["sqlite", "3.45.1", "SQLite 3.45.1"],
  ] as const)("%s %s is accepted as %s", (engine, found, label) => {
    expect(checkServerVersion(engine, found)).toBe(label);
  });
});
