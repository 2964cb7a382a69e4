/**
 * Bytes allocated per job in one W1 drain on Postgres, by the function that allocated them: a measure that the
 * machine's load does not move (unlike jobs/s and CPU time), for comparing two versions of the runtime's hot path.
 * The rows are inserted by the server, a warm-up drain runs, then V8's sampling heap profiler (counting objects the
 * GC already collected) runs around one drain of `n` jobs.
 *   npx tsx scripts/bench/alloc-drain.ts sqlinbox|raw-sql <batch> <workers> [n=100000] [top=25]
 */
import { Session } from "node:inspector/promises";
import { sql } from "kysely";
import { connect, tableOf } from "./db.js";
import { JobTracker } from "./jobs.js";
import { rawDrainCase } from "./systems/raw-sql.js";
import { sqlinboxDrainCase } from "./systems/sqlinbox.js";
import type { DrainCase } from "./types.js";

const [system = "sqlinbox", batchArg = "64", workersArg = "8", nArg = "100000", topArg = "25"] = process.argv.slice(2);
const n = Number(nArg);
const c: DrainCase =
  system === "raw-sql" ? rawDrainCase("postgres", "lease", Number(batchArg), Number(workersArg)) : sqlinboxDrainCase("postgres", "lease", Number(batchArg), Number(workersArg));
const reason = await c.check();
if (reason !== null) throw new Error(reason);
await c.setup();
const admin = connect("postgres", 1);

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

async function round(count: number, session: Session | undefined): Promise<SamplingNode | undefined> {
  await c.reset();
  await sql.raw(`insert into ${tableOf("lease")} (payload) select '{"i":' || (g - 1) || '}' from generate_series(1, ${count}) g`).execute(admin);
  await c.analyze();
  const tracker = new JobTracker(count);
  if (session) await session.post("HeapProfiler.startSampling", { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  await c.drain(tracker);
  if (!session) return undefined;
  return ((await session.post("HeapProfiler.stopSampling")) as { profile: { head: SamplingNode } }).profile.head;
}

await round(Math.round(n / 5), undefined);
const session = new Session();
session.connect();
await session.post("HeapProfiler.enable");
const head = await round(n, session);
const bySite = new Map<string, number>();
const byPackage = new Map<string, number>();
let total = 0;
const where = (url: string) =>
  url
    .replace(/^.*node_modules\//, "")
    .replace(/^.*\/packages\//, "")
    .replace(/^file:\/\/.*\/scripts\//, "scripts/");
const packageOf = (url: string) => {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url) ?? /packages\/([^/]+)/.exec(url);
  return m ? (m[1] as string) : url.startsWith("node:") ? "node internals" : url === "" ? "(native/V8)" : "bench harness";
};
const callers = process.env.ALLOC_CALLERS === "1";
const nameOf = (node: SamplingNode) => `${node.callFrame.functionName || "(anonymous)"}  ${where(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
const walk = (node: SamplingNode, parent?: SamplingNode) => {
  if (node.selfSize > 0) {
    // ALLOC_CALLERS=1: each site with the function that called it.
    const key = callers && parent ? `${nameOf(node)} ← ${nameOf(parent)}` : nameOf(node);
    bySite.set(key, (bySite.get(key) ?? 0) + node.selfSize);
    const pkg = packageOf(node.callFrame.url);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + node.selfSize);
    total += node.selfSize;
  }
  for (const child of node.children) walk(child, node);
};
if (head) walk(head);
const perJob = (bytes: number) => (bytes / n).toFixed(1);
console.log(`${system} postgres lease b${batchArg}-w${workersArg}: ${perJob(total)} bytes allocated per job over ${n} jobs (sampled every 512 bytes)\n`);
console.log("| package | bytes/job |\n|---|---:|");
for (const [pkg, bytes] of [...byPackage].sort((a, b) => b[1] - a[1])) console.log(`| ${pkg} | ${perJob(bytes)} |`);
console.log("\n| site | bytes/job |\n|---|---:|");
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg))) console.log(`| \`${site}\` | ${perJob(bytes)} |`);
session.disconnect();
await c.teardown();
await admin.destroy();
