// The type tests (`*.test-d.ts`): one `tsc --noEmit` over the sources and tests of every package that has type
// tests, as one program. Their tsconfig.test.json files are the same but for the folder (checked here: a package
// whose options differ stops the run), so one program checks what each would, and parses the packages they share
// once. test/type-tests.test.ts runs it in `npm test` and `npm run test:quick`. A type test proves a compile error
// exists (`// @ts-expect-error`, unused once the rule is gone) or that a type is what it says (`expectTypeOf`):
// either failing is a compile error here, printed with its file and line.
//
//   node scripts/type-tests.mjs
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { join, relative } from "node:path";

/** Whether `dir` holds a `*.test-d.ts` file, at any depth (node_modules and dist left out). */
function hasTypeTests(dir) {
  if (!existsSync(dir)) return false;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules" && entry.name !== "dist" && hasTypeTests(join(dir, entry.name))) return true;
    } else if (entry.name.endsWith(".test-d.ts")) return true;
  }
  return false;
}

const packages = ["packages", "examples"]
  .flatMap((top) => (existsSync(top) ? readdirSync(top).map((name) => join(top, name)) : []))
  .filter((dir) => existsSync(join(dir, "tsconfig.test.json")) && (hasTypeTests(join(dir, "src")) || hasTypeTests(join(dir, "test"))));
if (packages.length === 0) throw new Error("no package with type tests (*.test-d.ts) and a tsconfig.test.json: run this from the repository's root");

const configOf = (dir) => JSON.parse(readFileSync(join(dir, "tsconfig.test.json"), "utf8"));
const [first] = packages;
const shared = configOf(first);
for (const dir of packages) {
  const config = configOf(dir);
  if (!isDeepStrictEqual(config.compilerOptions, shared.compilerOptions) || config.extends !== shared.extends || !isDeepStrictEqual(config.include, shared.include))
    throw new Error(`${dir}/tsconfig.test.json differs from ${first}/tsconfig.test.json: check its type tests on their own (npx tsc --noEmit -p ${dir}/tsconfig.test.json)`);
}

// The one program's tsconfig, under node_modules (whose @types its `types` find by walking up), in a folder of
// this process's own (two runs at once each check their own list), removed after.
const folder = join("node_modules", ".cache", "sqlinbox-type-tests", String(process.pid));
mkdirSync(folder, { recursive: true });
const up = (path) => relative(folder, path);
writeFileSync(
  join(folder, "tsconfig.json"),
  JSON.stringify(
    { extends: up(join(first, shared.extends)), compilerOptions: shared.compilerOptions, include: packages.flatMap((dir) => shared.include.map((inc) => up(join(dir, inc)))) },
    null,
    2,
  ),
);
const started = performance.now();
const result = spawnSync(process.execPath, [join("node_modules", "typescript", "bin", "tsc"), "--noEmit", "-p", join(folder, "tsconfig.json")], { stdio: "inherit" });
rmSync(folder, { recursive: true, force: true });
const seconds = ((performance.now() - started) / 1000).toFixed(1);
if (result.status !== 0) {
  console.error(`type tests failed (tsc over ${packages.join(", ")}, ${seconds} s)`);
  process.exit(1);
}
console.log(`type tests passed: tsc over ${packages.join(", ")} in ${seconds} s`);
