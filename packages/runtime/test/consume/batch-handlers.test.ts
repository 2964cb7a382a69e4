/**
 * Batch handlers on every engine × form, and row-lock claims whose rows share a transaction:
 * one handler call per claim with one outcome per row; in the row-lock form a batch whose
 * commit fails (its session killed mid-handler) returns every row, its attempt not spent.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "../support/fixtures.js";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, subscriber, type LogFields, type Logger, type Subscriber } from "../../src/index.js";
import {
  createJobsTable,
  dropScope,
  insertJobs,
  jobsSpecOf,
  killSession,
  matrix,
  heldTransactionOf,
  readJobs,
  scopedUrl,
  serverEngines,
  until,
  type Job,
} from "../support/claim-forms.js";
import { unique } from "../support/engines.js";

type Logged = { message: string; code: unknown };

function recordingLogger(errors: Logged[]): Logger {
  return {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (fields: LogFields, message: string) => errors.push({ message, code: fields["code"] ?? (fields["err"] as { code?: unknown } | undefined)?.code }),
  };
}

async function runApp(url: string, sub: Subscriber, route: Parameters<SqlBroker["route"]>[0], errors: Logged[], work: () => Promise<void>): Promise<void> {
  const app = await new App({ name: "batch", version: "0", logger: recordingLogger(errors) })
    .withBroker(SqlBroker.fromUrl(url, { pool: { max: 12 } }).route(route, "jobs"), (b) => b.include(sub))
    .start();
  try {
    await work();
  } finally {
    await app.stop();
  }
}

describe.each(matrix)("batch handlers on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test("one call per claim, one outcome per row: acks finish their rows, retries come back once", async () => {
    const table = unique(`batch_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    const sizes: number[] = [];
    const seen: Array<{ n: number; attempt: number }> = [];
    const sub = subscriber.batch(InboxQueue.of(spec, "jobs").batch(8).pollInterval(50), async (jobs, ctx) => {
      sizes.push(jobs.length);
      jobs.forEach((job, i) => {
        seen.push({ n: job.n, attempt: ctx.rows[i]?.get(keys.attempt) ?? 0 });
      });
      return jobs.map((job, i) => (job.n % 2 === 1 && ctx.rows[i]?.get(keys.attempt) === 1 ? HandlerOutcome.retry() : HandlerOutcome.ack()));
    });
    const errors: Logged[] = [];
    try {
      await insertJobs(db, table, 20);
      await runApp(url, sub, spec, errors, () => until(async () => (await readJobs(db, table)).length === 0, 10_000, "every row to be acked"));
    } finally {
      await engine.dropTable(db, table);
    }
    expect(errors).toEqual([]);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    expect(sizes.every((n) => n <= 8)).toBe(true);
    const odd = seen.filter((s) => s.n % 2 === 1);
    expect(odd.filter((s) => s.attempt === 1)).toHaveLength(10);
    expect(odd.filter((s) => s.attempt === 2)).toHaveLength(10);
    expect(seen.filter((s) => s.n % 2 === 0).map((s) => s.attempt)).toEqual(new Array(10).fill(1));
  });

  test("one outcome for all, and a throw retries every row", async () => {
    const table = unique(`batchall_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    let calls = 0;
    const sub = subscriber.batch(InboxQueue.of(spec, "jobs").batch(4).pollInterval(50), async (jobs: readonly Job[]) => {
      calls++;
      if (calls === 1) throw new Error(`the first batch of ${jobs.length} fails`);
      return HandlerOutcome.ack();
    });
    const errors: Logged[] = [];
    try {
      await insertJobs(db, table, 4);
      await runApp(url, sub, spec, errors, () => until(async () => (await readJobs(db, table)).length === 0, 10_000, "every row to be acked"));
    } finally {
      await engine.dropTable(db, table);
    }
    expect(errors.map((e) => e.message)).toEqual(["batch handler failed; its rows settle by the onError policy"]);
  });
});

const rowLockCases = serverEngines.flatMap((engine) => [
  { engine, shape: "a batch handler" as const },
  { engine, shape: "per-row handlers with .sharedTransaction()" as const },
]);

describe.each(rowLockCases)("row-lock shared transaction on $engine.name: $shape", ({ engine, shape }) => {
  test("a commit that fails returns every row of the transaction, attempt not spent (BatchRolledBack)", async () => {
    const setup = await engine.connect(engine.url());
    const scope = unique("shared");
    const url = await scopedUrl(engine, setup, scope);
    const db = await engine.connect(url);
    const table = unique("shared_jobs");
    const errors: Logged[] = [];
    const delivered: Array<{ n: number; attempt: number }> = [];
    let killed = false;
    /** The first time: the claim's session is killed while the handler runs, so its commit fails. */
    const killOnce = async (): Promise<void> => {
      if (killed) return;
      killed = true;
      const session = await sharedSession(engine.engine, setup, scope);
      if (session === undefined) throw new Error("no session of the app's scope in a transaction");
      await killSession(engine, setup, session);
    };
    try {
      await createJobsTable(engine, db, table);
      // The row-lock description itself (jobsSpecOf's type is any form's): sharedTransaction() needs one.
      const spec = InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).data(column("k")).payload(column("payload"), payloadOf<Job>());
      const queue = InboxQueue.of(spec, "jobs").batch(4).pollInterval(50);
      const sub =
        shape === "a batch handler"
          ? subscriber.batch(queue, async (jobs, ctx) => {
              jobs.forEach((job, i) => {
                delivered.push({ n: job.n, attempt: ctx.rows[i]?.get(keys.attempt) ?? 0 });
              });
              await killOnce();
              return HandlerOutcome.ack();
            })
          : subscriber(queue.workers(4).sharedTransaction(), async (job, ctx) => {
              delivered.push({ n: job.n, attempt: ctx.get(keys.attempt) });
              // Every row of the claim is in work before the session goes.
              await until(() => delivered.length >= 4, 5_000, "four rows in work");
              await killOnce();
              return HandlerOutcome.ack();
            });
      await insertJobs(db, table, 4);
      // Read through `setup` on MariaDB: the fallback above kills every session of the scope's database,
      // which would include `db`'s pooled connection (a read on it then fails with "Connection lost").
      const remaining = engine.engine === "mysql" ? () => readJobs(setup, table, scope) : () => readJobs(db, table);
      await runApp(url, sub, spec, errors, () => until(async () => (await remaining()).length === 0, 15_000, "every row to come back and be acked"));
    } finally {
      await engine.dropTable(db, table).catch(() => undefined);
      await db.destroy();
      await dropScope(engine, setup, scope);
      await setup.destroy();
    }
    expect(errors.filter((e) => e.code === "BatchRolledBack")).toHaveLength(4);
    // The killed transaction's rows came back with their attempt not spent: each delivered twice, at attempt 1.
    expect(delivered.map((d) => d.attempt)).toEqual(new Array(8).fill(1));
    expect(new Set(delivered.map((d) => d.n))).toEqual(new Set([0, 1, 2, 3]));
  });
});

/** The one session of a scope inside a transaction (the shared claim's). */
async function sharedSession(engine: string, setup: AnyKysely, scope: string): Promise<number | undefined> {
  if (engine === "postgres") {
    const { rows } = await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE application_name = ${scope} AND state LIKE 'idle in transaction%'`.execute(setup);
    return rows[0]?.pid;
  }
  // A transaction that began a moment ago may not hold its locks yet: look again for up to 2 s.
  for (let tries = 0; tries < 40; tries++) {
    const session = await heldTransactionOf(setup, scope);
    if (session !== undefined) return session;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return undefined;
}
