/**
 * `snooze(ms)` on every engine × form: the row comes back after the delay with its attempt not
 * spent (the claim's count is given back in the settlement's own fenced statement), so twenty
 * snoozes leave the attempt where it was, and the row still goes to the dead letter at
 * `maxAttempts` once it fails for real. A lease table without a retryAfter column stores the
 * delay in its lease column.
 */
import type { ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "../support/fixtures.js";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, silentLogger, subscriber, type LogFields, type Logger } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { createTables, deadJobsOf, dropTables, groupedJobsOf, insertGrouped, readDead, retryJobsOf } from "../support/dead-letter-tables.js";

const SNOOZES = 20;
const MAX_ATTEMPTS = 3;

describe.each(matrix)("snooze on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  /** One row snoozed `SNOOZES` times, then failing for real until the dead letter takes it: the attempts each delivery saw, and the column's value at each. */
  async function snoozeThenFail(withRetryAfter: boolean) {
    const jobs = unique(`snz_${form}`);
    const dead = unique(`snz_dead_${form}`);
    await createTables(engine, db, jobs, dead, { retryAfter: withRetryAfter });
    const spec = withRetryAfter ? retryJobsOf(jobs, form) : (groupedJobsOf(jobs, "lease" as ClaimForm) as unknown as ReturnType<typeof retryJobsOf>);
    const seen: Array<number | undefined> = [];
    const debug: Array<{ fields: LogFields; message: string }> = [];
    const logger: Logger = { ...silentLogger, debug: (fields, message) => void debug.push({ fields, message }) };
    const queue = InboxQueue.of(spec, "jobs")
      .pollInterval(50)
      .deadLetter(deadJobsOf(dead), { maxAttempts: MAX_ATTEMPTS })
      .onError(() => HandlerOutcome.retry());
    const sub = subscriber(queue, async (_job, ctx) => {
      seen.push(ctx.get(keys.attempt));
      if (seen.length <= SNOOZES) return HandlerOutcome.snooze(1);
      throw new Error("boom");
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
      await until(async () => (await readDead(db, dead)).length === 1, 30_000, "the row in the dead letter");
      return { seen, moved: await readDead(db, dead), debug };
    } finally {
      await app.stop();
      await dropTables(db, jobs, dead);
    }
  }

  test(`${SNOOZES} snoozes leave the attempt unchanged; real failures still dead-letter it at maxAttempts`, async () => {
    const { seen, moved, debug } = await snoozeThenFail(true);
    expect(seen).toEqual([...Array.from({ length: SNOOZES + 1 }, () => 1), 2, 3]);
    expect(moved.map((m) => [m.lastError, m.failedAttempts])).toEqual([["Error: boom", MAX_ATTEMPTS]]);
    const snoozed = debug.filter((d) => d.message.startsWith("snoozed"));
    expect(snoozed).toHaveLength(SNOOZES);
    expect(snoozed[0]?.fields).toMatchObject({ subscription: "jobs", attempt: 1, snoozeMs: 1 });
  }, 40_000);

  test.runIf(form === "lease")(
    "a lease table without a retryAfter column snoozes through its lease column, attempt unchanged",
    async () => {
      const { seen, moved } = await snoozeThenFail(false);
      expect(seen).toEqual([...Array.from({ length: SNOOZES + 1 }, () => 1), 2, 3]);
      expect(moved).toHaveLength(1);
    },
    40_000,
  );

  test("a snooze hides the row for its delay, and the attempt column reads as before the claim", async () => {
    const jobs = unique(`snz_${form}`);
    const dead = unique(`snz_dead_${form}`);
    await createTables(engine, db, jobs, dead, { retryAfter: true });
    const spec = retryJobsOf(jobs, form);
    let calls = 0;
    const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(50), async () => {
      calls += 1;
      return calls === 1 ? HandlerOutcome.snooze(60_000) : HandlerOutcome.ack();
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, "jobs"), (b) => b.include(sub))
      .start();
    try {
      await insertGrouped(db, jobs, 1);
      // The column starts at 1 (the table's default): a claim counts it up, the snooze gives that back.
      const before = 1;
      await until(async () => calls === 1, 10_000, "the first delivery");
      await until(
        async () => {
          const row = (await sql<{ attempt: unknown; retry_after: unknown }>`SELECT attempt, retry_after FROM ${sql.id(jobs)}`.execute(db)).rows[0];
          return row !== undefined && row.retry_after !== null && Number(row.attempt) === before;
        },
        10_000,
        "the row snoozed with its attempt given back",
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(calls).toBe(1);
    } finally {
      await app.stop();
      await dropTables(db, jobs, dead);
    }
  }, 30_000);
});
