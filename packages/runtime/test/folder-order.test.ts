/**
 * The runtime's folders in one order, lowest first: a module imports its own layer and the layers
 * below it, never one above. Declarations know nothing of claims, claims nothing of the consume loop,
 * the loop nothing of publishing or start-up: what two folders share lives in the lower one (or in a
 * package beneath the runtime). Type-only and dynamic imports count.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const src = join(dirname(fileURLToPath(import.meta.url)), "../src");

/** Lowest first. A folder is named with its slash; a file at the top of src/ by its name. */
const LAYERS: readonly (readonly string[])[] = [
  ["activity.ts", "clock.ts", "logger.ts", "calm-logger.ts", "errors.ts", "errors/"],
  ["drivers/"],
  ["time/"],
  ["declare/"],
  ["claim/"],
  ["stop-report.ts"],
  ["consume/"],
  ["control/"],
  // A workflow run is published like any job, and a broker registers its workflows: one layer.
  ["publish/", "workflow/"],
  ["hooks/"],
  // OpenTelemetry is a user of the public hooks: it sits above them.
  ["telemetry/"],
  ["schedule/"],
  ["startup/"],
  // The broker bridges: a subscriber (declare/) and a keyed publish (publish/), for @sqlinbox/nats and @sqlinbox/redis.
  ["bridge/"],
  ["app.ts", "internal.ts", "index.ts", "internal-api.ts", "testing/"],
];

/** The layer of a file (relative to src/), or -1 when no layer names it. */
function layerOf(file: string): number {
  return LAYERS.findIndex((layer) => layer.some((entry) => (entry.endsWith("/") ? file.startsWith(entry) : file === entry)));
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith(".ts") ? [path] : [];
  });
}

/** The relative modules a file imports or re-exports, static or dynamic (comments left out). */
function relativeImports(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const patterns = [/\b(?:import|export)\b[^'"`;]*?\bfrom\s*["'](\.[^"']+)["']/g, /\bimport\s*\(\s*["'](\.[^"']+)["']\s*\)/g, /^\s*import\s+["'](\.[^"']+)["']/gm];
  return patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((m) => m[1] as string));
}

const files = sources(src).map((path) => relative(src, path).replaceAll("\\", "/"));

describe("the runtime's folders import downwards only", () => {
  test("the import reader finds static, type-only, re-exported and dynamic imports, not ones in comments", () => {
    expect(
      relativeImports(
        'import type { A } from "./a.js";\nexport { b } from "../b.js";\nconst c = await import("./c.js");\nimport "./d.js";\n// import { e } from "./e.js";\n/* import "./f.js"; */',
      ),
    ).toEqual(["./a.js", "../b.js", "./c.js", "./d.js"]);
    expect(layerOf("claim/held/held-delivery.ts")).toBeLessThan(layerOf("consume/subscription.ts"));
    expect(layerOf("errors.ts")).toBe(0);
  });

  test("every source file has a layer", () => {
    expect(files.filter((file) => layerOf(file) < 0)).toEqual([]);
  });

  test("no module imports a layer above its own", () => {
    const upwards = files.flatMap((file) => {
      const text = readFileSync(join(src, file), "utf8");
      return relativeImports(text)
        .map((spec) =>
          relative(src, resolve(dirname(join(src, file)), spec))
            .replaceAll("\\", "/")
            .replace(/\.js$/, ".ts"),
        )
        .filter((target) => layerOf(target) > layerOf(file))
        .map((target) => `${file} → ${target}`);
    });
    expect(upwards).toEqual([]);
  });
});
