/**
 * The import graph of every package's sources has no circle: type-only imports count (a circle of
 * types is still two modules that cannot be read apart), and so do imports across packages
 * (`@sqlinbox/x`, `@sqlinbox/x/internal`, resolved to the source file their export names).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const packagesDir = join(root, "packages");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** `@sqlinbox/name[/sub]` → its source file, from the package's `@sqlinbox/source` export condition. */
function packageEntries(): Map<string, string> {
  const entries = new Map<string, string>();
  for (const dir of readdirSync(packagesDir)) {
    const manifest = join(packagesDir, dir, "package.json");
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { name: string; exports?: Record<string, Record<string, string> | string> };
    for (const [sub, target] of Object.entries(pkg.exports ?? {})) {
      const source = typeof target === "object" ? target["@sqlinbox/source"] : undefined;
      if (source !== undefined) entries.set(sub === "." ? pkg.name : `${pkg.name}/${sub.replace(/^\.\//, "")}`, resolve(packagesDir, dir, source));
    }
  }
  return entries;
}

/** Every module specifier a file imports or re-exports, static or dynamic. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [/\b(?:import|export)\b[^'"`;]*?\bfrom\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g, /^\s*import\s+["']([^"']+)["']/gm];
  for (const pattern of patterns) for (const m of text.matchAll(pattern)) found.push(m[1] as string);
  return found;
}

function importGraph(): Map<string, string[]> {
  const entries = packageEntries();
  const files = readdirSync(packagesDir).flatMap((dir) => (existsSync(join(packagesDir, dir, "src")) ? sources(join(packagesDir, dir, "src")) : []));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
    const targets: string[] = [];
    for (const spec of specifiers(text)) {
      let target: string | undefined;
      if (spec.startsWith(".")) target = resolve(dirname(file), spec).replace(/\.js$/, ".ts");
      else target = entries.get(spec);
      if (target !== undefined && existsSync(target)) targets.push(target);
      else if (spec.startsWith(".")) throw new Error(`${relative(root, file)} imports ${spec}, which does not exist`);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The strongly connected components with more than one module (or a module importing itself): Tarjan's algorithm. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    order.set(node, index);
    low.set(node, index);
    index++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node) as number, order.get(next) as number));
    }
    if (low.get(node) === order.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!order.has(node)) visit(node);
  return found;
}

describe("the import graph of packages/*/src", () => {
  test("the circle finder finds circles, and none where there is none", () => {
    expect(
      circles(
        new Map([
          ["a", ["b"]],
          ["b", ["c"]],
          ["c", ["a"]],
          ["d", ["a"]],
        ]),
      ),
    ).toEqual([["a", "b", "c"]]);
    expect(circles(new Map([["a", ["a"]]]))).toEqual([["a"]]);
    expect(
      circles(
        new Map([
          ["a", ["b", "c"]],
          ["b", ["c"]],
          ["c", []],
        ]),
      ),
    ).toEqual([]);
    expect(specifiers('import type { A } from "./a.js";\nexport { b } from "../b.js";\nconst c = await import("./c.js");\nimport "./d.js";')).toEqual([
      "./a.js",
      "../b.js",
      "./c.js",
      "./d.js",
    ]);
  });

  test("has no circle, type imports and package imports included", () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(100);
    const found = circles(graph).map((component) => component.map((file) => relative(root, file)));
    expect(found).toEqual([]);
  });
});
