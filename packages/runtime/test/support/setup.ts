/**
 * The setup file of the runtime project and of the projects that run its fixtures: after each test file, the SQLite
 * files its engines made are removed, and any fixture process a failed test left running is killed.
 */
import { afterAll } from "vitest";
import { stopStartedFixtures } from "./claim-forms.js";
import { cleanupEngines } from "./engines.js";

afterAll(stopStartedFixtures);
afterAll(cleanupEngines);
