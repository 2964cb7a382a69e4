/**
 * Where the Postgres server's time goes in a W1 drain, statement by statement: each case drains `n` rows (inserted and
 * analyzed first, not measured) with `pg_stat_statements` reset just before, then prints, per job, each statement's
 * execution and planning time (ms → µs ÷ n), its calls per 1,000 jobs and rows per call, beside the server's CPU per job read
 * from the kernel (`serverCpuMicros`). What the statements' times do not cover is the rest of the server's work: parsing,
 * the protocol, commits and their WAL flush, and backends waiting on each other.
 *
 * Needs `pg_stat_statements` loaded (`shared_preload_libraries = 'pg_stat_statements'`, a restart) with
 * `pg_stat_statements.track_planning = on`; run on a quiet machine:
 *   npx tsx scripts/bench/pg-statements.ts [--only=sqlinbox/postgres/lease/b64-w8,graphile-worker/postgres/lq1000/c32] [--n=50000]
 */
import { sql } from "kysely";
import { drainCases } from "./cases.js";
import { connect } from "./db.js";
import { serverCpuMicros } from "./db-sampler.js";
import { JobTracker } from "./jobs.js";

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const only = arg("only", "sqlinbox/postgres/lease/b64-w8,raw-sql/postgres/lease/b64-w8,graphile-worker/postgres/lq1000/c32").split(",");
const n = Number(arg("n", "50000"));

const admin = connect("postgres", 1);
const loaded = await sql<{ n: string }>`select count(*) as n from pg_settings where name = 'shared_preload_libraries' and setting like '%pg_stat_statements%'`.execute(admin);
if (Number(loaded.rows[0]?.n) === 0) {
  await admin.destroy();
  throw new Error("pg_stat_statements is not loaded: set shared_preload_libraries = 'pg_stat_statements' and pg_stat_statements.track_planning = on, then restart Postgres");
}
await sql`create extension if not exists pg_stat_statements`.execute(admin);

const cases = drainCases().filter((c) => c.engine === "postgres" && only.some((o) => c.id === o));
if (cases.length === 0) throw new Error(`no Postgres W1 case is named ${only.join(", ")}`);

interface StatementRow {
  query: string;
  calls: string;
  exec: number;
  plan: number;
  rows: string;
}

for (const c of cases) {
  const reason = await c.check();
  if (reason !== null) {
    console.log(`${c.id}: not available: ${reason}`);
    continue;
  }
  await c.setup();
  await c.reset();
  await c.insert(n);
  await c.analyze();
  await sql`select pg_stat_statements_reset()`.execute(admin);
  const server = serverCpuMicros("postgres") ?? Number.NaN;
  const started = performance.now();
  await c.drain(new JobTracker(n));
  const ms = performance.now() - started;
  const serverUsed = (serverCpuMicros("postgres") ?? Number.NaN) - server;
  const { rows } = await sql<StatementRow>`
    select query, calls, total_exec_time as exec, total_plan_time as plan, rows
    from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
    order by total_exec_time + total_plan_time desc limit 8`.execute(admin);
  await c.teardown();
  const perJob = (totalMs: number) => ((totalMs * 1000) / n).toFixed(2);
  let exec = 0;
  let plan = 0;
  console.log(`\n${c.id}: ${Math.round((n * 1000) / ms).toLocaleString("en-US")} jobs/s, server CPU ${(serverUsed / n).toFixed(1)} µs/job`);
  console.log("| statement | exec µs/job | plan µs/job | calls per 1,000 jobs | rows per call |");
  console.log("|---|---:|---:|---:|---:|");
  for (const r of rows) {
    exec += Number(r.exec);
    plan += Number(r.plan);
    const calls = Number(r.calls);
    const text = r.query.replace(/\s+/g, " ").slice(0, 90).replace(/\|/g, "\\|");
    console.log(
      `| \`${text}\` | ${perJob(Number(r.exec))} | ${perJob(Number(r.plan))} | ${((calls * 1000) / n).toFixed(1)} | ${(Number(r.rows) / Math.max(calls, 1)).toFixed(1)} |`,
    );
  }
  console.log(`| all shown | ${perJob(exec)} | ${perJob(plan)} | | |`);
}
await admin.destroy();
