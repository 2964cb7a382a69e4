// Writes test/support/file-durations.json from the last full `npm test` on this machine (vitest's cache under
// node_modules/.vite): each file of a second or more, by project and path, with the ms it took. The test sequencer
// starts the longest files first; on a fresh clone, which has no cache, it reads their times from this file.
//
//   node scripts/test-durations.mjs
//   node scripts/test-durations.mjs --timeline   (instead: how the last run's files ran side by side, from test/.last-run.json)
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

if (process.argv.includes("--timeline")) {
  const { testResults } = JSON.parse(readFileSync("test/.last-run.json", "utf8"));
  const start = Math.min(...testResults.map((r) => r.startTime));
  const end = Math.max(...testResults.map((r) => r.endTime));
  // Files by start, with the seconds from the run's first file, and how many ran at once, every 30 s.
  for (const r of [...testResults].sort((a, b) => a.startTime - b.startTime))
    if (r.endTime - r.startTime >= 5000)
      console.log(`${((r.startTime - start) / 1000).toFixed(0).padStart(5)} s +${((r.endTime - r.startTime) / 1000).toFixed(0).padStart(4)} s  ${relative(process.cwd(), r.name)}`);
  for (let t = start; t < end; t += 30_000) {
    const running = testResults.filter((r) => r.startTime <= t && r.endTime > t).length;
    console.log(`at ${((t - start) / 1000).toFixed(0).padStart(5)} s: ${running} files running`);
  }
  console.log(`first file start to last file end: ${((end - start) / 1000).toFixed(0)} s`);
  process.exit(0);
}

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
