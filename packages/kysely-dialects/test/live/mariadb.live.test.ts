import { afterAll, beforeAll, describe } from "vitest";
import { capSlotScenarios } from "./cap-slot-scenarios.js";
import { advisoryScenarios, longLockNameScenario } from "./advisory-scenarios.js";
import { commonScenarios } from "./common-scenarios.js";
import { fifoRaceScenarios, fifoScenarios } from "./fifo-scenarios.js";
import { leaseScenarios } from "./lease-scenarios.js";
import { orderKeyLockScenarios, rowLockScenarios } from "./row-lock-scenarios.js";
import { connectMariadb, selects, type LiveEngine } from "../support/servers.js";

// Runs against a real MariaDB (SQLINBOX_MYSQL_URL) with the SQL MySQL 8 accepts too; an unreachable server fails the file.
describe.runIf(selects("mariadb"))("live MariaDB", () => {
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
  capSlotScenarios(get);
  orderKeyLockScenarios(get);
  leaseScenarios(get, ["datetime(3)", "datetime", "datetime(6)"], true);
  fifoScenarios(get);
  fifoRaceScenarios(get);
  advisoryScenarios(get);
  longLockNameScenario(get);
  commonScenarios(get, ["8.0.0", "10.5.9-MariaDB", "5.7.44"]);
});
