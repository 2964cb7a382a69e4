/**
 * Where a drain's client CPU goes: reads a V8 `.cpuprofile` (from `node --cpu-prof`) and prints the functions with the most
 * self time, and the self time per package, each in µs per job for the `jobs` the profiled process handled.
 *   npx tsx scripts/bench/cpu-profile.ts <file.cpuprofile> <jobs> [top=25]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  readonly id: number;
  readonly children?: readonly number[];
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
const [file, jobsArg, topArg] = process.argv.slice(2);
if (file === undefined || jobsArg === undefined) throw new Error("usage: cpu-profile.ts <file.cpuprofile> <jobs> [top]");
const jobs = Number(jobsArg);
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, "utf8")) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
// The profiler's own stop (`Session.post` in node:inspector) is charged to the samples under it: left out, with what it calls.
const excluded = new Set<number>();
const exclude = (id: number) => {
  excluded.add(id);
  for (const c of nodes.get(id)?.children ?? []) exclude(c);
};
for (const n of profile.nodes) if (n.callFrame.url === "node:inspector") exclude(n.id);
const self = new Map<string, number>();
const byPackage = new Map<string, number>();
let total = 0;

/** A package name from a file URL: a workspace package, a dependency under node_modules, node's own code, or the bench. */
function packageOf(url: string, name: string): string {
  if (url === "") return name.startsWith("(") ? name : "(native/V8)";
  if (url.startsWith("node:")) return "node internals";
  const workspace = /packages\/([^/]+)\//.exec(url);
  if (workspace) return `@sqlinbox/${workspace[1]}`;
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)\//g;
  let last: string | undefined;
  for (let m = dep.exec(url); m !== null; m = dep.exec(url)) last = m[1];
  if (last) return last;
  if (url.includes("scripts/bench")) return "bench harness";
  return url;
}

for (let i = 0; i < profile.samples.length; i++) {
  const node = nodes.get(profile.samples[i]!);
  const dt = profile.timeDeltas[i] ?? 0;
  if (node === undefined || excluded.has(node.id)) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  if (functionName === "(idle)" || functionName === "(program)") continue;
  total += dt;
  const short = url.replace(/^.*\/(node_modules|packages)\//, "$1/");
  const key = `${functionName || "(anonymous)"}  ${short}:${lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
  const pkg = packageOf(url, functionName);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + dt);
}

const perJob = (us: number) => (us / jobs).toFixed(2);
console.log(`${file}: ${(total / 1000).toFixed(0)} ms on CPU (idle, (program) and the profiler's stop left out) = ${perJob(total)} µs/job over ${jobs} jobs`);
console.log("\n| self time by package | µs/job | share |\n|---|---:|---:|");
for (const [k, v] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`| ${k} | ${perJob(v)} | ${((100 * v) / total).toFixed(1)}% |`);
console.log(`\n| top ${top} functions by self time | µs/job | share |\n|---|---:|---:|`);
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`| \`${k}\` | ${perJob(v)} | ${((100 * v) / total).toFixed(1)}% |`);
const ours = [...self].filter(([k]) => k.includes("packages/")).sort((a, b) => b[1] - a[1]);
console.log(`\n| sqlinbox's own functions (workspace packages) by self time | µs/job |\n|---|---:|`);
for (const [k, v] of ours.slice(0, top)) console.log(`| \`${k}\` | ${perJob(v)} |`);
