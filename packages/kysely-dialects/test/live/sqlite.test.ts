import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sqliteDialect } from "../../src/index.js";
import { simpleRowLock } from "../support/specs.js";
import { commonScenarios, processAdvisoryScenarios } from "./common-scenarios.js";
import { fifoScenarios } from "./fifo-scenarios.js";
import { leaseScenarios } from "./lease-scenarios.js";
import { connectSqlite, selects, type LiveEngine } from "../support/servers.js";

describe.runIf(selects("sqlite")).each(["memory", "file"] as const)("live SQLite (%s)", (where) => {
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

  test("row lock: NOT_SUPPORTED (the capability says so, and every row-lock statement refuses)", () => {
    expect(sqliteDialect.capabilities.rowLock).toBe(false);
    expect(() => sqliteDialect.rowLock.claim(simpleRowLock(), { limit: 1, now: new Date() })).toThrow(/UnsupportedForm: no rowLock.claim statement on sqlite: it has no row locks/);
  });
  leaseScenarios(get, ["text"], false);
  fifoScenarios(get);
  processAdvisoryScenarios(get);
  commonScenarios(get, ["3.34.1", "3.8.0"]);
});
