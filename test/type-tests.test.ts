/**
 * The type tests: every `*.test-d.ts` of every package compiles, so every rule whose compile error a type test
 * expects (`// @ts-expect-error`) still makes it, and every `expectTypeOf` holds. One `tsc --noEmit` over the
 * packages that have type tests, as one program (`scripts/type-tests.mjs`), run here beside the other files.
 * And that check fails where it should: on a copy of a package whose type test expects an error that no rule makes.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const script = join(root, "scripts", "type-tests.mjs");
const run = (cwd: string) => spawnSync(process.execPath, [script], { cwd, encoding: "utf8" });

describe("type tests", () => {
  const scratch = mkdtempSync(join(tmpdir(), "sqlinbox-type-tests-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  test("every package's type tests compile", () => {
    const result = run(root);
    expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
    expect(result.stdout).toMatch(/type tests passed: tsc over .*packages\/core.*packages\/runtime/);
  }, 180_000);

  test("a type test that expects an error no rule makes fails the check, named by file and line", () => {
    // A repository of one package: the root tsconfig and node_modules of this one, and core's test config.
    symlinkSync(join(root, "node_modules"), join(scratch, "node_modules"));
    copyFileSync(join(root, "tsconfig.json"), join(scratch, "tsconfig.json"));
    const pkg = join(scratch, "packages", "probe");
    mkdirSync(join(pkg, "test"), { recursive: true });
    copyFileSync(join(root, "packages", "core", "tsconfig.test.json"), join(pkg, "tsconfig.test.json"));
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "probe", private: true, type: "module" }));
    writeFileSync(join(pkg, "test", "rule.test-d.ts"), "export const n: number = 1;\n// @ts-expect-error a rule that no longer exists\nexport const m: number = 2;\n");
    const result = run(scratch);
    expect(result.status).toBe(1);
    expect(`${result.stdout}${result.stderr}`).toMatch(/rule\.test-d\.ts\(2,1\): error TS2578: Unused '@ts-expect-error' directive/);
    expect(result.stderr).toMatch(/type tests failed \(tsc over packages\/probe/);
  }, 60_000);
});
