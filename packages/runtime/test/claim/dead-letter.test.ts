/**
 * Dead letters on every form × engine, against real servers: a throw past `maxAttempts` and a
 * `deadLetter()` outcome move the row to another table (insert and delete in one transaction,
 * recording the last error and the attempts) or to another group of the same table; in the lease
 * form a move whose lease was lost changes nothing.
 */
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "../support/fixtures.js";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, silentLogger, subscriber, type LogFields, type Logger } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { engines, unique } from "../support/engines.js";
import { createTables, deadJobsOf, dropTables, groupedJobsOf, insertGrouped, readDead, readSource } from "../support/dead-letter-tables.js";

describe.each(matrix)("dead letters on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  async function run(
    queueOf: (q: InboxQueue<ReturnType<typeof groupedJobsOf>>, dead: ReturnType<typeof deadJobsOf>) => InboxQueue<ReturnType<typeof groupedJobsOf>>,
    handle: (n: number, attempt: number | undefined) => HandlerOutcome | Promise<HandlerOutcome>,
    done: (jobs: string, dead: string) => Promise<boolean>,
    options: { rows?: number; logger?: Logger } = {},
  ) {
    const jobs = unique(`dl_${form}`);
    const dead = unique(`dl_dead_${form}`);
    await createTables(engine, db, jobs, dead);
    const spec = groupedJobsOf(jobs, form);
    const attempts: Array<number | undefined> = [];
    const sub = subscriber(queueOf(InboxQueue.of(spec, "jobs").pollInterval(50), deadJobsOf(dead)), async (job, ctx) => {
      attempts.push(ctx.get(keys.attempt));
      return handle(job.n, ctx.get(keys.attempt));
    });
    const app = await new App({ name: "t", version: "0", logger: options.logger ?? silentLogger })
      .withBroker(
        SqlBroker.fromUrl(url, { pool: { max: 3 } })
          .lease(2000)
          .route(spec, "jobs"),
        (b) => b.include(sub),
      )
      .start();
    try {
      await insertGrouped(db, jobs, options.rows ?? 1);
      await until(() => done(jobs, dead), 15_000, "the dead letter");
      return { source: await readSource(db, jobs), moved: await readDead(db, dead), attempts };
    } finally {
      await app.stop();
      await dropTables(db, jobs, dead);
    }
  }

  test("a throw at maxAttempts moves the row to the dead-letter table: payload, last error and attempts recorded, the source row gone", async () => {
    const { source, moved, attempts } = await run(
      (q, dead) => q.deadLetter(dead, { maxAttempts: 2 }),
      () => {
        throw new Error("boom");
      },
      async (_jobs, dead) => (await readDead(db, dead)).length === 1,
    );
    expect(attempts).toEqual([1, 2]);
    expect(source).toEqual([]);
    expect(moved).toEqual([{ payload: '{"n":0}', lastError: "Error: boom", failedAttempts: 2 }]);
  });

  test("deadLetter(reason) moves at once, the reason as the last error", async () => {
    const { source, moved, attempts } = await run(
      (q, dead) => q.deadLetter(dead),
      (n) => (n === 1 ? HandlerOutcome.deadLetter("no such customer") : HandlerOutcome.ack()),
      async (jobs, dead) => (await readDead(db, dead)).length === 1 && (await readSource(db, jobs)).length === 0,
      { rows: 3 },
    );
    expect(attempts).toEqual([1, 1, 1]);
    expect(source).toEqual([]);
    expect(moved).toEqual([{ payload: '{"n":1}', lastError: "no such customer", failedAttempts: 1 }]);
  });

  test("to a group of the same table: the row stays, in the dead group, with its last error; the subscription claims it no more", async () => {
    const { source, attempts } = await run(
      (q) => q.deadLetter({ group: "dead" }, { maxAttempts: 1 }),
      () => {
        throw new Error("boom");
      },
      async (jobs) => (await readSource(db, jobs)).some((r) => r.grp === "dead"),
    );
    expect(attempts).toEqual([1]);
    expect(source).toMatchObject([{ grp: "dead", lastError: "Error: boom" }]);
  });

  if (form === "lease") {
    test("a move that races a lost lease changes nothing: LeaseLost, nothing inserted, the row still with its new holder", async () => {
      const errors: Array<{ message: string; code: unknown }> = [];
      const logger: Logger = { ...silentLogger, error: (fields: LogFields, message: string) => void errors.push({ message, code: fields["code"] }) };
      const jobs = unique("dl_race");
      const dead = unique("dl_race_dead");
      await createTables(engine, db, jobs, dead);
      const spec = groupedJobsOf(jobs, "lease");
      let moved = false;
      const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(50).deadLetter(deadJobsOf(dead)), async (_job, ctx) => {
        if (moved) return HandlerOutcome.ack();
        moved = true;
        // Another claim takes the row meanwhile: its lease is now another token, far in the future.
        await sql`UPDATE ${sql.id(jobs)} SET locked_until = ${engine.time(new Date(Date.now() + 3_600_000))} WHERE id = ${ctx.id}`.execute(db);
        return HandlerOutcome.deadLetter("too late");
      });
      const app = await new App({ name: "t", version: "0", logger })
        .withBroker(
          SqlBroker.fromUrl(url, { pool: { max: 3 } })
            .lease(2000)
            .route(spec, "jobs"),
          (b) => b.include(sub),
        )
        .start();
      try {
        await insertGrouped(db, jobs, 1);
        await until(() => errors.some((e) => e.message === "settlement failed"), 10_000, "the failed move");
        expect(errors.find((e) => e.message === "settlement failed")?.code).toBe("LeaseLost");
        expect(await readDead(db, dead)).toEqual([]);
        expect(await readSource(db, jobs)).toMatchObject([{ grp: "jobs", lastError: null }]);
      } finally {
        await app.stop();
        await dropTables(db, jobs, dead);
      }
    });
  }
});

test("the matrix covers every engine", () => {
  expect(new Set(matrix.map((m) => m.engine.name))).toEqual(new Set(engines.map((e) => e.name)));
});
