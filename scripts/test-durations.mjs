// Writes test/support/file-durations.json from the last full `npm test` on this machine (vitest's cache under
// node_modules/.vite): each file of a second or more, by project and path, with the ms it took. The test sequencer
// starts the longest files first; on a fresh clone, which has no cache, it reads their times from this file.
//
//   node scripts/test-durations.mjs
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const cacheRoot = "node_modules/.vite/vitest";
const folders = readdirSync(cacheRoot, { withFileTypes: true }).filter((d) => d.isDirectory());
if (folders.length === 0) throw new Error(`no vitest cache under ${cacheRoot}: run the whole npm test first`);
const results = folders.flatMap((d) => JSON.parse(readFileSync(join(cacheRoot, d.name, "results.json"), "utf8")).results);
const durations = Object.fromEntries(
  results
    .filter(([, r]) => (r.duration ?? 0) >= 1000)
    .sort(([, a], [, b]) => b.duration - a.duration)
    .map(([key, r]) => [key, Math.round(r.duration)]),
);
writeFileSync("test/support/file-durations.json", `${JSON.stringify(durations, null, 2)}\n`);
console.log(`test/support/file-durations.json: ${Object.keys(durations).length} files`);
