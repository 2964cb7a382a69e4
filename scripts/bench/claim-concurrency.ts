/**
 * What claims side by side cost on Postgres: `loops` loops of the lease form's own statements (the claim of `batch` rows and
 * the batched ack that deletes them, built by @sqlinbox/kysely-dialects, as the raw loop runs them), draining `n` rows,
 * for each number of loops given. Per job it reports the client's CPU, the server's (`serverCpuMicros` in `db-sampler.ts`) and the whole
 * machine's (/proc/stat: every process, the servers' included), so the cost of contention shows apart from latency.
 * `--named` runs the two statements as named prepared statements (parsed and planned once per connection), `pg`'s
 * `{ name }`, to show what planning costs the server.
 *   npx tsx scripts/bench/claim-concurrency.ts [--batch=64] [--loops=1,2,4,8] [--n=50000] [--rounds=3] [--named]
 * Run it on a quiet machine: the machine's CPU counts everything that runs meanwhile.
 */
import type { RawRow } from "@sqlinbox/kysely-dialects/internal";
import pg from "pg";
import { sql } from "kysely";
import { analyzeTable, connect, insertJobs, LEASE_PRECISION, recreateTable, tableOf, urlOf } from "./db.js";
import { machineTicks, serverCpuMicros } from "./db-sampler.js";
import { benchSpec, LEASE_MS } from "./systems/raw-sql.js";
import { loadDialect } from "./systems/dialects.js";

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const batch = Number(arg("batch", "64"));
const loopCounts = arg("loops", "1,2,4,8").split(",").map(Number);
const n = Number(arg("n", "50000"));
const rounds = Number(arg("rounds", "3"));
const named = process.argv.includes("--named");

const loaded = await loadDialect("postgres");
if (typeof loaded === "string") throw new Error(loaded);
const dialect = loaded;
const spec = benchSpec("lease").description;
const precision = LEASE_PRECISION.postgres;
const admin = connect("postgres", 1);

async function round(loops: number) {
  await recreateTable(admin, "postgres", "lease");
  await insertJobs(admin, "lease", n);
  await analyzeTable(admin, "postgres", tableOf("lease"));
  const pool = new pg.Pool({ connectionString: urlOf("postgres"), max: loops });
  let done = 0;
  const loop = async () => {
    const client = await pool.connect();
    try {
      for (;;) {
        const now = new Date();
        const until = dialect.time.truncate(new Date(now.getTime() + LEASE_MS), precision);
        const claim = dialect.lease.claim(spec, { limit: batch, now, until, precision });
        const rows = (await client.query<RawRow>({ text: claim.sql, values: [...claim.parameters], ...(named ? { name: "claim" } : {}) })).rows;
        if (rows.length === 0) {
          if (done >= n) return;
          await new Promise((r) => setTimeout(r, 1));
          continue;
        }
        for (const row of rows) JSON.parse(String(row.payload));
        const ack = dialect.lease.settleAckMany(
          spec,
          rows.map((r) => ({ id: r.id, held: until })),
          new Date(),
          precision,
        );
        // One deadline per claim: the ack's text is the same every time, so it can be named too.
        const acked = (await client.query({ text: ack.sql, values: [...ack.parameters], ...(named ? { name: "ack" } : {}) })).rows.length;
        if (acked !== rows.length) throw new Error(`ack took ${acked} of ${rows.length}`);
        done += rows.length;
      }
    } finally {
      client.release();
    }
  };
  const machine = machineTicks();
  const server = serverCpuMicros("postgres") ?? Number.NaN;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: loops }, loop));
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const serverUsed = (serverCpuMicros("postgres") ?? Number.NaN) - server;
  const after = machineTicks();
  await pool.end();
  const left = Number((await sql<{ c: string }>`select count(*) as c from ${sql.table(tableOf("lease"))}`.execute(admin)).rows[0]?.c);
  if (left !== 0) throw new Error(`${left} rows left`);
  return {
    jobsPerSec: (n * 1000) / ms,
    clientMicros: (used.user + used.system) / n,
    serverMicros: serverUsed / n,
    machineMicros: ((after.busy - machine.busy) * 10_000) / n,
    busy: (after.busy - machine.busy) / (after.total - machine.total),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`claim + ack loops on Postgres, lease, batch ${batch}, N ${n}, ${rounds} rounds interleaved${named ? ", named statements" : ""}`);
const results = new Map<number, Awaited<ReturnType<typeof round>>[]>(loopCounts.map((l) => [l, []]));
for (let r = 0; r < rounds; r++) for (const loops of loopCounts) results.get(loops)!.push(await round(loops));
console.log("| loops | jobs/s | client CPU µs/job | server CPU µs/job | machine CPU µs/job | machine busy |");
console.log("|---:|---:|---:|---:|---:|---:|");
for (const [loops, rs] of results) {
  const m = (f: (x: (typeof rs)[number]) => number, digits = 1) => median(rs.map(f)).toFixed(digits);
  console.log(
    `| ${loops} | ${Math.round(median(rs.map((x) => x.jobsPerSec))).toLocaleString("en-US")} | ${m((x) => x.clientMicros)} | ${m((x) => x.serverMicros)} | ${m((x) => x.machineMicros)} | ${m((x) => x.busy * 100, 0)}% |`,
  );
}
await admin.destroy();
