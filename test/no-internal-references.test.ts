import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";

// What users read must stand on its own: no issue numbers of this repository's tracker, no mention of
// the internal design notes ("seed"), and no absolute path that exists only on the machine it was written on.
// Checked in the READMEs, docs/, and every file under packages/*/src (code comments included).
const root = resolve(import.meta.dirname, "..");

interface Rule {
  readonly name: string;
  /** The offending text in `line`, or undefined. */
  readonly find: (line: string) => string | undefined;
}

const firstMatch = (pattern: RegExp) => (line: string) => pattern.exec(line)?.[0];

// An absolute path: a root folder that holds a user's or a machine's own files, not preceded by a
// word, a dot, a colon or a slash (so `docs/x.md`, `./x`, `https://host/home/` and `a//b` do not match),
// or a Windows drive. A script's `#!/usr/bin/env node` line is not a path a reader follows.
const absolutePath = /(?<![\w.:/~-])\/(?:home|Users|work|workspace|tmp|root|mnt|srv|opt|var|private|usr|etc)\/[\w.@-]+|\b[A-Z]:\\[\w.-]+/;

const rules: readonly Rule[] = [
  { name: "an issue number", find: firstMatch(/\bissues?\s*#?\d+/i) },
  { name: "the word seed", find: firstMatch(/seed/i) },
  { name: "an absolute path", find: (line) => (line.startsWith("#!") ? undefined : absolutePath.exec(line)?.[0]) },
];

function filesUnder(dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === "node_modules" || e.name === "dist" ? [] : filesUnder(path);
    return [path];
  });
}

function checkedFiles(): string[] {
  const dirs = (parent: string) =>
    readdirSync(join(root, parent), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `${parent}/${e.name}`);
  const packages = dirs("packages");
  const files = [
    "README.md",
    ...filesUnder("docs").filter((f) => f.endsWith(".md")),
    ...dirs("examples").map((d) => `${d}/README.md`),
    ...packages.map((d) => `${d}/README.md`),
    ...packages.flatMap((d) => filesUnder(`${d}/src`)),
  ];
  return files.filter((f) => existsSync(join(root, f)) && !/\.(png|jpe?g|gif|ico|woff2?)$/.test(f));
}

/** Every offence in a text, as `file:line: rule: "match"`. */
function offences(file: string, text: string): string[] {
  return text.split("\n").flatMap((line, i) =>
    rules.flatMap((rule) => {
      const found = rule.find(line);
      return found === undefined ? [] : [`${file}:${i + 1}: ${rule.name}: "${found}"`];
    }),
  );
}

describe("the patterns", () => {
  const flags = (line: string) => offences("x", line).map((o) => o.replace(/^x:1: /, "").replace(/: ".*"$/, ""));
  test.each([
    ["Targets (issue 12)", "an issue number"],
    ["see Issue #7 for why", "an issue number"],
    ["issues 5 and 12", "an issue number"],
    ["the seed's example", "the word seed"],
    ["postgres:lease.claim(seed)", "the word seed"],
    ["Seeded from the design notes", "the word seed"],
    ["see `/work/shared/notes.md`", "an absolute path"],
    ["(/home/me/app/src/index.ts)", "an absolute path"],
    ["open /Users/me/app", "an absolute path"],
    ["written to /tmp/sqlinbox-1/x.db", "an absolute path"],
    ["Tests drive `/usr/bin/chromium`", "an absolute path"],
    ["C:\\Users\\me", "an absolute path"],
  ])("%j is refused as %s", (line, rule) => expect(flags(line)).toEqual([rule]));

  test.each([
    "#!/usr/bin/env node",
    "[claim forms](docs/claim-forms.md)",
    "./src/index.ts and ../../docs/failures.md",
    "https://example.com/home/page and http://localhost:4000/tmp/x",
    "`node_modules/@sqlinbox/runtime/src/app.ts`",
    "the issues it raised",
    "a 2.5 s lease; issue-free",
    "CPU from `/proc/<pid>/stat`",
    "seeking the head of a group",
  ])("%j passes", (line) => expect(flags(line)).toEqual([]));
});

describe("user-facing text has no issue numbers, no seed, no absolute paths", () => {
  const files = checkedFiles();
  test("the checked files include the READMEs, docs/ and the packages' sources", () => {
    expect(files).toContain("README.md");
    expect(files).toContain("docs/failures.md");
    expect(files).toContain("examples/reports/README.md");
    expect(files).toContain("packages/runtime/README.md");
    expect(files.filter((f) => f.startsWith("packages/runtime/src/")).length).toBeGreaterThan(20);
  });
  test.each(files)("%s", (file) => {
    expect(offences(file, readFileSync(join(root, file), "utf8"))).toEqual([]);
  });
});
