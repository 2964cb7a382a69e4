/**
 * Churn: a steady publish and consume at a fixed rate for a long time, on Postgres and MariaDB, to see what the queue table
 * becomes (its size on disk, its dead rows) and what the claim costs meanwhile. Not part of `npm test`.
 *
 *   npm run bench:churn -- [--engines=postgres,mariadb] [--minutes=60] [--rate=2000] [--sample-sec=60] [--configs=default,tuned] [--backlog=0]
 * `--backlog=N` (Postgres): N rows held (leased) for a day before the churn starts, with ids above the hot rows' — a big table
 * with a small hot part, where the default `autovacuum_vacuum_scale_factor` (0.2) waits for 0.2 × N dead rows.
 *
 * Publishing: one multi-row INSERT every 100 ms, sized so the rows published so far keep up with `rate` × elapsed time.
 * Consuming: a sqlinbox App (public API) on the bench's lease table, `batch(64).workers(8)`, a handler that decodes the payload.
 * Every `--sample-sec` (60 by default) it records: jobs published and handled per second, the backlog (published − handled),
 * the claim statement's p50/p99 (its duration as Kysely's `log` reports it: on Postgres the one-statement claim, on MariaDB the
 * locking select of the claim's transaction), the table's size on disk (Postgres `pg_total_relation_size`; MariaDB
 * the tablespace file, `information_schema.innodb_sys_tablespaces`), and the dead rows (Postgres
 * `pg_stat_user_tables.n_dead_tup` with the autovacuum count so far; MariaDB the InnoDB history list length, undo not yet purged).
 * `--configs` (Postgres): `default` is the table as created, under the server's autovacuum settings; `tuned` sets the per-table
 * settings a queue table wants: `fillfactor = 70` (room for the lease stamp's HOT update in the same page),
 * `autovacuum_vacuum_scale_factor = 0.01`, `autovacuum_vacuum_threshold = 1000`, `autovacuum_vacuum_cost_delay = 0`.
 * Autovacuum must be on in the server for the comparison to mean anything: the script says so when it is off (the local test
 * server runs with `autovacuum = off`; point SQLINBOX_PG_URL at a server with the defaults).
 * Writes bench-results/churn-<time>.json and prints a Markdown table per engine × configuration.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { sql, type LogEvent } from "kysely";
import { connect, recreateTable, tableOf, type AnyDb } from "./db.js";
import { decodeIndex, payloadOf, sleep } from "./jobs.js";
import { buildApp, loadRuntime, startApp } from "./systems/sqlinbox.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const list = (name: string, dflt: readonly string[]) => flag(name)?.split(",").filter(Boolean) ?? dflt;
const engines = list("engines", ["postgres", "mariadb"]) as EngineName[];
const minutes = Number(flag("minutes") ?? 60);
const rate = Number(flag("rate") ?? 2_000);
const sampleSec = Number(flag("sample-sec") ?? 60);
const configs = list("configs", ["default", "tuned"]);
/** Postgres: rows held for a day when the churn starts (one INSERT … SELECT, then analyzed), ids above the hot rows': a big table with a small hot part. */
const standing = Number(flag("backlog") ?? 0);
const BATCH = 64;
const WORKERS = 8;
const TABLE = tableOf("lease");

export const TUNED_PG = "fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0";

const log = (m: string) => process.stderr.write(`${m}\n`);

interface Sample {
  readonly minute: number;
  readonly publishedPerSec: number;
  readonly handledPerSec: number;
  readonly backlog: number;
  readonly claims: number;
  readonly claimP50Ms: number;
  readonly claimP99Ms: number;
  readonly tableBytes: number;
  readonly deadRows: number;
  readonly liveRows?: number;
  readonly autovacuums?: number;
  readonly load1: number;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
};

async function tableState(db: AnyDb, engine: EngineName): Promise<Pick<Sample, "tableBytes" | "deadRows" | "liveRows" | "autovacuums">> {
  if (engine === "postgres") {
    const r = await sql<{
      bytes: string;
      dead: string;
      live: string;
      av: string;
    }>`select pg_total_relation_size(relid) as bytes, n_dead_tup as dead, n_live_tup as live, autovacuum_count as av from pg_stat_user_tables where relname = ${TABLE}`.execute(db);
    const row = r.rows[0];
    return { tableBytes: Number(row?.bytes ?? 0), deadRows: Number(row?.dead ?? 0), liveRows: Number(row?.live ?? 0), autovacuums: Number(row?.av ?? 0) };
  }
  // The tablespace file (file-per-table): information_schema.tables' lengths wait for InnoDB's statistics to refresh.
  const size = await sql<{ bytes: string }>`select file_size as bytes from information_schema.innodb_sys_tablespaces where name = concat(database(), '/', ${TABLE})`.execute(db);
  const status = await sql.raw<{ Status: string }>("show engine innodb status").execute(db);
  const history = /History list length (\d+)/.exec(String(status.rows[0]?.Status ?? ""))?.[1];
  return { tableBytes: Number(size.rows[0]?.bytes ?? 0), deadRows: Number(history ?? Number.NaN) };
}

async function runOne(engine: EngineName, config: string): Promise<{ engine: EngineName; config: string; autovacuum?: string; samples: Sample[]; error?: string }> {
  const rt = await loadRuntime();
  if (typeof rt === "string") return { engine, config, samples: [], error: rt };
  const admin = connect(engine, 2);
  await recreateTable(admin, engine, "lease");
  let autovacuum: string | undefined;
  if (engine === "postgres") {
    autovacuum = String((await sql<{ a: string }>`select current_setting('autovacuum') as a`.execute(admin)).rows[0]?.a);
    if (autovacuum !== "on") log(`postgres: the server runs with autovacuum = ${autovacuum}: neither configuration is vacuumed, the comparison shows bloat only`);
    if (config === "tuned") await sql.raw(`alter table ${TABLE} set (${TUNED_PG})`).execute(admin);
  }
  if (standing > 0 && engine === "postgres") {
    // Rows in work for a day, with ids above the sequence's (so claims in id order meet the hot rows first): a big table
    // with a small hot part, where autovacuum's default scale factor waits for 20% of the big part in dead rows.
    await sql
      .raw(`insert into ${TABLE} (id, locked_until, payload) select 1000000000000 + g, now() + interval '1 day', '{"i":' || g || '}' from generate_series(1, ${standing}) g`)
      .execute(admin);
    await sql.raw(`vacuum analyze ${TABLE}`).execute(admin);
  }
  let claimMs: number[] = [];
  const onLog = (e: LogEvent) => {
    if (e.level === "query" && e.query.sql.includes("skip locked")) claimMs.push(e.queryDurationMillis);
  };
  const consumerDb = connect(engine, WORKERS + 4, onLog);
  let handled = 0;
  const { app } = buildApp(rt, {
    engine,
    form: "lease",
    batch: BATCH,
    workers: WORKERS,
    kysely: consumerDb,
    handler: (p: unknown) => {
      decodeIndex(p);
      handled++;
    },
  });
  const running = await startApp(app);
  const publisher = connect(engine, 2);
  let published = 0;
  const started = performance.now();
  const endAt = started + minutes * 60_000;
  let stop = false;
  const publishing = (async () => {
    while (!stop) {
      const due = Math.floor(((performance.now() - started) / 1000) * rate);
      if (due > published) {
        const rows = [];
        for (let i = published; i < due; i++) rows.push({ payload: JSON.stringify(payloadOf(i)) });
        for (let k = 0; k < rows.length; k += 1_000)
          await publisher
            .insertInto(TABLE)
            .values(rows.slice(k, k + 1_000))
            .execute();
        published = due;
      }
      await sleep(100);
    }
  })();
  const samples: Sample[] = [];
  let lastAt = started;
  let lastPublished = 0;
  let lastHandled = 0;
  try {
    for (let k = 1; performance.now() < endAt; k++) {
      await sleep(Math.max(0, started + k * sampleSec * 1000 - performance.now()));
      const now = performance.now();
      const sec = (now - lastAt) / 1000;
      const claims = claimMs;
      claimMs = [];
      const state = await tableState(admin, engine);
      const sample: Sample = {
        minute: Math.round(((now - started) / 60_000) * 100) / 100,
        publishedPerSec: Math.round((published - lastPublished) / sec),
        handledPerSec: Math.round((handled - lastHandled) / sec),
        backlog: published - handled,
        claims: claims.length,
        claimP50Ms: Math.round(pct(claims, 0.5) * 100) / 100,
        claimP99Ms: Math.round(pct(claims, 0.99) * 100) / 100,
        ...state,
        load1: Math.round(loadavg()[0]! * 100) / 100,
      };
      samples.push(sample);
      log(`${engine} ${config} ${JSON.stringify(sample)}`);
      lastAt = now;
      lastPublished = published;
      lastHandled = handled;
    }
  } finally {
    stop = true;
    await publishing;
    await running.stop();
    await consumerDb.destroy();
    await publisher.destroy();
    await admin.destroy();
  }
  return { engine, config, autovacuum, samples };
}

const startedAt = new Date();
const loadAtStart = loadavg();
const results = [];
for (const engine of engines) for (const config of engine === "postgres" ? configs : ["default"]) results.push(await runOne(engine, config));

const out: string[] = [];
out.push(
  `Churn — ${startedAt.toISOString()}; ${minutes} min per configuration at ${rate} jobs/s, lease batch(${BATCH}).workers(${WORKERS}); a sample every ${sampleSec} s; ${standing} rows held apart (Postgres)`,
);
const mb = (b: number) => (b / 1024 / 1024).toFixed(1);
for (const r of results) {
  out.push("");
  out.push(`${r.engine} ${r.config}${r.config === "tuned" ? ` (${TUNED_PG})` : ""}${r.autovacuum ? `, server autovacuum = ${r.autovacuum}` : ""}${r.error ? `: ${r.error}` : ""}`);
  out.push("");
  out.push(
    `| minute | published/s | handled/s | backlog | claims | claim p50 ms | claim p99 ms | table MiB | ${r.engine === "postgres" ? "dead tuples | autovacuums" : "history list length"} | load |`,
  );
  out.push(`|---:|---:|---:|---:|---:|---:|---:|---:|---:|${r.engine === "postgres" ? "---:|" : ""}---:|`);
  for (const s of r.samples)
    out.push(
      `| ${s.minute} | ${s.publishedPerSec} | ${s.handledPerSec} | ${s.backlog} | ${s.claims} | ${s.claimP50Ms} | ${s.claimP99Ms} | ${mb(s.tableBytes)} | ${s.deadRows}${r.engine === "postgres" ? ` | ${s.autovacuums}` : ""} | ${s.load1} |`,
    );
}
console.log(out.join("\n"));
mkdirSync("bench-results", { recursive: true });
const file = join("bench-results", `churn-${startedAt.toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(
  file,
  `${JSON.stringify({ command: `npm run bench:churn -- ${argv.join(" ")}`.trim(), started: startedAt.toISOString(), loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadavg(), minutes, rate, sampleSec, standing, tuned: TUNED_PG, results }, null, 2)}\n`,
);
log(`results: ${file}`);
process.exit(0);
