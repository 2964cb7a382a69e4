import { connect, recreateTable, urlOf } from "../db.js";
import { withTimeout, sleep } from "../jobs.js";
import { report } from "../report-helpers.js";
import { short, table } from "../report.js";
import { fmt, percentiles, type Percentiles } from "../stats.js";
import { benchSpec } from "../systems/raw-sql.js";
import { loadRuntime, type Runtime } from "../systems/sqlinbox.js";
import { ENGINES } from "../cases.js";
import type { EngineName } from "../types.js";

/** The delay every sample waits out, and a poll interval far beyond it: only the due wake starts a row in time. */
const DUE_DELAY_MS = 500;
const POLL_MS = 10_000;

export interface DueResult {
  readonly id: string;
  readonly engine: EngineName;
  readonly how: string;
  readonly error?: string;
  readonly idle?: Percentiles;
}

/**
 * How a sample's row is delayed: by its handler (`retryAfter(500)` on its first attempt, due 500 ms
 * after the handler returned: the settlement's write counts in the latency), or by its publish
 * (`delay: 500`, due 500 ms after the publish call began).
 */
type DueHow = "retryAfter" | "publish-delay";

const HOW: Record<DueHow, string> = {
  retryAfter: `the handler returns retryAfter(${DUE_DELAY_MS}); due = its return + ${DUE_DELAY_MS} ms → the retry's start`,
  "publish-delay": `publish(…, { delay: ${DUE_DELAY_MS} }); due = the call + ${DUE_DELAY_MS} ms → the handler's start`,
};

/**
 * One case: an App on the lease table (the delay is stored in the lease column), `pollInterval(10 s)`,
 * and `samples` rows one after another, each waited for (idle). Resolves to due → start per sample.
 */
async function measureDue(rt: Runtime, engine: EngineName, how: DueHow, samples: number): Promise<Percentiles> {
  const db = connect(engine, 1);
  await recreateTable(db, engine, "lease");
  await db.destroy();
  const spec = benchSpec("lease");
  const dueAt = new Map<number, number>();
  const started = new Map<number, number>();
  let arrived: ((i: number) => void) | undefined;
  const queue = rt.InboxQueue.of(spec, "bench").pollInterval(POLL_MS).workers(2);
  const sub = rt.subscriber(queue, (payload: { i: number }, ctx: Runtime) => {
    const now = Date.now();
    if (how === "retryAfter" && ctx.get(rt.keys.attempt) === 1) {
      // The row is due DUE_DELAY_MS after this return; the settlement is written after it.
      dueAt.set(payload.i, Date.now() + DUE_DELAY_MS);
      return rt.HandlerOutcome.retryAfter(DUE_DELAY_MS);
    }
    started.set(payload.i, now);
    arrived?.(payload.i);
    return rt.HandlerOutcome.ack();
  });
  const broker = rt.SqlBroker.fromUrl(urlOf(engine), { pool: { max: 6 } }).route(spec, "bench");
  const app = await new rt.App({ name: "sqlinbox-bench-due", version: "0.0.0", logger: rt.silentLogger }).withBroker(broker, (b: Runtime) => b.include(sub)).start();
  try {
    const latencies: number[] = [];
    for (let i = -3; i < samples; i++) {
      const seen = new Promise<number>((resolve) => (arrived = (n) => n === i && resolve(n)));
      if (how === "publish-delay") {
        dueAt.set(i, Date.now() + DUE_DELAY_MS);
        await broker.publish("bench", { i }, { delay: DUE_DELAY_MS });
      } else {
        await broker.publish("bench", { i });
      }
      await withTimeout(seen, POLL_MS * 2, `due ${engine}/${how} sample ${i}`);
      // The first three warm up (connections, statements prepared).
      if (i >= 0) latencies.push((started.get(i) as number) - (dueAt.get(i) as number));
      await sleep(20);
    }
    return percentiles(latencies);
  } finally {
    await app.stop();
  }
}

/** Due → start for a 500 ms delay, idle, per engine: `--workloads=due` (`--due-n=50` samples per case). */
export async function runDue(samples: number, select: <T extends { id: string }>(c: T[]) => T[]): Promise<DueResult[]> {
  const cases = select(ENGINES.flatMap((engine) => (["retryAfter", "publish-delay"] as const).map((how) => ({ id: `sqlinbox/${engine}/${how}`, engine, how }))));
  const rt = await loadRuntime();
  const results: DueResult[] = [];
  for (const c of cases) {
    if (typeof rt === "string") {
      results.push({ id: c.id, engine: c.engine, how: HOW[c.how], error: rt });
      continue;
    }
    try {
      const idle = await measureDue(rt, c.engine, c.how, samples);
      results.push({ id: c.id, engine: c.engine, how: HOW[c.how], idle });
      report(`due ${c.id}: p50 ${idle.p50.toFixed(1)} ms, p95 ${idle.p95.toFixed(1)} ms`);
    } catch (e) {
      report(`due ${c.id}: FAILED: ${(e as Error).message}`);
      results.push({ id: c.id, engine: c.engine, how: HOW[c.how], error: (e as Error).message });
    }
  }
  return results;
}

export function dueTable(rs: readonly DueResult[]): string {
  const p = (x: Percentiles) => `${fmt(x.p50, 1)} / ${fmt(x.p95, 1)} / ${fmt(x.p99, 1)} / ${fmt(x.max, 1)}`;
  return table(
    [`due → start ms, ${DUE_DELAY_MS} ms delay, idle`, "p50 / p95 / p99 / max", "n", "how"],
    rs.map((r) => (r.idle ? [r.id, p(r.idle), String(r.idle.n), r.how] : [r.id, `FAILED: ${short(r.error)}`, "", r.how])),
  );
}
