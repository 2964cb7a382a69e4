/**
 * A setup file of every test project: when `SQLINBOX_ENGINES` leaves engines out, each test file
 * shows one skipped line saying which, so a run never reads as covering more than it did, and a
 * file whose every test is on a left-out engine still has a test to report.
 */
import { test } from "vitest";
import { leftOutEngines } from "./engine-selection.js";

if (leftOutEngines.length > 0) test.skip(`SQLINBOX_ENGINES=${process.env["SQLINBOX_ENGINES"]}: ${leftOutEngines.join(", ")} left out of this run`, () => {});
