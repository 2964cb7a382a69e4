import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, test } from "vitest";

// The API reference (`npm run docs`, TypeDoc over each package's public entry point) builds without a
// warning: typedoc.json turns on the checks for broken `{@link …}` targets and for public types that refer
// to a type the reference does not document, and treats every warning as an error. A type referred to but
// deliberately left out of the root exports is listed in its package's typedoc.json.
// Runs after `npm run build` (TypeDoc reads the sibling packages' declarations through project references).
const root = resolve(import.meta.dirname, "..");
const out = mkdtempSync(join(tmpdir(), "sqlinbox-api-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

test("npm run docs builds the API reference without warnings", async () => {
  const result = await promisify(execFile)(join(root, "node_modules/.bin/typedoc"), ["--out", out], { cwd: root, maxBuffer: 16 * 1024 * 1024 }).catch(
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? "", stderr: `${error.stderr ?? ""}\nexit ${error.code}` }),
  );
  const output = `${result.stdout}\n${result.stderr}`;
  expect(output.split("\n").filter((line) => /warning|error/i.test(line) && !/Found 0 errors and 0 warnings/.test(line))).toEqual([]);
  for (const page of ["index.html", "modules/_sqlinbox_core.html", "modules/_sqlinbox_runtime.html", "classes/_sqlinbox_runtime.SqlBroker.html"]) {
    expect(existsSync(join(out, page)), page).toBe(true);
  }
}, 300_000);
