import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { makeWorkerUtils, run, type Runner, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import type { BenchSettings } from "../config.js";
import { PG_URL } from "../config.js";
import { connect, LEASE_PRECISION, recreateTable, tableOf, type AnyDb } from "../db.js";
import { benchSpec, LEASE_MS } from "../systems/raw-sql.js";
import { loadDialect } from "../systems/dialects.js";
import type { EngineDialect, RawRow } from "@sqlinbox/kysely-dialects/internal";
import { sleep, wallNow, withTimeout } from "../jobs.js";
import { report } from "../report-helpers.js";
import { short, table } from "../report.js";
import { fmt, percentiles, type Percentiles } from "../stats.js";
import { GRAPHILE_DEFAULT, graphileOptions, graphileReset, graphileSetup, GRAPHILE_SCHEMA, GRAPHILE_TASK, silentLogger } from "../systems/graphile-worker.js";
import { buildApp, loadRuntime, startApp, type RunningApp, type Runtime } from "../systems/sqlinbox.js";
import type { EngineName, StoreName, SystemName } from "../types.js";
import { bullmqLatency } from "../systems/bullmq.js";
import { ENGINES } from "../cases.js";

/** One consumer under test: `publish(t)` writes a job stamped `t`; `arrivals` reports each handler start. */
export interface LatencyCase {
  readonly id: string;
  readonly system: SystemName;
  readonly engine: StoreName;
  readonly how: string;
  check(): Promise<string | null>;
  /** Starts the consumer; `onArrival(seq, ms)` is called at each handler start. */
  start(onArrival: (seq: number, latencyMs: number) => void): Promise<void>;
  publish(seq: number): Promise<void>;
  stop(): Promise<void>;
}

export interface LatencyResult {
  readonly id: string;
  readonly system: SystemName;
  readonly engine: StoreName;
  readonly how: string;
  readonly notAvailable?: string;
  readonly error?: string;
  readonly idle?: Percentiles;
  readonly atRate?: Percentiles & { readonly ratePerSec: number };
}

function sqlinboxInProcess(engine: EngineName): LatencyCase {
  let rt: Runtime | undefined;
  let broker: Runtime | undefined;
  let running: RunningApp | undefined;
  return {
    id: `sqlinbox/${engine}/in-process`,
    system: "sqlinbox",
    engine,
    how: "publish through the broker wakes the subscription in the same process",
    async check() {
      const r = await loadRuntime();
      if (typeof r === "string") return r;
      rt = r;
      return null;
    },
    async start(onArrival) {
      const d = connect(engine, 1);
      await recreateTable(d, engine, "lease");
      await d.destroy();
      const built = buildApp(rt!, {
        engine,
        form: "lease",
        batch: 1,
        workers: 8,
        handler: (p) => {
          const { i, t } = p as { i: number; t: number };
          onArrival(i, wallNow() - t);
        },
      });
      broker = built.broker;
      running = await startApp(built.app);
      if (typeof broker!.publish !== "function") throw new Error("the broker has no publish(route, payload) yet");
    },
    publish: (seq) => broker!.publish("bench", { i: seq, t: wallNow() }),
    async stop() {
      await running?.stop();
    },
  };
}

/**
 * A publish inside the caller's Kysely transaction (`{ via: trx }`), the subscription in this
 * process: latency from the end of the caller's transaction callback (the COMMIT is still to
 * run) to the handler's start. The runtime watches the transaction and wakes after its commit.
 */
function sqlinboxInProcessTrx(engine: EngineName): LatencyCase {
  let rt: Runtime | undefined;
  let broker: Runtime | undefined;
  let running: RunningApp | undefined;
  let db: AnyDb | undefined;
  const committing = new Map<number, number>();
  const arrived = new Map<number, number>();
  let arrive: (seq: number, latencyMs: number) => void = () => {};
  const both = (seq: number): void => {
    const c = committing.get(seq);
    const a = arrived.get(seq);
    if (c !== undefined && a !== undefined) arrive(seq, a - c);
  };
  return {
    id: `sqlinbox/${engine}/in-process-trx`,
    system: "sqlinbox",
    engine,
    how: "publish({ via: trx }) in the caller's transaction; the wake follows its commit (end of the callback to the handler's start)",
    async check() {
      const r = await loadRuntime();
      if (typeof r === "string") return r;
      rt = r;
      return null;
    },
    async start(onArrival) {
      arrive = onArrival;
      db = connect(engine, 12);
      await recreateTable(db, engine, "lease");
      const built = buildApp(rt!, {
        engine,
        form: "lease",
        batch: 1,
        workers: 8,
        kysely: db,
        handler: (p) => {
          const { i } = p as { i: number };
          arrived.set(i, wallNow());
          both(i);
        },
      });
      broker = built.broker;
      running = await startApp(built.app);
    },
    async publish(seq) {
      await db!.transaction().execute(async (trx) => {
        await broker!.publish("bench", { i: seq, t: 0 }, { via: trx });
        committing.set(seq, wallNow());
      });
      both(seq);
    },
    async stop() {
      await running?.stop();
      await db?.destroy();
    },
  };
}

/**
 * The floor for an in-process wake: a raw insert, then at once the claim statement(s) sqlinbox runs
 * (the lease form's, built by @sqlinbox/kysely-dialects), on one pool; the arrival is the moment
 * the claim returns the row. No handler, no wake, no library between them.
 */
function rawInsertThenClaim(engine: EngineName): LatencyCase {
  let db: AnyDb | undefined;
  let dialect: EngineDialect | undefined;
  let arrive: (seq: number, latencyMs: number) => void = () => {};
  const spec = benchSpec("lease").description;
  const precision = LEASE_PRECISION[engine];
  return {
    id: `raw-sql/${engine}/insert-then-claim`,
    system: "raw-sql",
    engine,
    how: "an insert, then the lease claim at once, with Kysely and nothing else (the floor for an in-process wake)",
    async check() {
      const d = await loadDialect(engine);
      if (typeof d === "string") return d;
      dialect = d;
      return null;
    },
    async start(onArrival) {
      arrive = onArrival;
      db = connect(engine, 4);
      await recreateTable(db, engine, "lease");
    },
    async publish(seq) {
      const t = wallNow();
      await db!
        .insertInto(tableOf("lease"))
        .values({ payload: JSON.stringify({ i: seq, t }) })
        .execute();
      const now = new Date();
      const options = { limit: 8, now, until: dialect!.time.truncate(new Date(now.getTime() + LEASE_MS), precision), precision };
      let rows: readonly RawRow[];
      if (dialect!.lease.claimsInOneStatement) rows = (await db!.executeQuery(dialect!.lease.claim(spec, options))).rows;
      else
        rows = await db!.transaction().execute(async (trx) => {
          const selected = (await trx.executeQuery(dialect!.lease.selectClaimable(spec, options))).rows;
          if (selected.length > 0)
            await trx.executeQuery(
              dialect!.lease.stampClaimed(
                spec,
                selected.map((r) => r.id),
                options.until,
                precision,
              ),
            );
          return selected;
        });
      for (const row of rows) {
        const p = JSON.parse(String(row.payload)) as { i: number; t: number };
        arrive(p.i, wallNow() - p.t);
      }
      // Remove what was claimed, as the consumer's ack would (a publish at rate may claim another's row: every row is claimed once).
      if (rows.length > 0)
        await db!
          .deleteFrom(tableOf("lease"))
          .where(
            "id",
            "in",
            rows.map((r) => r.id),
          )
          .execute();
    },
    async stop() {
      await db?.destroy();
    },
  };
}

const CHILD = fileURLToPath(new URL("./latency-child.ts", import.meta.url));

/** The consumer in a second process; this process publishes through a broker that subscribes nothing. */
function sqlinboxSecondProcess(engine: EngineName): LatencyCase {
  let child: ChildProcess | undefined;
  let rt: Runtime | undefined;
  let broker: Runtime | undefined;
  let running: RunningApp | undefined;
  let how = "second process, polling";
  return {
    id: `sqlinbox/${engine}/second-process`,
    system: "sqlinbox",
    engine,
    get how() {
      return how;
    },
    async check() {
      const r = await loadRuntime();
      if (typeof r === "string") return r;
      rt = r;
      return null;
    },
    async start(onArrival) {
      const db = connect(engine, 1);
      await recreateTable(db, engine, "lease");
      await db.destroy();
      const built = buildApp(rt!, { engine, form: "lease", batch: 1, workers: 1, listenNotify: engine === "postgres" });
      broker = built.broker;
      running = await startApp(built.app);
      if (typeof broker!.publish !== "function") throw new Error("the broker has no publish(route, payload) yet");
      // The child runs what this process runs (fork passes on its flags): the built packages, or the sources under `--conditions`.
      child = fork(CHILD, [engine], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
      await withTimeout(
        new Promise<void>((resolve, reject) => {
          child!.on("message", (m: { ready?: boolean; how?: string; i?: number; latency?: number; error?: string }) => {
            if (m.ready) {
              how = m.how ?? how;
              resolve();
            } else if (m.error) reject(new Error(m.error));
            else onArrival(m.i!, m.latency!);
          });
          child!.on("exit", (code) => reject(new Error(`latency child exited with ${code}`)));
        }),
        30_000,
        "latency child start",
      );
    },
    publish: (seq) => broker!.publish("bench", { i: seq, t: wallNow() }),
    async stop() {
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child!.once("exit", resolve));
        child.send({ stop: true });
        await withTimeout(exited, 10_000, "latency child stop").catch(() => child!.kill("SIGKILL"));
      }
      await running?.stop();
    },
  };
}

function graphileLatency(): LatencyCase {
  let runner: Runner | undefined;
  let utils: WorkerUtils | undefined;
  return {
    id: "graphile-worker/postgres/default",
    system: "graphile-worker",
    engine: "postgres",
    how: "addJob → LISTEN/NOTIFY, runner in this process, default config",
    check: async () => null,
    async start(onArrival) {
      await graphileSetup();
      const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
      await graphileReset(pool);
      await pool.end();
      utils = await makeWorkerUtils({ connectionString: PG_URL, schema: GRAPHILE_SCHEMA, logger: silentLogger });
      runner = await run({
        ...graphileOptions(GRAPHILE_DEFAULT, 1),
        taskList: {
          [GRAPHILE_TASK]: async (p) => {
            const { i, t } = p as { i: number; t: number };
            onArrival(i, wallNow() - t);
          },
        },
      });
    },
    publish: async (seq) => void (await utils!.addJob(GRAPHILE_TASK, { i: seq, t: wallNow() })),
    async stop() {
      await runner?.stop();
      await utils?.release();
    },
  };
}

/** Publishes `samples` jobs: idle (one at a time, waiting for each) or open-loop at `rate` per second. */
async function measure(c: LatencyCase, samples: number, rate: number | null, arrivals: Map<number, number>, base: number): Promise<Percentiles> {
  const waiters = new Map<number, () => void>();
  const seen = (seq: number) => new Promise<void>((resolve) => (arrivals.has(seq) ? resolve() : waiters.set(seq, resolve)));
  notify = (seq) => waiters.get(seq)?.();
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let k = 0; k < samples; k++) {
    const seq = base + k;
    if (rate === null) {
      await c.publish(seq);
      await withTimeout(seen(seq), 30_000, `${c.id} delivery ${seq}`);
      await sleep(20); // idle between samples: the consumer is waiting, not draining
    } else {
      const due = t0 + (k * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      pending.push(c.publish(seq).then(() => withTimeout(seen(seq), 30_000, `${c.id} delivery ${seq}`)));
    }
  }
  await Promise.all(pending);
  return percentiles(Array.from({ length: samples }, (_, k) => arrivals.get(base + k)!));
}
let notify: (seq: number) => void = () => {};

/** W3: publish → handler start, p50/p95/p99, idle and at a fixed rate. */
export async function runLatency(s: BenchSettings, select: <T extends { id: string }>(c: T[]) => T[]): Promise<LatencyResult[]> {
  const cases = select([
    ...ENGINES.flatMap((e) => [sqlinboxInProcess(e), sqlinboxInProcessTrx(e), rawInsertThenClaim(e)]),
    ...ENGINES.map(sqlinboxSecondProcess),
    graphileLatency(),
    bullmqLatency("redis"),
    bullmqLatency("postgres"),
  ]);
  const results: LatencyResult[] = [];
  for (const c of cases) {
    const base = { id: c.id, system: c.system, engine: c.engine, how: c.how };
    const reason = await c.check().catch((e: unknown) => (e as Error).message);
    if (reason !== null) {
      report(`W3 ${c.id}: not available: ${reason}`);
      results.push({ ...base, notAvailable: reason });
      continue;
    }
    const arrivals = new Map<number, number>();
    try {
      await c.start((seq, ms) => {
        if (!arrivals.has(seq)) arrivals.set(seq, ms);
        notify(seq);
      });
      await measure(c, Math.min(5, s.latencySamples), null, arrivals, 1_000_000); // warm-up
      const idle = await measure(c, s.latencySamples, null, arrivals, 0);
      const atRate = await measure(c, s.latencySamples, s.latencyRatePerSec, arrivals, 100_000);
      results.push({ ...base, how: c.how, idle, atRate: { ...atRate, ratePerSec: s.latencyRatePerSec } });
      report(`W3 ${c.id}: idle p50 ${idle.p50.toFixed(2)} ms, at ${s.latencyRatePerSec}/s p50 ${atRate.p50.toFixed(2)} ms`);
    } catch (e) {
      report(`W3 ${c.id}: FAILED: ${(e as Error).message}`);
      results.push({ ...base, error: (e as Error).message });
    } finally {
      await c.stop().catch(() => {});
    }
  }
  return results;
}

export function latencyTable(rs: readonly LatencyResult[]): string {
  const p = (x?: Percentiles) => (x ? `${fmt(x.p50, 2)} / ${fmt(x.p95, 2)} / ${fmt(x.p99, 2)}` : "");
  return table(
    ["W3 latency ms p50/p95/p99", "idle", "at fixed rate", "how"],
    rs.map((r) =>
      r.idle
        ? [r.id, p(r.idle), `${p(r.atRate)} @${r.atRate?.ratePerSec}/s`, r.how]
        : [r.id, r.notAvailable ? `not available: ${short(r.notAvailable)}` : `FAILED: ${short(r.error)}`, "", r.how],
    ),
  );
}
