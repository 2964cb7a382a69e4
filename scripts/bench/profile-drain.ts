/**
 * A CPU profile of one W1 drain (lease form), the drain alone: the rows are inserted first (on Postgres by the
 * server, `INSERT … SELECT generate_series`, no client CPU; elsewhere by the case's own insert), the table analyzed,
 * a warm-up drain run, and only the measured drain is profiled (node:inspector's Profiler around `drain`). Then
 * `cpu-profile.ts` reads the file.
 *   npx tsx scripts/bench/profile-drain.ts sqlinbox|raw-sql <batch> <workers> [n=100000] [out=bench-results/profiles] [engine=postgres]
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { sql } from "kysely";
import { connect, tableOf } from "./db.js";
import { JobTracker } from "./jobs.js";
import { rawDrainCase } from "./systems/raw-sql.js";
import { sqlinboxDrainCase } from "./systems/sqlinbox.js";
import type { DrainCase, EngineName } from "./types.js";

const [system = "sqlinbox", batchArg = "64", workersArg = "8", nArg = "100000", out = "bench-results/profiles", engineArg = "postgres"] = process.argv.slice(2);
if (engineArg !== "postgres" && engineArg !== "mariadb" && engineArg !== "sqlite") throw new Error(`engine must be postgres, mariadb or sqlite, got ${engineArg}`);
const engine: EngineName = engineArg;
const batch = Number(batchArg);
const workers = Number(workersArg);
const n = Number(nArg);
const c: DrainCase = system === "raw-sql" ? rawDrainCase(engine, "lease", batch, workers) : sqlinboxDrainCase(engine, "lease", batch, workers);
const reason = await c.check();
if (reason !== null) throw new Error(reason);
await c.setup();
const admin = engine === "postgres" ? connect("postgres", 1) : undefined;

async function round(count: number, profile: Session | undefined) {
  await c.reset();
  if (admin !== undefined) await sql.raw(`insert into ${tableOf("lease")} (payload) select '{"i":' || (g - 1) || '}' from generate_series(1, ${count}) g`).execute(admin);
  else await c.insert(count);
  await c.analyze();
  const tracker = new JobTracker(count);
  if (profile) await profile.post("Profiler.start");
  const cpu = process.cpuUsage();
  const started = performance.now();
  await c.drain(tracker);
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const result = profile ? ((await profile.post("Profiler.stop")) as { profile: unknown }).profile : undefined;
  return { jobsPerSec: (count * 1000) / ms, cpuMicrosPerJob: (used.user + used.system) / count, profile: result };
}

await round(Math.round(n / 5), undefined);
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.setSamplingInterval", { interval: 100 });
const r = await round(n, session);
mkdirSync(out, { recursive: true });
const file = join(out, `${system}-${engine}-lease-b${batch}-w${workers}-${new Date().toISOString().replace(/[:.]/g, "-")}.cpuprofile`);
writeFileSync(file, JSON.stringify(r.profile));
console.log(
  `${system} ${engine} lease b${batch}-w${workers}: ${r.jobsPerSec.toFixed(0)} jobs/s, ${r.cpuMicrosPerJob.toFixed(1)} client CPU µs/job over ${n} jobs; profile ${file}`,
);
session.disconnect();
await c.teardown();
await admin?.destroy();
