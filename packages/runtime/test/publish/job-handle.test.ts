/**
 * A job followed by its handle (`broker.job(route, id)`) on every engine × form, against real
 * servers: waiting → running → done (a table that keeps handled rows) or gone (one whose ack deletes
 * them), scheduled on the database's clock, dead-lettered into a table or a group, cancelled queued
 * and in work, `finished()` timing out and aborted, and an id no row has. The handle reads through
 * a broker of its own where the form allows (a second pool); on SQLite the app's broker, whose
 * process registry holds the advisory keys. One test follows a job from another process
 * (test/support/fixtures/state-reader.ts) through scheduled, waiting, running and done.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineInbox, field } from "@sqlinbox/core";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, JobEnded, SqlBroker, createInboxTable, keys, silentLogger, subscriber, systemClock, type Clock, type JobState } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { useJobTables } from "../support/fixtures.js";
import { type HandleJob as Job, handleSpecOf } from "../support/job-handle-tables.js";
import { sleep } from "../support/sleep.js";
import { fixtureBundle } from "../support/fixture-bundles.js";

const POLL_MS = 50;
const specOf = handleSpecOf;
type Spec = ReturnType<typeof specOf>;

/** A dead-letter table that keeps the job's id (its id column is not generated). */
function deadSpecOf(table: string) {
  return defineInbox({
    table,
    columns: {
      id: field.id().holds<number>().type("bigint"),
      payload: field.payload<Job>(),
      lastError: field.lastError("last_error"),
      failedAttempts: field.failedAttempts("failed_attempts"),
    },
  });
}

/** A gate per job: the handler waits on it, or on its signal. */
class Gates {
  readonly #open = new Map<number, () => void>();
  readonly started = new Set<number>();
  /** The attempt each job's handler read last. */
  readonly attempts = new Map<number, number | undefined>();
  wait(n: number, signal: AbortSignal): Promise<"open" | "aborted"> {
    this.started.add(n);
    return new Promise((resolve) => {
      this.#open.set(n, () => resolve("open"));
      signal.addEventListener("abort", () => resolve("aborted"), { once: true });
    });
  }
  open(n: number): void {
    this.#open.get(n)?.();
  }
  openAll(): void {
    for (const open of this.#open.values()) open();
  }
}

const runtimeRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** A process of its own that reads job states on request (test/support/fixtures/state-reader.ts). */
async function startReader(env: { url: string; table: string; form: string; keeps: boolean }) {
  const child = spawn(process.execPath, [fixtureBundle("test/support/fixtures/state-reader.ts")], {
    cwd: runtimeRoot,
    env: { ...process.env, READER_URL: env.url, READER_TABLE: env.table, READER_FORM: env.form, READER_KEEPS: env.keeps ? "1" : "0" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const answers: Array<(line: { state: string; attempt: number | null }) => void> = [];
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
    const line = JSON.parse(text) as { event?: string; state: string; attempt: number | null };
    if (line.event === "ready") ready();
    else answers.shift()?.({ state: line.state, attempt: line.attempt });
  });
  const exited = new Promise<never>((_, reject) => child.on("exit", (code) => reject(new Error(`the state reader exited (${code}): ${stderr}`))));
  await Promise.race([isReady, exited]);
  return {
    pid: child.pid,
    read: (id: string) =>
      Promise.race([
        new Promise<{ state: string; attempt: number | null }>((resolve) => {
          answers.push(resolve);
          child.stdin?.write(`${id}\n`);
        }),
        exited,
      ]),
    close: () => {
      exited.catch(() => {});
      child.stdin?.end();
      return new Promise<void>((resolve) => (child.exitCode === null ? child.on("exit", () => resolve()) : resolve()));
    },
  };
}

describe.each(matrix)("a job's handle on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  const { tables, closers } = useJobTables(engine, (connected) => {
    ({ db, url } = connected);
  });

  /**
   * A fresh table, a broker routing it (`jobs`), and the broker a handle reads through: another
   * pool on the same database, but on SQLite the app's own (one SQLite file serves one process).
   */
  async function setup(keeps: boolean) {
    const table = unique(`jh_${form}`).toLowerCase();
    const dead = `${table}_dead`;
    tables.push(table, dead);
    const spec = specOf(table, form, keeps);
    const deadSpec = deadSpecOf(dead);
    await createInboxTable(db, spec);
    await createInboxTable(db, deadSpec);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs");
    const observer = engine.engine === "sqlite" ? broker : SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, "jobs");
    closers.push(
      () => broker.close(),
      () => observer.close(),
    );
    return { table, spec, deadSpec, broker, observer };
  }

  /** Starts an app whose subscriber waits on `gates` for each job, then `outcome` (a throw when it throws). */
  async function startApp(
    broker: SqlBroker<{ jobs: Spec }>,
    spec: Spec,
    gates: Gates,
    configure: (q: InboxQueue<Spec>) => InboxQueue<Spec> = (q) => q,
    outcome: (n: number) => HandlerOutcome = () => HandlerOutcome.ack(),
  ) {
    const queue = configure(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(POLL_MS).workers(4));
    const sub = subscriber(queue, async (job, ctx) => {
      gates.attempts.set(job.n, ctx.get(keys.attempt));
      const how = await gates.wait(job.n, ctx.signal);
      // A cancelled handler winds down for a moment, as real work does, then drops the row.
      if (how === "aborted") await sleep(200);
      return how === "aborted" ? HandlerOutcome.drop() : outcome(job.n);
    });
    const app = await new App({ name: "jobs", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
    // Closed last first: no handler still waits on its gate when the app stops (a stop would wait out its grace).
    closers.push(
      () => app.stop(),
      async () => gates.openAll(),
    );
    return app;
  }

  describe.each([
    { keeps: false, ends: "gone" },
    { keeps: true, ends: "done" },
  ])("a table that $ends its handled rows", ({ keeps, ends }) => {
    test(`waiting, then running while its handler runs, then ${ends}; finished() resolves`, async () => {
      const { spec, broker, observer } = await setup(keeps);
      const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" } });
      const job = observer.job("jobs", published);
      expect(await job.state()).toMatchObject({ state: "waiting", id: published.id, attempt: 0, runAt: null, lastError: null });

      const gates = new Gates();
      const app = await startApp(broker, spec, gates);
      await until(() => gates.started.has(1), 10_000, "the handler to start");
      const running = await job.state();
      expect(running.state).toBe("running");
      if (form === "lease") expect((running as { leaseUntil: Date }).leaseUntil.getTime()).toBeGreaterThan(Date.now() - 5000);
      // The attempt in work, as its handler reads it (the row-lock form's count is still uncommitted).
      expect((running as { attempt: number }).attempt).toBe(1);
      expect(gates.attempts.get(1)).toBe(1);

      const finished = job.finished({ pollMs: 30, timeoutMs: 10_000 });
      await sleep(100);
      gates.open(1);
      const end = await finished;
      expect(end.state).toBe(ends);
      if (keeps) expect((end as { processedAt: Date }).processedAt).toBeInstanceOf(Date);
      expect((await job.state()).state).toBe(ends);
      await app.stop();
    });
  });

  test("followed from another process: scheduled, waiting, running in attempt 1, then done", async () => {
    const { table, spec, broker } = await setup(true);
    const reader = await startReader({ url, table, form, keeps: true });
    closers.push(() => reader.close());
    const later = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" }, delay: 1500 });
    const now = await broker.publish("jobs", { n: 2 }, { columns: { k: "b" } });
    expect(await reader.read(later.id)).toEqual({ state: "scheduled", attempt: 0 });
    expect(await reader.read(now.id)).toEqual({ state: "waiting", attempt: 0 });
    const gates = new Gates();
    await startApp(broker, spec, gates);
    // A key held on SQLite lives in the process that holds it: another process sees the row waiting (its attempt counted).
    const inWork = engine.engine === "sqlite" && form === "advisory" ? { state: "waiting", attempt: 1 } : { state: "running", attempt: 1 };
    await until(() => gates.started.has(2), 10_000, "the due job to start");
    expect(await reader.read(now.id)).toEqual(inWork);
    expect((await reader.read(later.id)).state).toBe(gates.started.has(1) ? inWork.state : "scheduled");
    await until(() => gates.started.has(1), 10_000, "the scheduled job to start once due");
    expect(await reader.read(later.id)).toEqual(inWork);
    gates.openAll();
    for (const id of [now.id, later.id]) await until(async () => (await reader.read(id)).state === "done", 10_000, `job ${id} done as another process reads it`);
  });

  test("scheduled while its run-at is ahead on the database's clock, waiting once it is due", async () => {
    const { broker, observer } = await setup(false);
    // The handle's broker runs in an app whose host clock reads an hour ahead: the database's clock decides.
    const ahead: Clock = {
      now: () => new Date(Date.now() + 3_600_000),
      setTimer: (ms, fn) => systemClock.setTimer(ms, fn),
      sleep: (ms, signal) => systemClock.sleep(ms, signal),
    };
    const app = await new App({ name: "ahead", version: "0", logger: silentLogger, clock: ahead }).withBroker(observer, (b) => b).start();
    closers.push(() => app.stop());
    const later = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" }, delay: 60_000 });
    const due = await broker.publish("jobs", { n: 2 }, { columns: { k: "b" }, runAt: new Date(Date.now() - 1000) });
    const state = await observer.job("jobs", later).state();
    expect(state.state).toBe("scheduled");
    expect((state as { runAt: Date }).runAt.getTime()).toBeGreaterThan(Date.now() + 50_000);
    expect((await observer.job("jobs", due).state()).state).toBe("waiting");
    await app.stop();
  });

  test("dead-lettered into a table: state() and finished() give the last error and the attempts spent", async () => {
    const { spec, deadSpec, broker, observer } = await setup(false);
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" } });
    const job = observer.job("jobs", published, { deadLetter: deadSpec });
    const gates = new Gates();
    await startApp(
      broker,
      spec,
      gates,
      (q) => q.deadLetter(deadSpec, { maxAttempts: 1 }),
      () => {
        throw new Error("boom");
      },
    );
    const finished = job.finished({ pollMs: 30, timeoutMs: 10_000 }).catch((error: unknown) => error);
    await until(() => gates.started.has(1), 10_000, "the handler to start");
    gates.open(1);
    const error = await finished;
    expect(error).toBeInstanceOf(JobEnded);
    expect((error as JobEnded).reason).toBe("deadLettered");
    expect((error as JobEnded).lastError).toBe("Error: boom");
    expect(await job.state()).toEqual({ state: "deadLettered", id: published.id, lastError: "Error: boom", attempts: 1 });
    // Without the dead-letter place the handle cannot look there: the row is gone from the source.
    expect((await observer.job("jobs", published).state()).state).toBe("gone");
  });

  test("dead-lettered into a group of its table", async () => {
    const { spec, broker, observer } = await setup(false);
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" } });
    const job = observer.job("jobs", published, { deadLetter: { group: "jobs.dead" } });
    const gates = new Gates();
    await startApp(
      broker,
      spec,
      gates,
      (q) => q.deadLetter({ group: "jobs.dead" }),
      () => HandlerOutcome.deadLetter("no such customer"),
    );
    await until(() => gates.started.has(1), 10_000, "the handler to start");
    gates.open(1);
    const error = await job.finished({ pollMs: 30, timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect((error as JobEnded).reason).toBe("deadLettered");
    expect(await job.state()).toMatchObject({ state: "deadLettered", lastError: "no such customer", attempts: 1 });
  });

  test("cancelled before it ran: finished() rejects with cancelled", async () => {
    const { broker, observer } = await setup(false);
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" } });
    const job = observer.job("jobs", published);
    expect(await job.cancel()).toBe("removed");
    const error = await job.finished({ pollMs: 30, timeoutMs: 5000 }).catch((e: unknown) => e);
    expect((error as JobEnded).reason).toBe("cancelled");
    expect((await job.state()).state).toBe("gone");
  });

  // Skipped on SQLite × advisory: its keys live in the process that holds them, so another broker sees no key held and
  // its cancel removes the row in work ("removed", not "signalled"), as docs/claim-forms.md says.
  test.skipIf(engine.engine === "sqlite" && form === "advisory")("cancelled in work from another broker: finished() rejects with cancelled once the row ends", async () => {
    const { spec, broker, observer } = await setup(false);
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" } });
    const job = observer.job("jobs", published);
    const gates = new Gates();
    await startApp(broker, spec, gates);
    await until(() => gates.started.has(1), 10_000, "the handler to start");
    const finished = job.finished({ pollMs: 30, timeoutMs: 10_000 }).catch((e: unknown) => e);
    await sleep(100);
    const other = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(spec, "jobs");
    closers.push(() => other.close());
    expect(await other.cancel("jobs", published.id)).toBe("signalled");
    const error = await finished;
    expect(error).toBeInstanceOf(JobEnded);
    expect((error as JobEnded).reason).toBe("cancelled");
  });

  test("finished() gives up at its timeout and on its signal; the job goes on", async () => {
    const { broker, observer } = await setup(false);
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" } });
    const job = observer.job("jobs", published);
    const started = Date.now();
    const timedOut = await job.finished({ timeoutMs: 300, pollMs: 50 }).catch((e: unknown) => e);
    expect((timedOut as JobEnded).reason).toBe("timeout");
    expect((timedOut as JobEnded).last).toMatchObject({ state: "waiting" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(Date.now() - started).toBeLessThan(3000);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    // A timeout too, so a wait that missed its signal ends (as a timeout, failing this test) instead of hanging.
    const aborted = await job.finished({ signal: controller.signal, pollMs: 10_000, timeoutMs: 3000 }).catch((e: unknown) => e);
    expect((aborted as JobEnded).reason).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await job.state()).state).toBe("waiting");
  });

  test("an id no row has reads as gone, and finished() rejects with notFound", async () => {
    const { observer } = await setup(false);
    const job = observer.job("jobs", 987_654_321);
    expect(await job.state()).toEqual<JobState>({ state: "gone", id: "987654321" });
    const error = await job.finished({ pollMs: 10 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobEnded);
    expect((error as JobEnded).reason).toBe("notFound");
    expect((error as JobEnded).code).toBe("JobEnded");
  });
});
