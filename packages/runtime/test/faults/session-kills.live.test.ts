/**
 * An outage as the app sees it, on every server engine × form: every session of the app is
 * killed from a separate setup connection every 100–200 ms for 2 s, during a drain of a few
 * thousand rows (8,000 on the advisory form). Then sessions were killed, every row is handled, nothing stays
 * stuck, and `stop()` returns within its grace. Duplicates (rows delivered more than once) are bounded
 * by what was in work at the kills: each kill round may hand again at most the rows started and not
 * yet settled at that moment plus what the claims in flight could hold (`workers × batch`), and at most
 * one row per session it killed (a row lock or an advisory key lives on its delivery's one session).
 * A drain that stalls (no row handled for 30 s) or outlasts its bound prints what is left: the rows
 * (ids, attempts, leases, key locks), the app's sessions on the server and what the subscription was doing.
 *
 * Runs in the `faults` project, after every other project, one file at a time.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sql } from "kysely";
import { mysqlLockName } from "@sqlinbox/kysely-dialects/internal";
import type { AnyKysely } from "../../src/drivers/database.js";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { unique } from "../support/engines.js";
import { consumer, createJobsTable, dropScope, FORMS, insertJobs, scopedUrl, serverEngines, until } from "../support/claim-forms.js";

/** Rows per drain: the advisory form at the size of a large measured backlog (8,000 rows). */
const ROWS_OF: Record<string, number> = { rowLock: 2000, lease: 2000, advisory: 8000 };
const FAULT_MS = 2000;
const GRACE_MS = 3000;
const WORKERS = 4;
const BATCH = 16;

describe.each(serverEngines.flatMap((engine) => FORMS.map((form) => ({ engine, form }))))("$engine.name × $form", ({ engine, form }) => {
  let base: AnyKysely;
  beforeAll(async () => {
    base = await engine.connect(engine.url());
  });
  afterAll(async () => {
    await base.destroy();
  });

  const ROWS = ROWS_OF[form] ?? 1000;
  // Time for the drain to get under way, and a bound on the whole drain: both grow with the backlog. Loaded
  // by a full test run beside it, the advisory drain of 8,000 rows took over 130 s here (19 s alone), so the
  // drain fails on a stall (no row handled for STALL_MS), which is what stuck rows or a subscription that
  // stopped claiming look like, and only then on the bound.
  const DRAIN_MS = 45_000 + ROWS * 20;
  const BOUND_MS = 60_000 + ROWS * 60;
  test(`every session killed every 100–200 ms for ${FAULT_MS} ms during a drain of ${ROWS} rows`, { timeout: BOUND_MS + 60_000 }, async () => {
    const scope = unique("sqlinbox_fault").toLowerCase();
    const url = await scopedUrl(engine, base, scope);
    // On MariaDB the app's sessions are found by their database: the setup session there is one
    // connection, left out of the kills by its own id.
    const setup = engine.engine === "postgres" ? base : (await parseDatabaseUrl(url).open({ max: 1 })).db;
    const table = unique(`fault_${form}`).toLowerCase();
    try {
      await createJobsTable(engine, setup, table);
      await insertJobs(setup, table, ROWS);
      const c = consumer(url, table, form, { workers: WORKERS, batch: BATCH, leaseMs: 2000, shutdownGrace: GRACE_MS });
      const app = await c.app.start();
      const drainStarted = Date.now();
      await until(() => c.seen.length >= ROWS / 10, DRAIN_MS, "the drain to be under way");
      const underWayMs = Date.now() - drainStarted;

      let kills = 0;
      let rounds = 0;
      // What each kill round could hand again: no more rows than were in work (started and still in the table, plus
      // a claim's worth per worker not started yet), and no more than the sessions killed (times the keys a batch
      // session holds), since a row lock or an advisory key lives on the session of its delivery (the lease form
      // holds nothing on a session).
      let inWorkBound = 0;
      const faultEnd = Date.now() + FAULT_MS;
      while (Date.now() < faultEnd) {
        const started = new Set(c.seen.map((s) => s.id));
        const left = await remainingIds(setup, table);
        const inWork = left.filter((id) => started.has(id)).length;
        const killed = await killAppSessions(engine.engine, setup, scope);
        kills += killed;
        if (killed > 0) {
          rounds++;
          // An advisory batch claim holds up to BATCH keys on its one session (Postgres, MariaDB): a killed session
          // frees them all, and each of its rows may run again.
          const perSession = form === "advisory" ? BATCH : 1;
          inWorkBound += Math.min(killed * perSession, inWork + WORKERS * BATCH);
        }
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 100));
      }
      const faultsOver = Date.now();
      try {
        await untilDrained(() => remaining(setup, table), BOUND_MS, `every row of ${table} handled after the faults`);
      } catch (error) {
        console.log(await leftOver(engine.engine, setup, scope, table, c, app.subscriptions));
        throw error;
      }
      const afterMs = Date.now() - faultsOver;
      const stopStarted = Date.now();
      await app.stop();
      const stopMs = Date.now() - stopStarted;

      const distinct = new Set(c.seen.map((s) => s.id));
      expect(distinct.size).toBe(ROWS);
      expect(kills).toBeGreaterThan(0);
      expect(rounds).toBeGreaterThan(0);
      expect(c.seen.length - ROWS).toBeLessThanOrEqual(inWorkBound);
      expect(stopMs).toBeLessThan(GRACE_MS + 2000);
      console.log(
        `outage ${engine.name} × ${form}: ${kills} sessions killed in ${rounds} rounds over ${FAULT_MS} ms; ${ROWS} rows, ${c.seen.length - ROWS} duplicates (bound ${inWorkBound}); stop() ${stopMs} ms (first ${ROWS / 10} rows in ${underWayMs} ms, the rest ${afterMs} ms after the faults)`,
      );
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(setup).catch(() => {});
      if (setup !== base) await setup.destroy();
      await dropScope(engine, base, scope).catch(() => {});
    }
  });
});

/** Kills the app's sessions only: Postgres by `application_name`, MariaDB by database (never this session). */
async function killAppSessions(engine: string, setup: AnyKysely, scope: string): Promise<number> {
  if (engine === "postgres") {
    const { rows } = await sql<{ pid: number }>`SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity WHERE application_name = ${scope}`.execute(setup);
    return rows.length;
  }
  const { rows } = await sql<{ id: number }>`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ${scope} AND ID <> CONNECTION_ID()`.execute(setup);
  for (const { id } of rows)
    await sql
      .raw(`KILL CONNECTION ${Number(id)}`)
      .execute(setup)
      .catch(() => {}); // gone already
  return rows.length;
}

async function remaining(setup: AnyKysely, table: string): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(setup);
  return Number(rows[0]?.n ?? 0);
}

const STALL_MS = 30_000;

/** Waits until `left()` is 0; fails when it has not gone down for `STALL_MS`, or after `boundMs` in all. */
async function untilDrained(left: () => Promise<number>, boundMs: number, what: string): Promise<void> {
  const started = Date.now();
  let last = await left();
  let movedAt = Date.now();
  while (last > 0) {
    await new Promise((r) => setTimeout(r, 50));
    const now = await left();
    if (now < last) movedAt = Date.now();
    last = now;
    if (Date.now() - movedAt > STALL_MS) throw new Error(`stalled: ${last} rows left and none handled for ${STALL_MS} ms, waiting for ${what}`);
    if (Date.now() - started > boundMs) throw new Error(`timed out after ${boundMs} ms (still draining, ${last} rows left) waiting for ${what}`);
  }
}

async function remainingIds(setup: AnyKysely, table: string): Promise<number[]> {
  const { rows } = await sql<{ id: number | string }>`SELECT id FROM ${sql.id(table)}`.execute(setup);
  return rows.map((r) => Number(r.id));
}

/** What a drain that did not end left behind: the rows, their key locks, the app's sessions, the subscription's state. */
async function leftOver(
  engine: string,
  setup: AnyKysely,
  scope: string,
  table: string,
  c: ReturnType<typeof consumer>,
  subscriptions: readonly { readonly name: string; readonly inFlight: number }[],
): Promise<string> {
  const lines: string[] = [`drain of ${table} did not end; ${await remaining(setup, table)} rows left`];
  const { rows } = await sql<{ id: unknown; attempt: unknown; locked_until: unknown; k: string }>`
    SELECT id, attempt, locked_until, k FROM ${sql.id(table)} ORDER BY id LIMIT 40`.execute(setup);
  for (const r of rows) {
    let keyLock: unknown;
    if (engine === "postgres") {
      const held = await sql<{ pid: number }>`
        SELECT l.pid FROM pg_locks l, (SELECT hashtextextended(${`${table}:${r.k}`}, 0) AS h) k
        WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
          AND l.classid::bigint = ((k.h >> 32) & 4294967295) AND l.objid::bigint = (k.h & 4294967295)`.execute(setup);
      keyLock = held.rows[0]?.pid ?? null;
    } else {
      const held = await sql<{ id: number | null }>`SELECT IS_USED_LOCK(${mysqlLockName(scope, `${table}:${r.k}`)}) AS id`.execute(setup);
      keyLock = held.rows[0]?.id ?? null;
    }
    const seen = c.seen.filter((s) => s.id === Number(r.id));
    lines.push(
      `  row ${String(r.id)}: attempt ${String(r.attempt)}, locked_until ${String(r.locked_until)}, key lock held by ${String(keyLock)}, delivered ${seen.length}x (last ${seen.length > 0 ? Date.now() - (seen.at(-1)?.at ?? 0) : "-"} ms ago)`,
    );
  }
  const sessions =
    engine === "postgres"
      ? await sql<Record<string, unknown>>`
          SELECT pid, state, wait_event_type, wait_event, now() - xact_start AS xact_age, left(query, 120) AS query
          FROM pg_stat_activity WHERE application_name = ${scope}`.execute(setup)
      : await sql<Record<string, unknown>>`
          SELECT p.ID, p.COMMAND, p.STATE, p.TIME, LEFT(p.INFO, 120) AS INFO, t.trx_state, t.trx_started, t.trx_rows_locked
          FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
          WHERE p.DB = ${scope} AND p.ID <> CONNECTION_ID()`.execute(setup);
  lines.push(`  app sessions on the server (${sessions.rows.length}):`);
  for (const s of sessions.rows) lines.push(`    ${JSON.stringify(s)}`);
  const last = c.seen.at(-1);
  lines.push(
    `  subscription: ${subscriptions.map((s) => `${s.name} ${s.inFlight} in flight`).join(", ")}; ${c.seen.length} deliveries, the last ${last === undefined ? "never" : `${Date.now() - last.at} ms ago`}`,
  );
  lines.push(`  last errors logged (${c.errors.length}): ${JSON.stringify(c.errors.slice(-10))}`);
  lines.push(`  last warnings logged (${c.warnings.length}): ${JSON.stringify(c.warnings.slice(-10))}`);
  return lines.join("\n");
}
