import { afterAll, beforeAll, describe } from "vitest";
import { capSlotScenarios } from "./cap-slot-scenarios.js";
import { advisoryScenarios } from "./advisory-scenarios.js";
import { commonScenarios } from "./common-scenarios.js";
import { fifoRaceScenarios, fifoScenarios } from "./fifo-scenarios.js";
import { leaseScenarios } from "./lease-scenarios.js";
import { orderKeyLockScenarios, rowLockScenarios } from "./row-lock-scenarios.js";
import { connectPostgres, selects, type LiveEngine } from "../support/servers.js";

// Runs against a real PostgreSQL (SQLINBOX_PG_URL); an unreachable server fails the file.
describe.runIf(selects("postgres"))("live PostgreSQL", () => {
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
  capSlotScenarios(get);
  orderKeyLockScenarios(get);
  leaseScenarios(get, ["timestamptz", "timestamptz(3)", "timestamptz(0)"], true);
  fifoScenarios(get);
  fifoRaceScenarios(get);
  advisoryScenarios(get);
  commonScenarios(get, ["10.4", "9.6.24"]);
});
