import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, test } from "vitest";

// A package README's "Entry points" table states, per entry, how many names it exports and some of them:
// | `@sqlinbox/runtime/testing` | 6 | `TestApp`, `PausedClock`, … |
// Both are counted here from the entry's source, so neither goes stale. And the docs that grew into lab
// notebooks once stay within their length.
const root = resolve(import.meta.dirname, "..");

interface EntryRow {
  readonly line: number;
  readonly entry: string;
  readonly names: number;
  readonly shown: readonly string[];
}

/** The rows of a `| entry | names | what |` table. */
function entryRows(markdown: string): EntryRow[] {
  return markdown.split("\n").flatMap((text, i) => {
    const m = /^\|\s*`(@sqlinbox\/[\w./-]+)`\s*\|\s*(\d+)\s*\|(.*)\|\s*$/.exec(text);
    if (!m) return [];
    const shown = [...(m[3] ?? "").matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((n) => n[1] ?? "");
    return [{ line: i + 1, entry: m[1] ?? "", names: Number(m[2]), shown }];
  });
}

interface PackageJson {
  readonly name: string;
  readonly exports?: Record<string, Record<string, string>>;
}

const packages = readdirSync(join(root, "packages"), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => ({ dir: `packages/${e.name}`, json: JSON.parse(readFileSync(join(root, "packages", e.name, "package.json"), "utf8")) as PackageJson }));

/** An entry's source file, through the `@sqlinbox/source` condition of its package's `exports`. */
function sourceOf(entry: string): string {
  const pkg = packages.find((p) => entry === p.json.name || entry.startsWith(`${p.json.name}/`));
  if (!pkg) throw new Error(`${entry}: no such package`);
  const subpath = `.${entry.slice(pkg.json.name.length)}`;
  const source = pkg.json.exports?.[subpath]?.["@sqlinbox/source"];
  if (source === undefined) throw new Error(`${entry}: ${pkg.dir}/package.json exports no ${subpath}`);
  return join(root, pkg.dir, source);
}

/** The names an entry exports, values and types, as the compiler sees them. */
function exportedNames(entries: readonly string[]): Map<string, string[]> {
  const files = entries.map(sourceOf);
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    customConditions: ["@sqlinbox/source"],
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  return new Map(
    entries.map((entry, i) => {
      const source = program.getSourceFile(files[i] ?? "");
      const symbol = source && checker.getSymbolAtLocation(source);
      if (!symbol) throw new Error(`${entry}: ${files[i]} is not a module`);
      return [entry, checker.getExportsOfModule(symbol).map((s) => s.name)];
    }),
  );
}

const readmes = packages.map((p) => `${p.dir}/README.md`).filter((f) => existsSync(join(root, f)));
const rows = new Map(readmes.map((f) => [f, entryRows(readFileSync(join(root, f), "utf8"))]));
const exported = exportedNames([...new Set([...rows.values()].flat().map((r) => r.entry))]);

describe("the entry points a package README states", () => {
  test("the table is read: entry, count, names shown", () => {
    expect(entryRows("| `@sqlinbox/x/testing` | 6 | `TestApp`, `PausedClock` and their types |\n| other | 1 | `y` |")).toEqual([
      { line: 1, entry: "@sqlinbox/x/testing", names: 6, shown: ["TestApp", "PausedClock"] },
    ]);
  });

  test("the runtime README has a row for each entry its package.json exports", () => {
    const runtime = packages.find((p) => p.json.name === "@sqlinbox/runtime");
    const entries = Object.keys(runtime?.json.exports ?? {}).map((sub) => `@sqlinbox/runtime${sub.slice(1)}`);
    expect(entries.length).toBeGreaterThan(1);
    expect(rows.get("packages/runtime/README.md")?.map((r) => r.entry)).toEqual(entries);
  });

  for (const [file, found] of rows) {
    for (const row of found) {
      test(`${file}:${row.line}: ${row.entry} exports ${row.names} names, among them every one shown`, () => {
        const names = exported.get(row.entry) ?? [];
        expect(row.shown.filter((n) => !names.includes(n))).toEqual([]);
        expect(names.length).toBe(row.names);
      });
    }
  }
});

describe("docs that once grew into lab notebooks stay short", () => {
  test.each([
    ["packages/runtime/README.md", 150],
    ["docs/benchmarks.md", 400],
  ])("%s: at most %i lines", (file, most) => {
    expect(readFileSync(join(root, file), "utf8").trimEnd().split("\n").length).toBeLessThanOrEqual(most);
  });
});

describe("the figures the README quotes are the benchmarks page's", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const bench = readFileSync(join(root, "docs/benchmarks.md"), "utf8");
  const bullet = /^- \*\*Throughput\*\*[\s\S]*?(?=\n- |\n\n)/m.exec(readme)?.[0] ?? "";
  const figures = [...bullet.matchAll(/\d{1,3}(?:,\d{3})+|\d+\.\d+×/g)].map((m) => m[0]);
  test("the README's throughput bullet quotes figures", () => expect(figures.length).toBeGreaterThan(4));
  test.each(figures)("%s is on docs/benchmarks.md", (figure) => expect(bench).toContain(figure));
});
