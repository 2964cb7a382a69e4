/**
 * Bulk publish's client cost against the raw insert of the same statements, on one engine: `calls`
 * publishes of `rows` payloads each (W2's bulk phase: one multi-row insert per call), timed and with
 * this process's CPU per row, sqlinbox (`broker.publishMany` on a started app, as W2 runs it) and the
 * raw loop (the dialect's own insert, executed with Kysely) alternating `rounds` times. With `--cpu-prof`
 * beside it (`node --cpu-prof`), the profile shows where the extra per row goes.
 *
 *   npx tsx --conditions=@sqlinbox/source scripts/bench/profile-publish.ts [--engine=sqlite|postgres|mariadb] [--calls=2000] [--rows=100] [--rounds=5] [--only=sqlinbox|raw]
 */
import { loadavg } from "node:os";
import { countRows, connect, recreateTable } from "./db.js";
import { loadDialect } from "./systems/dialects.js";
import { benchSpec } from "./systems/raw-sql.js";
import { buildApp, loadRuntime, startApp } from "./systems/sqlinbox.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ENGINE = (flag("engine") ?? "sqlite") as EngineName;
const CALLS = Number(flag("calls") ?? 2_000);
const ROWS = Number(flag("rows") ?? 100);
const ROUNDS = Number(flag("rounds") ?? 5);
const ONLY = flag("only");
const payloadOf = (i: number) => ({ i, kind: "bench" });

const rt = await loadRuntime();
if (typeof rt === "string") throw new Error(rt);
const loaded = await loadDialect(ENGINE);
if (typeof loaded === "string") throw new Error(loaded);
const dialect = loaded;
const admin = connect(ENGINE, 2);
const spec = benchSpec("lease").description;
const raw = connect(ENGINE, 4);

async function round(system: "sqlinbox" | "raw"): Promise<{ perSec: number; cpuPerRow: number }> {
  await recreateTable(admin, ENGINE, "lease");
  const { app, broker } = buildApp(rt as never, { engine: ENGINE, form: "lease", batch: 1, workers: 4 });
  const running = system === "sqlinbox" ? await startApp(app) : undefined;
  const many =
    system === "sqlinbox"
      ? (from: number) =>
          broker.publishMany(
            "bench",
            Array.from({ length: ROWS }, (_, k) => payloadOf(from + k)),
          )
      : (from: number) =>
          raw.executeQuery(
            dialect.publish.insert(
              spec,
              Array.from({ length: ROWS }, (_, k) => ({ payload: JSON.stringify(payloadOf(from + k)) })),
            ),
          );
  for (let c = 0; c < 20; c++) await many(c * ROWS);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let c = 20; c < CALLS + 20; c++) await many(c * ROWS);
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  await running?.stop();
  const n = await countRows(admin, "lease");
  if (n !== (CALLS + 20) * ROWS) throw new Error(`${system}: ${n} rows for ${(CALLS + 20) * ROWS}`);
  return { perSec: (CALLS * ROWS * 1000) / ms, cpuPerRow: (used.user + used.system) / (CALLS * ROWS) };
}

console.log(`bulk publish on ${ENGINE}: ${CALLS} calls × ${ROWS} rows, ${ROUNDS} rounds, load ${loadavg()[0]?.toFixed(1)}`);
const results = { sqlinbox: [] as { perSec: number; cpuPerRow: number }[], raw: [] as { perSec: number; cpuPerRow: number }[] };
for (let r = 0; r < ROUNDS; r++)
  for (const system of ["sqlinbox", "raw"] as const) {
    if (ONLY !== undefined && ONLY !== system) continue;
    const out = await round(system);
    results[system].push(out);
    console.log(`  ${system}: ${out.perSec.toFixed(0)} rows/s, ${out.cpuPerRow.toFixed(2)} µs of this process's CPU per row`);
  }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
for (const system of ["sqlinbox", "raw"] as const)
  if (results[system].length > 0)
    console.log(`${system}: median ${median(results[system].map((r) => r.perSec)).toFixed(0)} rows/s, ${median(results[system].map((r) => r.cpuPerRow)).toFixed(2)} µs CPU/row`);
await raw.destroy();
await admin.destroy();
