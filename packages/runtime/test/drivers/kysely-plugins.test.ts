/**
 * A broker on the application's Kysely with plugins (`CamelCasePlugin`, `ParseJSONResultsPlugin`), on
 * every engine × form, on a table of snake_case columns: sqlinbox's own statements read the raw column
 * names whatever plugins the app installed (claim, lease extension, ack, retry, retryAfter, dead
 * letter, publish with `{ via }` and headers), while a transactional handler's `ctx.tx` is the app's
 * Kysely as built: camelCase keys in, camelCase keys out.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import {
  CamelCasePlugin,
  ParseJSONResultsPlugin,
  sql,
  type Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, subscriber, type LogFields, type Logger } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique, type TestEngine } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";

interface Job {
  readonly n: number;
}

/** The jobs table, every column snake_case (the id too), the payload as JSON text; and its dead letters. */
async function createTables(engine: TestEngine, db: AnyKysely, jobs: string, dead: string): Promise<void> {
  for (const t of [jobs, dead]) await sql`DROP TABLE IF EXISTS ${sql.id(t)}`.execute(db);
  const [j, d] = [sql.id(jobs), sql.id(dead)];
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${j} (job_id INTEGER PRIMARY KEY, attempt_count INTEGER NOT NULL DEFAULT 1, locked_until TEXT, retry_after TEXT, job_key TEXT NOT NULL DEFAULT 'k', message_headers TEXT, last_error TEXT, payload_json TEXT NOT NULL)`.execute(
      db,
    );
    await sql`CREATE TABLE ${d} (dead_id INTEGER PRIMARY KEY, payload_json TEXT NOT NULL, last_error TEXT, failed_attempts INTEGER)`.execute(db);
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${j} (job_id BIGSERIAL PRIMARY KEY, attempt_count INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, retry_after TIMESTAMPTZ, job_key TEXT NOT NULL DEFAULT 'k', message_headers JSONB, last_error TEXT, payload_json TEXT NOT NULL)`.execute(
      db,
    );
    await sql`CREATE TABLE ${d} (dead_id BIGSERIAL PRIMARY KEY, payload_json TEXT NOT NULL, last_error TEXT, failed_attempts INTEGER)`.execute(db);
  } else {
    await sql`CREATE TABLE ${j} (job_id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt_count INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, retry_after DATETIME(6) NULL, job_key VARCHAR(64) NOT NULL DEFAULT 'k', message_headers JSON NULL, last_error TEXT NULL, payload_json TEXT NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
    await sql`CREATE TABLE ${d} (dead_id BIGINT AUTO_INCREMENT PRIMARY KEY, payload_json TEXT NOT NULL, last_error TEXT NULL, failed_attempts INT NULL) ENGINE=InnoDB`.execute(db);
  }
}

function columnsOf() {
  return {
    job_id: field.id().generated(),
    attempt_count: field.attempt().generated(),
    retry_after: field.retryAfter(),
    job_key: field.data<string>(),
    message_headers: field.headers(),
    last_error: field.lastError(),
    payload_json: field.payload<Job>(),
  };
}
const leaseSpecOf = (table: string) => defineInbox({ table, columns: { ...columnsOf(), locked_until: field.lease() } });

/** The table in `form`; typed as the lease one, since the matrix runs one body for every form. */
function specOf(table: string, form: ClaimForm): ReturnType<typeof leaseSpecOf> {
  if (form === "lease") return leaseSpecOf(table);
  if (form === "advisory") return defineInbox({ table, columns: columnsOf(), advisoryLock: "{job_id}" }) as never;
  return defineInbox({ table, columns: columnsOf() }) as never;
}

function deadSpecOf(table: string) {
  return defineInbox({
    table,
    columns: { dead_id: field.id().generated(), payload_json: field.payload<Job>(), last_error: field.lastError(), failed_attempts: field.failedAttempts() },
  });
}

/**
 * A plugin that notes every result it is given of a statement it never saw built: a statement of
 * sqlinbox's own (compiled by the dialect) that ran through the app's plugins.
 */
class ForeignResults implements KyselyPlugin {
  readonly #built = new Set<string>();
  readonly foreign: string[] = [];
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.#built.add(args.queryId.queryId);
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (!this.#built.has(args.queryId.queryId)) this.foreign.push(JSON.stringify(args.result.rows[0] ?? null));
    return args.result;
  }
}

/** The app's Kysely: the test's own pool, seen through the plugins an application commonly installs (and the spy). */
function withPlugins(db: AnyKysely, spy: ForeignResults): AnyKysely {
  return db.withPlugin(new CamelCasePlugin()).withPlugin(new ParseJSONResultsPlugin()).withPlugin(spy);
}

function recordingLogger(errors: string[]): Logger {
  return {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (fields: LogFields, message: string) => {
      const err = fields["err"] as { message?: unknown } | undefined;
      errors.push(`${message}: ${String(fields["code"] ?? "")} ${String(err?.message ?? "")}`);
    },
  };
}

async function readRows(db: AnyKysely, table: string): Promise<Array<Record<string, unknown>>> {
  return (await sql<Record<string, unknown>>`SELECT * FROM ${sql.id(table)}`.execute(db)).rows;
}

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe.each(matrix)("a broker on a Kysely with CamelCasePlugin and ParseJSONResultsPlugin: $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  useEngineConnection(engine, (connected) => {
    ({ db } = connected);
  });

  test("publish (plain, many, { via } the app's transaction, headers), claim, lease extension, ack, retry, retryAfter and dead letter all work", async () => {
    const jobs = unique(`pl_${form.toLowerCase()}`);
    const dead = unique(`pl_dead_${form.toLowerCase()}`);
    await createTables(engine, db, jobs, dead);
    const spy = new ForeignResults();
    const appDb = withPlugins(db, spy);
    const errors: string[] = [];
    const seen: Array<{ n: number; attempt: number | undefined; headers: unknown; at: number }> = [];
    const spec = specOf(jobs, form);
    const queue = InboxQueue.of(spec, "jobs").pollInterval(50).workers(5).deadLetter(deadSpecOf(dead), { maxAttempts: 3 });
    const sub = subscriber(queue, async (job, ctx) => {
      const attempt = ctx.get(keys.attempt);
      seen.push({ n: job.n, attempt, headers: ctx.get(keys.headers), at: Date.now() });
      if (job.n === 1 && attempt === 1) return HandlerOutcome.retryAfter(400);
      if (job.n === 2) return HandlerOutcome.deadLetter("no such customer");
      if (job.n === 3 && attempt === 1) throw new Error("boom");
      // Held past its 1 s lease: the keeper's extensions keep it.
      if (job.n === 4) await new Promise((resolve) => setTimeout(resolve, 2500));
      return HandlerOutcome.ack();
    });
    const broker = SqlBroker.fromKysely(appDb).lease(1000).route(spec, "jobs");
    const app = await new App({ name: "plugins", version: "0", logger: recordingLogger(errors) }).withBroker(broker, (b) => b.include(sub)).start();
    try {
      await broker.publish("jobs", { n: 0 }, { headers: { traceparent } });
      const ids = await broker.publishMany("jobs", [{ n: 1 }, { n: 2 }]);
      expect(ids).toHaveLength(2);
      for (const { id, created } of ids) {
        expect(Number(id)).toBeGreaterThan(0);
        expect(created).toBe(true);
      }
      await appDb.transaction().execute(async (trx) => {
        await broker.publish("jobs", { n: 3 }, { via: trx });
        const [viaId] = await broker.publishMany("jobs", [{ n: 4 }], { via: trx });
        expect(Number(viaId?.id)).toBeGreaterThan(0);
      });
      await until(async () => (await readRows(db, jobs)).length === 0 && (await readRows(db, dead)).length === 1, 20_000, "every row settled");
      await until(() => seen.length >= 7, 5000, "every delivery recorded");
    } finally {
      await app.stop();
    }
    try {
      expect(errors.filter((e) => !e.includes("boom"))).toEqual([]);
      expect(spy.foreign).toEqual([]);
      const byN = (n: number) => seen.filter((s) => s.n === n).map((s) => s.attempt);
      expect([0, 1, 2, 3, 4].map(byN)).toEqual([[1], [1, 2], [1], [1, 2], [1]]);
      expect(seen.find((s) => s.n === 0)?.headers).toEqual({ traceparent });
      const [first, second] = seen.filter((s) => s.n === 1);
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(300);
      const moved = await readRows(db, dead);
      expect(moved.map((r) => ({ payload: r["payload_json"], lastError: r["last_error"], failedAttempts: Number(r["failed_attempts"]) }))).toEqual([
        { payload: '{"n":2}', lastError: "no such customer", failedAttempts: 1 },
      ]);
    } finally {
      for (const t of [jobs, dead]) await sql`DROP TABLE IF EXISTS ${sql.id(t)}`.execute(db);
    }
  }, 30_000);

  test("a transactional handler's ctx.tx keeps the app's CamelCasePlugin: camelCase keys write snake_case columns, read back camelCase, commit with the ack and roll back with a retry", async () => {
    const jobs = unique(`pltx_${form.toLowerCase()}`);
    const dead = unique(`pltx_dead_${form.toLowerCase()}`);
    // Lower case: the app's CamelCasePlugin would snake_case a table name in camelCase (rowLock → row_lock).
    const effects = unique(`pltx_fx_${form.toLowerCase()}`);
    await createTables(engine, db, jobs, dead);
    await sql`DROP TABLE IF EXISTS ${sql.id(effects)}`.execute(db);
    await sql`CREATE TABLE ${sql.id(effects)} (job_number INT NOT NULL, seen_attempt INT NOT NULL)`.execute(db);
    const spy = new ForeignResults();
    const appDb = withPlugins(db, spy) as Kysely<Record<string, { jobNumber: number; seenAttempt: number }>>;
    const errors: string[] = [];
    const readBack: unknown[] = [];
    const spec = specOf(jobs, form);
    const queue = InboxQueue.of(spec, "jobs").pollInterval(50).transactional<Record<string, { jobNumber: number; seenAttempt: number }>>();
    const sub = subscriber(queue, async (job, ctx) => {
      const attempt = ctx.get(keys.attempt) ?? 0;
      await ctx.tx.insertInto(effects).values({ jobNumber: job.n, seenAttempt: attempt }).execute();
      readBack.push(...(await ctx.tx.selectFrom(effects).selectAll().where("jobNumber", "=", job.n).execute()));
      return attempt === 1 ? HandlerOutcome.retry() : HandlerOutcome.ack();
    });
    const broker = SqlBroker.fromKysely(appDb).lease(5000).route(spec, "jobs");
    const app = await new App({ name: "plugins-tx", version: "0", logger: recordingLogger(errors) }).withBroker(broker, (b) => b.include(sub)).start();
    try {
      await broker.publish("jobs", { n: 7 });
      await until(async () => (await readRows(db, jobs)).length === 0, 15_000, "the row acked");
    } finally {
      await app.stop();
    }
    try {
      expect(errors).toEqual([]);
      // The ack ran in the handler's transaction, yet without the app's plugins.
      expect(spy.foreign).toEqual([]);
      // The retry rolled the first attempt's write back: the second attempt read only its own.
      expect(readBack).toEqual([
        { jobNumber: 7, seenAttempt: 1 },
        { jobNumber: 7, seenAttempt: 2 },
      ]);
      expect((await readRows(db, effects)).map((r) => ({ job: Number(r["job_number"]), attempt: Number(r["seen_attempt"]) }))).toEqual([{ job: 7, attempt: 2 }]);
    } finally {
      for (const t of [jobs, dead, effects]) await sql`DROP TABLE IF EXISTS ${sql.id(t)}`.execute(db);
    }
  }, 30_000);
});
