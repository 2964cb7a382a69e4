import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, test } from "vitest";
import { createQueue, dropTables, sqlite, type TestDatabase } from "./support/databases.js";
import { sqlinbox } from "./support/run-bin.js";

// Every TypeScript block of docs/operating.md and this package's README compiles, and the
// module block is what the bin loads: `sqlinbox status --module <block>` runs on it.
const root = fileURLToPath(new URL("../../../", import.meta.url));
const dir = fileURLToPath(new URL("./.docs-blocks/", import.meta.url));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function blocks(path: string): string[] {
  const text = readFileSync(join(root, path), "utf8");
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe("code blocks of the docs", () => {
  const files = ["docs/operating.md", "packages/cli/README.md", "packages/dashboard/README.md"].flatMap((doc) =>
    blocks(doc).map((code, i) => ({ name: `${doc.replace(/\W+/g, "-")}-${i}.ts`, code })),
  );

  test("there is a module block, and every block type-checks", () => {
    expect(files.length).toBeGreaterThan(0);
    mkdirSync(dir, { recursive: true });
    const paths = files.map((f) => {
      const path = join(dir, f.name);
      writeFileSync(path, f.code);
      return path;
    });
    const program = ts.createProgram(paths, {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      skipLibCheck: true,
      types: ["node"],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(diagnostics).toEqual([]);
  });

  test("the module block is read by the bin", async () => {
    const module = files.find((f) => f.code.includes("export const deadLetters"));
    expect(module).toBeDefined();
    const t: TestDatabase = await sqlite();
    try {
      await createQueue(t, "report_jobs", { lease: true });
      await createQueue(t, "report_jobs_dead", { lastError: true, attemptsName: "attempts" });
      mkdirSync(dir, { recursive: true });
      const path = join(dir, "inbox.ts");
      writeFileSync(path, module!.code);
      const result = await sqlinbox(["status", "--url", t.url, "--module", path, "--json"]);
      expect(result.stderr).toBe("");
      const status = JSON.parse(result.stdout) as { tables: { table: string; deadLetters: unknown[] }[] };
      expect(status.tables.map((s) => [s.table, s.deadLetters])).toEqual([["report_jobs", [{ kind: "table", table: "report_jobs_dead" }]]]);
    } finally {
      await dropTables(t, "report_jobs", "report_jobs_dead");
      await t.close();
    }
  });
});
