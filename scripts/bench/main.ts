/**
 * The benchmark harness: `npm run bench` (full) and `npm run bench:smoke` (tiny N, one round,
 * correctness only; exits non-zero when a system does not process all its jobs).
 * Flags: --rounds=3 --only=substr,… --workloads=drain,enqueue,latency,long,scale(,otel,due: opt-in) --max-n=… --out=dir
 * Delays: --workloads=due --due-n=50 (due → start of a 500 ms delay, idle, per engine)
 * Scale-out: --scale-n=50000 (lease) --scale-n-held=10000 (row lock, advisory) --scale-processes=1,2,4
 * --scale-forms=lease,rowLock(,advisory) --scale-batch=64 --scale-workers=8
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { settingsFromArgs } from "./config.js";
import { drainChart } from "./chart.js";
import { describeMachine } from "./machine.js";
import { drainTable } from "./report.js";
import { drainCases } from "./cases.js";
import { otelDrainCases } from "./systems/sqlinbox-otel.js";
import { runDrain } from "./workloads/drain.js";
import { runEnqueue, enqueueTable } from "./workloads/enqueue.js";
import { runLatency, latencyTable } from "./workloads/latency.js";
import { runDue, dueTable } from "./workloads/due.js";
import { runLongJobs, longJobsTable } from "./workloads/long-jobs.js";
import { runScaleOut, scaleTable } from "./workloads/scale-out.js";

const argv = process.argv.slice(2);
const s = settingsFromArgs(argv);
const outDir = argv.find((a) => a.startsWith("--out="))?.slice(6) ?? (s.mode === "smoke" ? undefined : "bench-results");
const started = new Date();
const machine = await describeMachine();
const selected = <T extends { id: string }>(cases: T[]) => (s.only.length ? cases.filter((c) => s.only.some((o) => c.id.includes(o))) : cases);

const results: Record<string, unknown> = {};
let failures = 0;
const log = (m: string) => process.stderr.write(`${m}\n`);
log(`bench (${s.mode}): ${machine.cpus} cpus, ${machine.memoryMiB} MiB, node ${machine.node}, load ${machine.loadAverageAtStart.join(" ")}`);

if (s.workloads.includes("drain")) {
  const r = await runDrain(selected(drainCases(s.mode !== "smoke")), s);
  results.drain = r;
  failures += r.filter((x) => x.error).length;
  console.log(`\n${drainTable(r)}\n`);
  if (outDir) {
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, "w1-drain.svg"), drainChart(r, `W1 drain — ${machine.cpus} cpus, node ${machine.node}`));
  }
}
if (s.workloads.includes("otel")) {
  // Opt-in (`--workloads=otel`): W1 with OpenTelemetry absent, installed but not configured, and configured with the SDK.
  const r = await runDrain(selected(otelDrainCases()), s);
  results.otel = r;
  failures += r.filter((x) => x.error).length;
  console.log(`\n${drainTable(r)}\n`);
}
if (s.workloads.includes("enqueue")) {
  const r = await runEnqueue(s, selected);
  results.enqueue = r;
  failures += r.filter((x) => x.error).length;
  console.log(`\n${enqueueTable(r)}\n`);
}
if (s.workloads.includes("latency")) {
  const r = await runLatency(s, selected);
  results.latency = r;
  failures += r.filter((x) => x.error).length;
  console.log(`\n${latencyTable(r)}\n`);
}
if (s.workloads.includes("due")) {
  // Opt-in (`--workloads=due`): a delay written by this process starts when it comes due, not at the next poll.
  const r = await runDue(s.dueSamples, selected);
  results.due = r;
  failures += r.filter((x) => x.error).length;
  console.log(`\n${dueTable(r)}\n`);
}
if (s.workloads.includes("long")) {
  const r = await runLongJobs(s, selected);
  results.longJobs = r;
  failures += r.filter((x) => x.error).length;
  console.log(`\n${longJobsTable(r)}\n`);
}
if (s.workloads.includes("scale")) {
  const r = await runScaleOut(s, selected);
  results.scale = r;
  failures += r.filter((x) => x.error).length;
  console.log(`\n${scaleTable(r)}\n`);
}

const finished = new Date();
const file = {
  mode: s.mode,
  command: `npm run ${s.mode === "smoke" ? "bench:smoke" : "bench"}${argv.filter((a) => a !== "--smoke").length ? ` -- ${argv.filter((a) => a !== "--smoke").join(" ")}` : ""}`,
  started: started.toISOString(),
  durationSec: Math.round((finished.getTime() - started.getTime()) / 1000),
  machine: { ...machine, loadAverageAtEnd: loadavg().map((x) => Math.round(x * 100) / 100) },
  settings: s,
  results,
};
if (outDir) {
  mkdirSync(outDir, { recursive: true });
  const name = join(outDir, `bench-${started.toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(name, `${JSON.stringify(file, null, 2)}\n`);
  writeFileSync(join(outDir, "latest.json"), `${JSON.stringify(file, null, 2)}\n`);
  log(`results: ${name}`);
}
log(`done in ${file.durationSec} s; ${failures} failed case(s)`);
process.exit(failures > 0 ? 1 : 0);
