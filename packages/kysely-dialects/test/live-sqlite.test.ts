import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sqliteDialect } from "../src/index.js";
import { commonScenarios, processAdvisoryScenarios } from "./live/common-scenarios.js";
import { fifoScenarios } from "./live/fifo-scenarios.js";
import { leaseScenarios } from "./live/lease-scenarios.js";
import { connectSqlite, type LiveEngine } from "./live/servers.js";

describe.each(["memory", "file"] as const)("live SQLite (%s)", (where) => {
  let engine: LiveEngine | undefined;
  beforeAll(() => {
    engine = connectSqlite(where);
  });
  afterAll(async () => {
    await engine?.close();
  });
  const get = (): LiveEngine =>
    engine ??
    (() => {
      throw new Error("SQLite is not open");
    })();

  test("row lock: NOT_SUPPORTED (rowLock is null, the capability says so)", () => {
    expect(sqliteDialect.rowLock).toBeNull();
    expect(sqliteDialect.capabilities.rowLock).toBe(false);
  });
  leaseScenarios(get, ["text"], false);
  fifoScenarios(get);
  processAdvisoryScenarios(get);
  commonScenarios(get, ["3.34.1", "3.8.0"]);
});
