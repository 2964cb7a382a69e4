import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, test } from "vitest";

// Every repository path the docs name exists: relative links (and their `#anchor`, when the target is a
// markdown file), backticked paths, and paths in the commands of fenced shell blocks. A file moved or
// deleted without its docs fails here.
const root = resolve(import.meta.dirname, "..");

/** Paths that are generated, not committed, and why. */
const GENERATED: Readonly<Record<string, string>> = {
  "docs/api": "`npm run docs` writes the API reference there",
  "scripts/bench/node_modules": "`npm run bench:install` installs the peers there",
  "examples/reports/data": "`npm start` writes the example's SQLite file there",
  "test/.last-run.json": "vitest writes each file's start and end there at the end of a run (vitest.workspace.ts)",
};

/** Paths the docs already name that another change adds; each fails here once it exists, so the entry goes. */
const PENDING: Readonly<Record<string, string>> = {};

/** The top-level folders a path in prose or in a command starts from. */
const TOP = ["packages", "docs", "scripts", "examples", "test", "src", ".ci", "bench-results"];

/** The workspaces: a command's path may be relative to one (`--project runtime test/lease.test.ts`). */
const WORKSPACES = ["packages", "examples"].flatMap((parent) =>
  readdirSync(join(root, parent), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${parent}/${e.name}`),
);

function checkedDocs(): string[] {
  const inside = (dir: string) => readdirSync(join(root, dir), { withFileTypes: true });
  return [
    "README.md",
    "CONTRIBUTING.md",
    ...inside("docs")
      .filter((e) => e.isFile() && e.name.endsWith(".md"))
      .map((e) => `docs/${e.name}`),
    ...["packages", "examples"].flatMap((parent) =>
      inside(parent)
        .filter((e) => e.isDirectory())
        .map((e) => `${parent}/${e.name}/README.md`),
    ),
  ].filter((file) => existsSync(join(root, file)));
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get `-1`, `-2`. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = (heading[1] ?? "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/[`*_]/g, (c) => (c === "_" ? "_" : ""));
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** A named path: where it was found, what it said, and the places it may be relative to. */
interface Named {
  readonly line: number;
  readonly text: string;
  readonly candidates: readonly string[];
  readonly anchor?: string;
}

const looksLikePath = (token: string) => !/[\s<>{}*…$|]|:\/\/|^@|^-/.test(token) && /\//.test(token) && /^[\w./-]+$/.test(token) && !/^\.?\.?\/$/.test(token);

/** Every path a markdown file names, with the candidates it may resolve to (relative to the file, its package's `src/`, or the root). */
function pathsIn(file: string, markdown: string): Named[] {
  const dir = dirname(file);
  const out: Named[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((text, i) => {
    const line = i + 1;
    const open = /^\s*```(\S*)/.exec(text);
    if (open) {
      fence = fence === undefined ? (open[1] ?? "") : undefined;
      return;
    }
    if (fence !== undefined) {
      // Commands in shell blocks: the repository paths they run (`tsx scripts/bench/main.ts`).
      if (!/^(sh|bash|console|shell)?$/.test(fence)) return;
      for (const m of text.matchAll(/(?<![\w./-])((?:packages|docs|scripts|examples|test|\.ci)\/[\w./-]*[\w/])/g)) {
        const path = m[1] ?? "";
        out.push({ line, text: path, candidates: [path, ...WORKSPACES.map((w) => join(w, path))] });
      }
      return;
    }
    for (const m of text.matchAll(/(?<!!)\[[^\]]*\]\(([^)\s]+)\)/g)) {
      const target = m[1] ?? "";
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      const [path = "", anchor] = target.split("#");
      const resolved = path === "" ? file : join(dir, path);
      out.push({ line, text: target, candidates: [resolved], ...(anchor !== undefined ? { anchor } : {}) });
    }
    for (const m of text.matchAll(/`([^`]+)`/g)) {
      const token = (m[1] ?? "").replace(/[.,;:]$/, "");
      if (!looksLikePath(token)) continue;
      const first = token.replace(/^\.\//, "").split("/")[0] ?? "";
      const inPackage = dir.startsWith("packages/") || dir.startsWith("examples/");
      // In prose a path names the repository only when it starts from a top-level folder, or, in a
      // package's README, from that package or its `src/`.
      if (!TOP.includes(first) && !(inPackage && (existsSync(join(root, dir, first)) || existsSync(join(root, dir, "src", first)) || /\.\w+$/.test(token)))) continue;
      const clean = token.replace(/\/$/, "");
      out.push({ line, text: token, candidates: [join(dir, clean), ...(inPackage ? [join(dir, "src", clean)] : []), clean] });
    }
  });
  return out;
}

const generated = (path: string) => Object.keys(GENERATED).some((g) => path === g || path.startsWith(`${g}/`));

/** What is wrong with each named path: `file:line: text`, with why. */
function brokenPaths(file: string, markdown: string, exists: (path: string) => boolean = (p) => existsSync(join(root, p))): string[] {
  return pathsIn(file, markdown).flatMap((named) => {
    const normal = named.candidates.map((c) => relative(".", join(".", c)));
    if (normal.some((c) => generated(c) || (c in PENDING && !exists(c)))) return [];
    const found = normal.find((c) => exists(c));
    if (found === undefined) return [`${file}:${named.line}: ${named.text}: no such file or folder`];
    if (named.anchor === undefined || !found.endsWith(".md")) return [];
    const anchors = anchorsOf(readFileSync(join(root, found), "utf8"));
    return anchors.has(named.anchor) ? [] : [`${file}:${named.line}: ${named.text}: no heading #${named.anchor} in ${found}`];
  });
}

describe("the path finder", () => {
  const files = new Set(["docs/scaling.md", "packages/runtime/src/app.ts", "packages/runtime/src/claim/settlement.ts", "scripts/bench/main.ts", "README.md"]);
  const exists = (p: string) => files.has(p) || [...files].some((f) => f.startsWith(`${p}/`));
  const check = (file: string, markdown: string) => brokenPaths(file, markdown, exists);

  test("a wrong path fails: a link, a backticked path, a command's script", () => {
    expect(check("README.md", "see [scaling](docs/scalng.md)")).toEqual(["README.md:1: docs/scalng.md: no such file or folder"]);
    expect(check("docs/x.md", "in `packages/runtime/src/apps.ts`")).toEqual(["docs/x.md:1: packages/runtime/src/apps.ts: no such file or folder"]);
    expect(check("docs/x.md", "```sh\nnpx tsx scripts/bench/mian.ts --smoke\n```")).toEqual(["docs/x.md:2: scripts/bench/mian.ts: no such file or folder"]);
    expect(check("packages/runtime/README.md", "`claim/settlment.ts` maps outcomes")).toEqual(["packages/runtime/README.md:1: claim/settlment.ts: no such file or folder"]);
  });

  test("a right path passes, relative to the file, its package's src/ or the root", () => {
    expect(check("README.md", "[scaling](docs/scaling.md) and `packages/runtime/src/app.ts`")).toEqual([]);
    expect(check("docs/x.md", "[scaling](scaling.md) and [readme](../README.md)")).toEqual([]);
    expect(check("packages/runtime/README.md", "`claim/settlement.ts`, `src/app.ts`, [scaling](../../docs/scaling.md)")).toEqual([]);
    expect(check("docs/x.md", "```sh\nnpx tsx scripts/bench/main.ts\n```")).toEqual([]);
  });

  test("not paths: URLs, package names, user files, globs, code", () => {
    expect(pathsIn("README.md", "[k](https://kysely.dev) `@sqlinbox/runtime/testing` `app.ts` `./src/inbox.ts x` `bench-results/*.json` `ctx.get(keys.attempt)`")).toEqual([]);
    expect(pathsIn("README.md", '```ts\nimport { db } from "./db.js";\n```')).toEqual([]);
  });

  test("a generated path passes", () => {
    expect(check("README.md", "[API](docs/api/index.html) `scripts/bench/node_modules`")).toEqual([]);
  });

  test("anchors follow GitHub's slugs, repeats numbered", () => {
    expect([...anchorsOf("# Measured here: PgBouncer, a failover, three Galera nodes\n## `ctx.signal` and timeouts\n## Twice\n## Twice\n```\n# not a heading\n```")]).toEqual([
      "measured-here-pgbouncer-a-failover-three-galera-nodes",
      "ctxsignal-and-timeouts",
      "twice",
      "twice-1",
    ]);
  });

  test("a link to a missing heading fails", () => {
    const real = brokenPaths("README.md", "[v](docs/scaling.md#vacuum-and-a-queue-table-on-postgres) [w](docs/scaling.md#no-such-heading)");
    expect(real).toEqual(["README.md:1: docs/scaling.md#no-such-heading: no heading #no-such-heading in docs/scaling.md"]);
  });
});

describe("every repository path the docs name exists", () => {
  const docs = checkedDocs();
  test("the checked docs include the READMEs, CONTRIBUTING.md and docs/", () => {
    for (const f of ["README.md", "CONTRIBUTING.md", "docs/benchmarks.md", "packages/runtime/README.md", "examples/reports/README.md"]) expect(docs).toContain(f);
  });
  test("pending paths do not exist yet (once one does, remove it from PENDING)", () => {
    expect(Object.keys(PENDING).filter((p) => existsSync(join(root, p)))).toEqual([]);
  });
  test.each(docs)("%s", (file) => {
    expect(brokenPaths(file, readFileSync(join(root, file), "utf8"))).toEqual([]);
  });
});
