/**
 * The server's limit: the most lease jobs/s this Postgres and this MariaDB can settle with no client in the loop. A
 * stored procedure runs, inside the server, the statements sqlinbox's lease form runs per claim — the claim (the oldest
 * claimable rows, `FOR UPDATE SKIP LOCKED`, their deadline and attempt written) committed on its own, then the
 * token-fenced delete of those rows committed on its own — in batches of 64 and 500, on the bench's own `bench_lease`
 * table (pre-inserted and analyzed as W1 does), in 1, 2 and 8 sessions at once. What the client adds (driver, protocol,
 * Node) is absent, so every W1 lease case can be read as a fraction of it.
 *
 *   npm run bench:server-limit -- [--n=100000] [--batches=64,500] [--sessions=1,2,8] [--engines=postgres,mariadb] [--out=bench-results]
 *
 * Writes `bench-results/server-limit.json` (and a dated copy); `targets.ts` reads it and prints each W1 lease case of
 * those engines as a fraction of the best the server reached at that batch size.
 *
 * MariaDB keeps the claimed ids in a temporary table (a procedure has no arrays); its claim is the two statements the
 * runtime runs there (a locking select, then the update), inside one transaction, and its ack the fenced delete.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { sql } from "kysely";
import { analyzeTable, connect, insertJobs, recreateTable, type AnyDb } from "./db.js";
import { serverCpuMicros } from "./db-sampler.js";
import type { EngineName } from "./types.js";

const args = new Map(
  process.argv
    .slice(2)
    .map((a) => /^--([\w-]+)=(.*)$/.exec(a))
    .filter((m) => m !== null)
    .map((m) => [m[1]!, m[2]!]),
);
const list = (name: string, fallback: string) => (args.get(name) ?? fallback).split(",").filter(Boolean);
const N = Number(args.get("n") ?? 100_000);
const BATCHES = list("batches", "64,500").map(Number);
const SESSIONS = list("sessions", "1,2,8").map(Number);
const ENGINES = list("engines", "postgres,mariadb") as EngineName[];
const OUT = args.get("out") ?? "bench-results";

const POSTGRES_PROCEDURE = `
CREATE OR REPLACE PROCEDURE bench_server_limit(batch int) LANGUAGE plpgsql AS $$
DECLARE
  ids bigint[];
  until timestamptz;
BEGIN
  LOOP
    until := clock_timestamp() + interval '30 seconds';
    WITH picked AS (
      SELECT id FROM bench_lease WHERE locked_until IS NULL OR locked_until <= clock_timestamp()
      ORDER BY id LIMIT batch FOR UPDATE SKIP LOCKED
    ), claimed AS (
      UPDATE bench_lease SET locked_until = until, attempt = attempt + 1 WHERE id IN (SELECT id FROM picked) RETURNING id
    )
    SELECT array_agg(id) INTO ids FROM claimed;
    COMMIT;
    EXIT WHEN ids IS NULL;
    DELETE FROM bench_lease WHERE locked_until = until AND id = ANY(ids);
    COMMIT;
  END LOOP;
END $$`;

// A deadlock between the two sessions' statements (InnoDB under contention) rolls back that transaction only. The
// procedure handles it itself: a claim that deadlocked is taken again, and a delete that deadlocked is run again,
// so a batch whose claim committed is never left behind with its lease 30 s ahead.
const MARIADB_PROCEDURE = `
CREATE PROCEDURE bench_server_limit(batch INT)
BEGIN
  DECLARE until DATETIME(6);
  DECLARE taken INT DEFAULT 1;
  DECLARE deadlocked INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR 1213 SET deadlocked = 1;
  CREATE TEMPORARY TABLE IF NOT EXISTS bench_picked (id BIGINT PRIMARY KEY) ENGINE = MEMORY;
  WHILE taken > 0 DO
    SET until = NOW(6) + INTERVAL 30 SECOND;
    DELETE FROM bench_picked;
    SET deadlocked = 0;
    START TRANSACTION;
    INSERT INTO bench_picked (id)
      SELECT id FROM bench_lease WHERE locked_until IS NULL OR locked_until <= NOW(6)
      ORDER BY id LIMIT batch FOR UPDATE SKIP LOCKED;
    SET taken = ROW_COUNT();
    IF deadlocked = 0 THEN
      UPDATE bench_lease JOIN bench_picked USING (id) SET bench_lease.locked_until = until, bench_lease.attempt = bench_lease.attempt + 1;
    END IF;
    IF deadlocked = 0 THEN
      COMMIT;
    ELSE
      ROLLBACK;
      SET taken = 1;
    END IF;
    IF deadlocked = 0 AND taken > 0 THEN
      REPEAT
        SET deadlocked = 0;
        START TRANSACTION;
        DELETE bench_lease FROM bench_lease JOIN bench_picked USING (id) WHERE bench_lease.locked_until = until;
        IF deadlocked = 0 THEN COMMIT; ELSE ROLLBACK; END IF;
      UNTIL deadlocked = 0 END REPEAT;
    END IF;
  END WHILE;
END`;

async function installProcedure(db: AnyDb, engine: EngineName): Promise<void> {
  if (engine === "postgres") await sql.raw(POSTGRES_PROCEDURE).execute(db);
  else {
    await sql.raw("DROP PROCEDURE IF EXISTS bench_server_limit").execute(db);
    await sql.raw(MARIADB_PROCEDURE).execute(db);
  }
}

async function remaining(db: AnyDb): Promise<number> {
  const r = await sql<{ n: number | string }>`SELECT count(*) AS n FROM bench_lease`.execute(db);
  return Number(r.rows[0]?.n ?? Number.NaN);
}

interface LimitRun {
  engine: EngineName;
  batch: number;
  sessions: number;
  n: number;
  jobsPerSec: number;
  serverCpuMicrosPerJob: number | undefined;
}

async function runOnce(engine: EngineName, batch: number, sessions: number): Promise<LimitRun> {
  const db = connect(engine, sessions + 1);
  try {
    await recreateTable(db, engine, "lease");
    await insertJobs(db, "lease", N);
    await analyzeTable(db, engine, "bench_lease");
    await installProcedure(db, engine);
    const cpu = serverCpuMicros(engine);
    const started = performance.now();
    // A deadlock between two sessions' batches (MariaDB under contention) rolls back that batch only: the session
    // calls again and goes on with the rows left. Counted, and the run fails past a few.
    let deadlocks = 0;
    const session = async (): Promise<void> => {
      for (;;) {
        try {
          await sql.raw(`CALL bench_server_limit(${batch})`).execute(db);
          return;
        } catch (error) {
          const errno = (error as { errno?: unknown }).errno;
          const code = (error as { code?: unknown }).code;
          if ((errno !== 1213 && code !== "40P01") || ++deadlocks > 20) throw error;
        }
      }
    };
    await Promise.all(Array.from({ length: sessions }, session));
    if (deadlocks > 0) console.log(`${engine} b${batch} sessions ${sessions}: ${deadlocks} deadlock(s), each batch called again`);
    const ms = performance.now() - started;
    const cpuAfter = serverCpuMicros(engine);
    const left = await remaining(db);
    if (left !== 0) throw new Error(`${engine} b${batch} s${sessions}: ${left} rows left after the procedure`);
    return {
      engine,
      batch,
      sessions,
      n: N,
      jobsPerSec: (N * 1000) / ms,
      serverCpuMicrosPerJob: cpu === undefined || cpuAfter === undefined ? undefined : (cpuAfter - cpu) / N,
    };
  } finally {
    await db.destroy();
  }
}

const runs: LimitRun[] = [];
for (const engine of ENGINES)
  for (const batch of BATCHES)
    for (const sessions of SESSIONS) {
      const r = await runOnce(engine, batch, sessions);
      runs.push(r);
      process.stderr.write(`${engine} b${batch} sessions ${sessions}: ${Math.round(r.jobsPerSec)} jobs/s\n`);
    }
console.log("| engine | batch | sessions | jobs/s | server CPU µs/job |");
console.log("|---|---:|---:|---:|---:|");
for (const r of runs)
  console.log(`| ${r.engine} | ${r.batch} | ${r.sessions} | ${Math.round(r.jobsPerSec).toLocaleString("en-US")} | ${r.serverCpuMicrosPerJob?.toFixed(1) ?? "–"} |`);
mkdirSync(OUT, { recursive: true });
const json = `${JSON.stringify({ command: `npm run bench:server-limit -- ${process.argv.slice(2).join(" ")}`.trim(), started: new Date().toISOString(), n: N, loadAverageAtEnd: loadavg(), runs }, null, 2)}\n`;
writeFileSync(`${OUT}/server-limit-${new Date().toISOString().replace(/[:.]/g, "-")}.json`, json);
writeFileSync(`${OUT}/server-limit.json`, json);
console.log(`\nresults: ${OUT}/server-limit.json`);
