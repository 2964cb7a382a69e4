/**
 * `npm run bench:memory`: RSS while sqlinbox drains a backlog of 1,000,000 rows stays flat.
 * Flags: --engine=sqlite|postgres|mariadb (default sqlite) --n=1000000 --batch=64 --workers=8 --out=bench-results
 * Samples RSS and heap every 500 ms; "flat" = the last quarter's median RSS within 25% of the second quarter's.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, countRows, insertJobs, recreateTable } from "./db.js";
import { JobTracker, waitUntilEmpty } from "./jobs.js";
import { report } from "./report-helpers.js";
import { quantile } from "./stats.js";
import { buildApp, loadRuntime, startApp } from "./systems/sqlinbox.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const engine = flag("engine", "sqlite") as EngineName;
const n = Number(flag("n", "1000000"));
const batch = Number(flag("batch", "64"));
const workers = Number(flag("workers", "8"));
const outDir = flag("out", "bench-results");

const rt = await loadRuntime();
if (typeof rt === "string") {
  report(`memory: not available: ${rt}`);
  process.exit(1);
}
const admin = connect(engine, 2);
await recreateTable(admin, engine, "lease");
report(`memory: inserting ${n} rows on ${engine}…`);
for (let done = 0; done < n; done += 100_000) await insertJobs(admin, "lease", Math.min(100_000, n - done), done);

const samples: { sec: number; rssMiB: number; heapMiB: number; handled: number }[] = [];
const tracker = new JobTracker(n);
const { app } = buildApp(rt, { engine, form: "lease", batch, workers, handler: (p) => tracker.handle(p) });
const t0 = performance.now();
const sample = () => {
  const m = process.memoryUsage();
  samples.push({ sec: (performance.now() - t0) / 1000, rssMiB: m.rss / 2 ** 20, heapMiB: m.heapUsed / 2 ** 20, handled: tracker.count });
};
sample();
const timer = setInterval(() => {
  sample();
  const s = samples[samples.length - 1]!;
  report(`memory: ${s.sec.toFixed(1)} s  ${s.handled} handled  rss ${s.rssMiB.toFixed(1)} MiB  heap ${s.heapMiB.toFixed(1)} MiB`);
}, 500);
const running = await startApp(app);
await tracker.done;
await waitUntilEmpty(() => countRows(admin, "lease"));
await running.stop();
clearInterval(timer);
sample();
await admin.destroy();

const rss = samples.map((s) => s.rssMiB);
const q = (from: number, to: number) =>
  quantile(
    [...rss.slice(Math.floor(rss.length * from), Math.ceil(rss.length * to))].sort((a, b) => a - b),
    0.5,
  );
const second = q(0.25, 0.5);
const last = q(0.75, 1);
const flat = last <= second * 1.25;
const sec = samples[samples.length - 1]!.sec;
const result = {
  engine,
  n,
  batch,
  workers,
  seconds: sec,
  jobsPerSec: n / sec,
  rssMiB: { start: rss[0], secondQuarterMedian: second, lastQuarterMedian: last, max: Math.max(...rss) },
  flat,
  samples,
};
console.log(
  `memory: ${n} rows on ${engine} in ${sec.toFixed(1)} s; RSS median ${second.toFixed(1)} MiB (2nd quarter) → ${last.toFixed(1)} MiB (last quarter), max ${Math.max(...rss).toFixed(1)} MiB: ${flat ? "flat" : "GROWING"}`,
);
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, `memory-${engine}-${new Date().toISOString().replace(/[:.]/g, "-")}.json`), `${JSON.stringify(result, null, 2)}\n`);
process.exit(flat ? 0 : 1);
