import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import ts from "typescript";

/**
 * A TypeScript fixture module as JavaScript, for tests that run the bin on it many times: `--module x.ts`
 * loads tsx in every run (about 0.8 s of CPU each), a `.mjs` does not. Written beside the fixtures (so its
 * `@sqlinbox/*` imports resolve as the `.ts` file's do), named by a hash of the source (a change makes a new
 * file), through a rename (test files that compile the same fixture at once each write whole files).
 * Loading a `.ts` module through tsx stays tested where the commands are (`exit-codes`, `ddl`, `asyncapi`, …).
 */
export function compiledFixture(path: string): string {
  const source = readFileSync(path, "utf8");
  const hash = createHash("sha256").update(source).digest("hex").slice(0, 12);
  const out = join(dirname(path), ".compiled", `${basename(path, ".ts")}.${hash}.mjs`);
  if (existsSync(out)) return out;
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }, fileName: path });
  mkdirSync(dirname(out), { recursive: true });
  const partial = `${out}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(partial, outputText);
  renameSync(partial, out);
  return out;
}
