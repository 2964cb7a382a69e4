import { afterAll, beforeAll, describe } from "vitest";
import { advisoryScenarios } from "./live/advisory-scenarios.js";
import { commonScenarios } from "./live/common-scenarios.js";
import { fifoRaceScenarios, fifoScenarios } from "./live/fifo-scenarios.js";
import { leaseScenarios } from "./live/lease-scenarios.js";
import { orderKeyLockScenarios, rowLockScenarios } from "./live/row-lock-scenarios.js";
import { connectPostgres, type LiveEngine } from "./live/servers.js";

// Runs against a real PostgreSQL (SQLINBOX_PG_URL); an unreachable server fails the file.
describe("live PostgreSQL", () => {
  let engine: LiveEngine | undefined;
  beforeAll(async () => {
    engine = await connectPostgres();
  });
  afterAll(async () => {
    await engine?.close();
  });
  const get = (): LiveEngine =>
    engine ??
    (() => {
      throw new Error("PostgreSQL is not connected: run `bash scripts/services.sh`");
    })();

  rowLockScenarios(get);
  orderKeyLockScenarios(get);
  leaseScenarios(get, ["timestamptz", "timestamptz(3)", "timestamptz(0)"], true);
  fifoScenarios(get);
  fifoRaceScenarios(get);
  advisoryScenarios(get);
  commonScenarios(get, ["10.4", "9.6.24"]);
});
