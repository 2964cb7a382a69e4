import { afterAll, beforeAll, describe } from "vitest";
import { advisoryScenarios, longLockNameScenario } from "./live/advisory-scenarios.js";
import { commonScenarios } from "./live/common-scenarios.js";
import { fifoRaceScenarios, fifoScenarios } from "./live/fifo-scenarios.js";
import { leaseScenarios } from "./live/lease-scenarios.js";
import { orderKeyLockScenarios, rowLockScenarios } from "./live/row-lock-scenarios.js";
import { connectMariadb, type LiveEngine } from "./live/servers.js";

// Runs against a real MariaDB (SQLINBOX_MYSQL_URL) with the SQL MySQL 8 accepts too; an unreachable server fails the file.
describe("live MariaDB", () => {
  let engine: LiveEngine | undefined;
  beforeAll(async () => {
    engine = await connectMariadb();
  });
  afterAll(async () => {
    await engine?.close();
  });
  const get = (): LiveEngine =>
    engine ??
    (() => {
      throw new Error("MariaDB is not connected: run `bash scripts/services.sh`");
    })();

  rowLockScenarios(get);
  orderKeyLockScenarios(get);
  leaseScenarios(get, ["datetime(3)", "datetime", "datetime(6)"], true);
  fifoScenarios(get);
  fifoRaceScenarios(get);
  advisoryScenarios(get);
  longLockNameScenario(get);
  commonScenarios(get, ["8.0.0", "10.5.9-MariaDB", "5.7.44"]);
});
