/**
 * Transactional handlers on every engine × form: an ack commits the handler's write with the
 * settlement; a retry or a throw rolls the write back; in the lease form a lease lost
 * mid-handler commits nothing (`LeaseLost`).
 */
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "../support/fixtures.js";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, subscriber, type LogFields, type Logger } from "../../src/index.js";
import { createJobsTable, insertJobs, jobsSpecOf, matrix, readJobs, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";

/** A side table the handler writes to through `ctx.tx`. */
async function createEffects(db: AnyKysely, table: string): Promise<void> {
  await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db);
  await sql`CREATE TABLE ${sql.id(table)} (n INT NOT NULL, attempt INT NOT NULL)`.execute(db);
}

async function readEffects(db: AnyKysely, table: string): Promise<Array<{ n: number; attempt: number }>> {
  const { rows } = await sql<{ n: unknown; attempt: unknown }>`SELECT n, attempt FROM ${sql.id(table)} ORDER BY n, attempt`.execute(db);
  return rows.map((r) => ({ n: Number(r.n), attempt: Number(r.attempt) }));
}

function recordingLogger(errors: Array<{ message: string; code: unknown }>): Logger {
  return {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (fields: LogFields, message: string) => errors.push({ message, code: fields["code"] ?? (fields["err"] as { code?: unknown } | undefined)?.code }),
  };
}

describe.each(matrix)("transactional handlers on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  async function run(
    table: string,
    handle: (job: { n: number }, attempt: number, write: () => Promise<void>) => Promise<HandlerOutcome | undefined>,
    done: () => Promise<boolean>,
    errors: Array<{ message: string; code: unknown }> = [],
  ) {
    const spec = jobsSpecOf(table, form);
    const effects = `${table}_fx`;
    const queue = InboxQueue.of(spec, "jobs").pollInterval(50).transactional();
    const sub = subscriber(queue, async (job, ctx) => {
      const attempt = ctx.get(keys.attempt);
      const write = async () => void (await sql`INSERT INTO ${sql.id(effects)} (n, attempt) VALUES (${job.n}, ${attempt})`.execute(ctx.tx));
      return handle(job, attempt, write);
    });
    const broker = SqlBroker.fromUrl(url, { pool: { max: 3 } }).lease(5000);
    const app = await new App({ name: "tx", version: "0", logger: recordingLogger(errors) }).withBroker(broker.route(spec, "jobs"), (b) => b.include(sub)).start();
    try {
      await insertJobs(db, table, 1);
      await until(done, 10_000, "the deliveries");
    } finally {
      await app.stop();
    }
  }

  test("an ack commits the row's settlement and the handler's write together", async () => {
    const table = unique(`txack_${form}`);
    await createJobsTable(engine, db, table);
    await createEffects(db, `${table}_fx`);
    try {
      await run(
        table,
        async (_job, _attempt, write) => {
          await write();
          return HandlerOutcome.ack();
        },
        async () => (await readJobs(db, table)).length === 0,
      );
      expect(await readEffects(db, `${table}_fx`)).toEqual([{ n: 0, attempt: 1 }]);
    } finally {
      await engine.dropTable(db, table);
      await engine.dropTable(db, `${table}_fx`);
    }
  });

  test("a retry and a throw roll the handler's write back; the next attempt's ack commits it", async () => {
    const table = unique(`txretry_${form}`);
    await createJobsTable(engine, db, table);
    await createEffects(db, `${table}_fx`);
    const attempts: number[] = [];
    try {
      await run(
        table,
        async (_job, attempt, write) => {
          attempts.push(attempt);
          await write();
          if (attempt === 1) return HandlerOutcome.retry();
          if (attempt === 2) throw new Error("the handler failed after its write");
          return HandlerOutcome.ack();
        },
        async () => (await readJobs(db, table)).length === 0,
      );
      expect(attempts).toEqual([1, 2, 3]);
      expect(await readEffects(db, `${table}_fx`)).toEqual([{ n: 0, attempt: 3 }]);
    } finally {
      await engine.dropTable(db, table);
      await engine.dropTable(db, `${table}_fx`);
    }
  });

  test.runIf(form === "lease")("a lease lost mid-handler commits nothing: LeaseLost, the write rolled back", async () => {
    const table = unique("txlost");
    await createJobsTable(engine, db, table);
    await createEffects(db, `${table}_fx`);
    const errors: Array<{ message: string; code: unknown }> = [];
    const stolen = engine.time(new Date(Date.now() + 3_600_000));
    try {
      await run(
        table,
        async (job, _attempt, write) => {
          // Another claim took the row (its lease token is now another deadline).
          await sql`UPDATE ${sql.id(table)} SET locked_until = ${stolen} WHERE ${sql.ref("payload")} IS NOT NULL`.execute(db);
          await write();
          void job;
          return HandlerOutcome.ack();
        },
        async () => errors.some((e) => e.code === "LeaseLost"),
        errors,
      );
      expect(await readEffects(db, `${table}_fx`)).toEqual([]);
      expect(await readJobs(db, table)).toHaveLength(1);
    } finally {
      await engine.dropTable(db, table);
      await engine.dropTable(db, `${table}_fx`);
    }
  });
});
