/**
 * Reads a results file (default `bench-results/latest.json`) and prints, as Markdown, the W1 table
 * with sqlinbox beside its raw loop, every sqlinbox case as a ratio of each peer's best, and the performance targets,
 * each met or missed by how much.
 *   npx tsx scripts/bench/targets.ts [bench-results/latest.json]
 */
import { existsSync, readFileSync } from "node:fs";
import { fmt } from "./stats.js";
import type { DrainResult } from "./workloads/drain.js";
import type { EnqueueResult } from "./workloads/enqueue.js";
import type { LatencyResult } from "./workloads/latency.js";
import type { LongJobsResult } from "./workloads/long-jobs.js";

const file = process.argv[2] ?? "bench-results/latest.json";
const run = JSON.parse(readFileSync(file, "utf8")) as {
  command: string;
  started: string;
  durationSec: number;
  machine: { cpus: number; cpuModel: string; node: string; loadAverageAtStart: number[]; loadAverageAtEnd: number[]; servers: Record<string, string> };
  results: { drain?: DrainResult[]; enqueue?: EnqueueResult[]; latency?: LatencyResult[]; longJobs?: LongJobsResult[] };
};
const drain = run.results.drain ?? [];
const byId = new Map(drain.map((r) => [r.id, r]));
const median = (id: string) => byId.get(id)?.jobsPerSec?.median;
const rawOf = (id: string) => id.replace(/^sqlinbox\//, "raw-sql/");
/** The server's CPU per job, where the run read it (Postgres and MariaDB). */
const serverCpu = (x?: DrainResult) => (x?.serverCpuMicrosPerJob !== undefined ? fmt(x.serverCpuMicrosPerJob, 1) : "–");

const lines: string[] = [];
lines.push(
  `Command: \`${run.command}\` — ${run.started}, ${run.durationSec} s; ${run.machine.cpus} × ${run.machine.cpuModel}, node ${run.machine.node}; load ${run.machine.loadAverageAtStart.join(" ")} → ${run.machine.loadAverageAtEnd.join(" ")}`,
);
lines.push("");
lines.push(
  "| W1 drain (jobs/s, median of rounds) | sqlinbox | min–max | raw loop | sqlinbox ÷ raw | stmts/job sqlinbox · raw | client CPU µs/job sqlinbox · raw | server CPU µs/job sqlinbox · raw |",
);
lines.push("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const r of drain.filter((d) => d.system === "sqlinbox")) {
  const raw = byId.get(rawOf(r.id));
  const s = r.jobsPerSec;
  const cell = (x: DrainResult | undefined) => (x?.jobsPerSec ? fmt(x.jobsPerSec.median) : x?.notAvailable ? "n/a" : x?.error ? "FAILED" : "");
  const ratio = s && raw?.jobsPerSec ? (s.median / raw.jobsPerSec.median).toFixed(2) : "";
  const st = (x?: DrainResult) => (x?.statementsPerJob !== undefined ? fmt(x.statementsPerJob, 2) : "–");
  const cpu = (x?: DrainResult) => (x?.cpuMicrosPerJob !== undefined ? fmt(x.cpuMicrosPerJob, 1) : "–");
  lines.push(
    `| ${r.id.replace(/^sqlinbox\//, "")} | ${cell(r)} | ${s ? `${fmt(s.min)}–${fmt(s.max)}` : ""} | ${cell(raw)} | ${ratio} | ${st(r)} · ${st(raw)} | ${cpu(r)} · ${cpu(raw)} | ${serverCpu(r)} · ${serverCpu(raw)} |`,
  );
}
const peers = drain.filter((d) => d.system === "graphile-worker" || d.system === "pg-boss" || d.system === "bullmq");
lines.push("");
lines.push("| peers (Postgres; BullMQ also on Redis) | jobs/s (median) | min–max | client CPU µs/job | server CPU µs/job |");
lines.push("|---|---:|---:|---:|---:|");
for (const p of peers)
  lines.push(
    `| ${p.id} | ${p.jobsPerSec ? fmt(p.jobsPerSec.median) : p.error ? "FAILED" : "n/a"} | ${p.jobsPerSec ? `${fmt(p.jobsPerSec.min)}–${fmt(p.jobsPerSec.max)}` : ""} | ${p.cpuMicrosPerJob !== undefined ? fmt(p.cpuMicrosPerJob, 1) : "–"} | ${serverCpu(p)} |`,
  );

// Every sqlinbox case against every peer's best configuration in this run (the best of its sweep, per backend).
const peerBests = [
  ["graphile-worker", "graphile-worker"],
  ["pg-boss", "pg-boss"],
  ["BullMQ on Redis", "bullmq/redis"],
  ["BullMQ on Postgres", "bullmq/postgres"],
]
  .map(([name, prefix]) => {
    const best = peers.filter((p) => p.id.startsWith(`${prefix}/`) && p.jobsPerSec).sort((a, b) => b.jobsPerSec!.median - a.jobsPerSec!.median)[0];
    return best ? { name: name!, best } : undefined;
  })
  .filter((x) => x !== undefined);
if (peerBests.length > 0) {
  lines.push("");
  lines.push(`| W1: sqlinbox ÷ each peer's best | ${peerBests.map((p) => `${p.name} (${p.best.id.split("/").slice(-1)[0]}, ${fmt(p.best.jobsPerSec!.median)}/s)`).join(" | ")} |`);
  lines.push(`|---|${peerBests.map(() => "---:").join("|")}|`);
  for (const r of drain.filter((d) => d.system === "sqlinbox" && d.jobsPerSec))
    lines.push(`| ${r.id.replace(/^sqlinbox\//, "")} | ${peerBests.map((p) => `${(r.jobsPerSec!.median / p.best.jobsPerSec!.median).toFixed(2)}×`).join(" | ")} |`);
}

// Each Postgres and MariaDB lease case as a fraction of the server's own limit at its batch size (`npm run bench:server-limit`).
const limitFile = "bench-results/server-limit.json";
if (existsSync(limitFile)) {
  const limit = JSON.parse(readFileSync(limitFile, "utf8")) as { command: string; runs: { engine: string; batch: number; sessions: number; jobsPerSec: number }[] };
  const best = (engine: string, batch: number) => Math.max(0, ...limit.runs.filter((x) => x.engine === engine && x.batch === batch).map((x) => x.jobsPerSec));
  lines.push("");
  lines.push(`| W1 lease case ÷ the server's limit (\`${limit.command}\`) | jobs/s | server limit at that batch | fraction |`);
  lines.push("|---|---:|---:|---:|");
  for (const r of drain.filter((d) => d.system === "sqlinbox" && d.jobsPerSec && /\/lease\/b(64|500)-/.test(d.id))) {
    const batch = Number(/\/b(\d+)-/.exec(r.id)![1]);
    const l = best(r.engine, batch);
    if (l > 0) lines.push(`| ${r.id.replace(/^sqlinbox\//, "")} | ${fmt(r.jobsPerSec!.median)} | ${fmt(l)} | ${(r.jobsPerSec!.median / l).toFixed(2)} |`);
  }
}

const sum = (x?: { median: number; min: number; max: number }) => (x ? `${fmt(x.median)} (${fmt(x.min)}–${fmt(x.max)})` : "–");
if (run.results.enqueue?.length) {
  lines.push("");
  lines.push("| W2 enqueue (publishes/s) | sequential | 16 concurrent | bulk ×100 | bulk ÷ raw bulk |");
  lines.push("|---|---:|---:|---:|---:|");
  const enqueue = run.results.enqueue;
  const vsRaw = (e: (typeof enqueue)[number]): string => {
    const raw = enqueue.find((o) => o.system === "raw-sql" && o.engine === e.engine)?.bulk100;
    return e.system === "sqlinbox" && e.bulk100 && raw ? (e.bulk100.median / raw.median).toFixed(2) : "";
  };
  for (const e of enqueue) lines.push(`| ${e.id} | ${sum(e.sequential)} | ${sum(e.concurrent16)} | ${e.bulk100 ? sum(e.bulk100) : "no bulk publish"} | ${vsRaw(e)} |`);
}
if (run.results.latency?.length) {
  lines.push("");
  lines.push("| W3 publish → handler start (ms) | idle p50 / p95 / p99 | at 100/s p50 / p95 / p99 | how |");
  lines.push("|---|---:|---:|---|");
  const p = (x?: { p50: number; p95: number; p99: number }) => (x ? `${fmt(x.p50, 2)} / ${fmt(x.p95, 2)} / ${fmt(x.p99, 2)}` : "–");
  for (const l of run.results.latency) lines.push(`| ${l.id} | ${l.idle ? p(l.idle) : l.error ? "FAILED" : "n/a"} | ${p(l.atRate)} | ${l.how} |`);
}
if (run.results.longJobs?.length) {
  lines.push("");
  lines.push("| W4 long jobs (20 ms handlers, workers 64, lease 1 s) | jobs/s | share of ideal | extension statements/s |");
  lines.push("|---|---:|---:|---:|");
  for (const w of run.results.longJobs)
    lines.push(
      `| ${w.id} | ${sum(w.jobsPerSec)} | ${w.shareOfIdeal ? `${(w.shareOfIdeal.median * 100).toFixed(1)}%` : "–"} | ${w.extensionsPerSec ? fmt(w.extensionsPerSec.median, 1) : "–"} |`,
    );
}

// Targets
const verdict = (ok: boolean) => (ok ? "met" : "**missed**");
const targets: string[] = [];
const bestOf = (system: string) => peers.filter((p) => p.system === system && p.jobsPerSec).sort((a, b) => b.jobsPerSec!.median - a.jobsPerSec!.median)[0];
const graphile = bestOf("graphile-worker");
const graphileBest = graphile?.jobsPerSec?.median ?? 0;
const pgBoss = bestOf("pg-boss");
for (const p of [graphile, pgBoss, ...peerBests.filter((x) => x.best.system === "bullmq").map((x) => x.best)])
  if (p) targets.push(`- Best ${p.system} configuration in this run: ${p.id} at ${fmt(p.jobsPerSec!.median)} jobs/s, ${fmt(p.cpuMicrosPerJob ?? 0, 1)} client CPU µs/job`);
// b64-w8 ≥ 1.1× graphile-worker's best configuration, b500-w8 ≥ 2×; both ≥ 0.9× the raw loop of the same statements;
// b64-w8 ≥ 2.5× BullMQ's best on Redis.
const bullRedis = peerBests.find((p) => p.best.id.startsWith("bullmq/redis/"))?.best.jobsPerSec?.median;
for (const [shape, goal] of [
  ["b64-w8", 1.1],
  ["b500-w8", 2],
] as const) {
  const id = `sqlinbox/postgres/lease/${shape}`;
  const v = median(id);
  const raw = median(rawOf(id));
  const cpu = byId.get(id)?.cpuMicrosPerJob;
  if (v !== undefined && graphileBest > 0)
    targets.push(
      `- Postgres W1 with batching, lease ${shape}: ${fmt(v)} jobs/s = ${(v / graphileBest).toFixed(2)}× graphile-worker's best (${fmt(graphileBest)}); target ≥ ${goal}×: ${verdict(v / graphileBest >= goal)}`,
    );
  if (v !== undefined && bullRedis !== undefined && shape === "b64-w8")
    targets.push(`- Postgres lease ${shape}: ${(v / bullRedis).toFixed(2)}× BullMQ's best on Redis (${fmt(bullRedis)}); target ≥ 2.5×: ${verdict(v / bullRedis >= 2.5)}`);
  if (v !== undefined && raw !== undefined)
    targets.push(
      `- Postgres lease ${shape} against its raw loop: ${(v / raw).toFixed(2)}× (raw ${fmt(raw)} jobs/s; client CPU µs/job ${fmt(cpu ?? 0, 1)} · raw ${fmt(byId.get(rawOf(id))?.cpuMicrosPerJob ?? 0, 1)}); target ≥ 0.9×: ${verdict(v / raw >= 0.9)}`,
    );
}
const misses: string[] = [];
let compared = 0;
for (const r of drain.filter((d) => d.system === "sqlinbox" && d.jobsPerSec)) {
  const raw = byId.get(rawOf(r.id));
  if (!raw?.jobsPerSec) continue;
  compared++;
  const ratio = r.jobsPerSec!.median / raw.jobsPerSec.median;
  if (ratio < 0.9) misses.push(`${r.id.replace(/^sqlinbox\//, "")} ${ratio.toFixed(2)}`);
}
targets.push(
  `- Overhead over the raw loop within 10% (sqlinbox ≥ 0.9× raw jobs/s): ${compared - misses.length} of ${compared} cases met${misses.length ? `; **missed**: ${misses.join(", ")}` : ""}`,
);
for (const shape of ["b1-w1", "b1-w8", "b64-w1", "b64-w8"]) {
  const v = median(`sqlinbox/sqlite/lease/${shape}`);
  const raw = median(`raw-sql/sqlite/lease/${shape}`);
  if (v !== undefined && raw !== undefined) targets.push(`- SQLite lease ${shape}: ${(v / raw).toFixed(2)}× its raw loop; target ≥ 0.9×: ${verdict(v / raw >= 0.9)}`);
}
// In-process wake p50 within 0.5 ms of a raw insert followed by a claim.
for (const l of (run.results.latency ?? []).filter((x) => x.id.endsWith("/in-process"))) {
  const raw = run.results.latency?.find((x) => x.id === `raw-sql/${l.engine}/insert-then-claim`);
  if (l.idle && raw?.idle)
    targets.push(
      `- In-process wake ${l.engine}: p50 ${l.idle.p50.toFixed(2)} ms idle against ${raw.idle.p50.toFixed(2)} ms for a raw insert then claim (+${(l.idle.p50 - raw.idle.p50).toFixed(2)} ms); target within 0.5 ms: ${verdict(l.idle.p50 - raw.idle.p50 <= 0.5)}`,
    );
}
lines.push("");
lines.push("Targets:");
lines.push(...targets);
console.log(lines.join("\n"));
