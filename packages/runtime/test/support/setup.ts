/** The runtime project's setup file: after each test file, the SQLite files its engines made are removed. */
import { afterAll } from "vitest";
import { cleanupEngines } from "./engines.js";

afterAll(cleanupEngines);
