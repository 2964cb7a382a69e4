/** `parseDatabaseUrl`: the engine of each scheme, and the URLs it refuses, without loading a driver. */
import { describe, expect, test } from "vitest";
import { isSqlInboxError } from "@sqlinbox/core";
import { parseDatabaseUrl } from "../src/index.js";

describe("parseDatabaseUrl", () => {
  test.each([
    ["postgres://app@db/app", "postgres"],
    ["postgresql://app@db/app", "postgres"],
    ["POSTGRES://app@db/app", "postgres"],
    ["mysql://root@db/app", "mysql"],
    ["mariadb://root@db/app", "mysql"],
    ["sqlite::memory:", "sqlite"],
    ["sqlite:data/app.db", "sqlite"],
    ["sqlite:///tmp/app.db", "sqlite"],
  ])("%s is %s", (url, engine) => {
    expect(parseDatabaseUrl(url).engine).toBe(engine);
  });

  test("a scheme of no engine, and a SQLite URL without a file, are Declaration errors that show no part of the URL", () => {
    for (const [url, message] of [
      ["redis://u:s3cret@cache/0?password=s3cret", 'unsupported database URL scheme "redis": use postgres://, mysql://, mariadb://, sqlite::memory: or sqlite:path'],
      ["sqlite:", "the SQLite URL names no file: use sqlite::memory: or sqlite:path/to/file.db"],
    ] as const) {
      let thrown: unknown;
      try {
        parseDatabaseUrl(url);
      } catch (error) {
        thrown = error;
      }
      expect(isSqlInboxError(thrown, "Declaration"), url).toBe(true);
      expect((thrown as Error).message).toBe(`Declaration: ${message}`);
    }
  });

  test("opens SQLite in memory with the driver loaded on open", async () => {
    const { db, engine, poolMax } = await parseDatabaseUrl("sqlite::memory:").open({});
    try {
      expect([engine, poolMax]).toEqual(["sqlite", 1]);
      expect((await db.selectNoFrom((eb) => eb.val(1).as("one")).execute())[0]).toEqual({ one: 1 });
    } finally {
      await db.destroy();
    }
  });
});
