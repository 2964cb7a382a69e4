/**
 * Telemetry absent costs nothing: when `@opentelemetry/api` cannot be resolved the runtime loads
 * the no-op, whose hooks return nothing; and a whole app drains in a process where the package
 * is hidden from module resolution.
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { loadTelemetry } from "../../src/telemetry/load-telemetry.js";
import { noTelemetry } from "../../src/telemetry/telemetry.js";

const runtimeRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");

describe("telemetry absent", () => {
  test("an API that cannot be imported gives the no-op, whose hooks return nothing", async () => {
    const missing = Object.assign(new Error("Cannot find package '@opentelemetry/api'"), { code: "ERR_MODULE_NOT_FOUND" });
    const telemetry = await loadTelemetry({ enabled: true }, () => Promise.reject(missing));
    expect(telemetry).toBe(noTelemetry);
    expect(telemetry.enabled).toBe(false);
    expect(telemetry.subscription({ route: "r", table: "t", form: "lease", dbSystem: "sqlite", headersColumn: undefined })).toBeUndefined();
    expect(telemetry.publisher({ dbSystem: "sqlite" })).toBeUndefined();
    expect(telemetry.observe({ subscriptions: [], databases: [] })).toBe(telemetry.observe({ subscriptions: [], databases: [] }));
  });

  test("telemetry: false never imports the API", async () => {
    let imported = false;
    const telemetry = await loadTelemetry({ enabled: false }, async () => {
      imported = true;
      return import("@opentelemetry/api");
    });
    expect(telemetry).toBe(noTelemetry);
    expect(imported).toBe(false);
  });

  test("the API installed with no tracer or meter provider registered is the no-op: no hook, nothing paid per delivery", async () => {
    const telemetry = await loadTelemetry({ enabled: true });
    expect(telemetry).toBe(noTelemetry);
    expect(telemetry.publisher({ dbSystem: "sqlite" })).toBeUndefined();
    expect(telemetry.subscription({ route: "r", table: "t", form: "lease", dbSystem: "sqlite", headersColumn: undefined })).toBeUndefined();
  });

  test("an app drains in a process where @opentelemetry/api cannot be resolved", () => {
    const child = spawnSync(
      process.execPath,
      ["--import", "tsx", "--import", "./test/support/fixtures/hide-otel.mjs", "--conditions=@sqlinbox/source", "test/support/fixtures/drain-without-otel.ts"],
      {
        cwd: runtimeRoot,
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(child.stderr).not.toContain("Error");
    expect(child.stdout.trim().split("\n")).toEqual(["@opentelemetry/api: not resolvable", "drained 3 jobs"]);
    expect(child.status).toBe(0);
  });
});
