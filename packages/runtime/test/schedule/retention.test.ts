/**
 * Retention (`InboxQueue.retain`) live, on every engine: three apps prune one table with a 1 s
 * window while they drain it, and every processed row is gone within three intervals of leaving the
 * window (a run starts at most an interval after the last ended; on a loaded 2-core machine a run and
 * the timer behind it slipped 70–140 ms past two) and none goes before (both judged on the database's clock, read by the test); dead letters
 * are pruned from the dead-letter table by the time the move stamped, on every form.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, seconds, silentLogger, subscriber } from "../../src/index.js";
import { pruneInterval } from "../../src/schedule/pruner.js";
import { matrix, until } from "../support/claim-forms.js";
import { engines, unique, type TestEngine } from "../support/engines.js";
import { sleep } from "../support/sleep.js";

const WINDOW_MS = seconds(1);
const INTERVAL_MS = pruneInterval(WINDOW_MS);
/** The app's database clock is the host's plus a measured offset: a few ms either way. */
const CLOCK_TOLERANCE_MS = 50;

function doneSpec(table: string) {
  return defineInbox({
    table,
    columns: {
      id: field.id().generated(),
      attempt: field.attempt().generated(),
      locked_until: field.lease(),
      processed_at: field.processedAt(),
      payload: field.payload<{ n: number }>(),
    },
  });
}

/** The database's time now, in ms (its own clock, as the statements the runtime measures against read it). */
async function databaseNow(engine: TestEngine, db: AnyKysely): Promise<number> {
  const { rows } = await db.executeQuery(dialectFor(engine.engine).schema.serverTime());
  return Number(rows[0]?.now_ms);
}

/** Every processed row: its id and when it was handled (ms). */
async function processed(engine: TestEngine, db: AnyKysely, table: string, column = "processed_at"): Promise<Map<number, number>> {
  const at = sql.id(column);
  const { rows } = await sql<{ id: unknown; at: unknown }>`SELECT id, ${at} AS at FROM ${sql.id(table)} WHERE ${at} IS NOT NULL`.execute(db);
  const time = dialectFor(engine.engine).time;
  return new Map(rows.map((r) => [Number(r.id), (time.decode(r.at) as Date).getTime()]));
}

async function countRows(db: AnyKysely, table: string): Promise<number> {
  const { rows } = await sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(db);
  return Number(rows[0]?.n);
}

describe.each(engines)("retention on $name", (engine) => {
  test("three apps prune one table with a 1 s window while they drain it: every processed row gone within three intervals of leaving the window, none before", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("retain_done");
    const spec = doneSpec(table);
    const apps: Array<{ stop(): Promise<unknown> }> = [];
    try {
      await createInboxTable(db, spec);
      const handled = new Set<number>();
      const appOf = () => {
        const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "jobs");
        const sub = subscriber(InboxQueue.of(spec, "jobs").workers(2).batch(10).pollInterval(50).retain({ done: WINDOW_MS }), async (job) => {
          handled.add(job.n);
          // A little work per row, so the drain lasts a few windows while the pruners run.
          await sleep(2);
          return HandlerOutcome.ack();
        });
        return new App({ name: "retain", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub));
      };
      const publisher = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(spec, "jobs");
      const total = 1200;
      for (let i = 0; i < 3; i++) apps.push(await appOf().start());
      // In waves, so rows are handled (and leave the window) all along the run.
      const waves = 6;
      let seen = new Map<number, number>();
      let checks = 0;
      const late: string[] = [];
      const early: string[] = [];
      for (let wave = 0; wave < waves; wave++) {
        await publisher.publishMany(
          "jobs",
          Array.from({ length: total / waves }, (_, i) => ({ n: wave * (total / waves) + i })),
        );
        const waveEnd = Date.now() + 700;
        while (Date.now() < waveEnd) {
          const before = await databaseNow(engine, db);
          const rows = await processed(engine, db, table);
          const after = await databaseNow(engine, db);
          // Late: a row handled more than a window and three intervals before this read began is still there
          // (a pruner that ran once per window, not per interval, would leave rows two windows old).
          for (const [id, at] of rows) if (at < before - WINDOW_MS - 3 * INTERVAL_MS - CLOCK_TOLERANCE_MS) late.push(`${id} handled ${before - at} ms before`);
          // Early: a row seen before is gone, though it was handled less than a window before this read ended.
          for (const [id, at] of seen) if (!rows.has(id) && at > after - WINDOW_MS + CLOCK_TOLERANCE_MS) early.push(`${id} gone ${after - at} ms after it was handled`);
          seen = rows;
          checks++;
          await sleep(60);
        }
      }
      await until(() => handled.size === total, 60_000, "every row handled");
      // Once the last row left the window and three intervals passed, the table is empty.
      await until(async () => (await countRows(db, table)) === 0, WINDOW_MS + 3 * INTERVAL_MS + 5_000, "every row pruned");
      expect(late).toEqual([]);
      expect(early).toEqual([]);
      expect(checks).toBeGreaterThan(10);
      await publisher.close();
    } finally {
      for (const app of apps) await app.stop();
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 120_000);

  test("without a window, handled rows stay", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("retain_none");
    const spec = doneSpec(table);
    try {
      await createInboxTable(db, spec);
      const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(50), async () => HandlerOutcome.ack());
      const app = await new App({ name: "retain", version: "0", logger: silentLogger }).withBroker(SqlBroker.fromUrl(url).route(spec, "jobs"), (b) => b.include(sub)).start();
      const publisher = SqlBroker.fromUrl(url).route(spec, "jobs");
      await publisher.publishMany("jobs", [{ n: 1 }, { n: 2 }]);
      await until(async () => (await processed(engine, db, table)).size === 2, 10_000, "both rows handled");
      await sleep(WINDOW_MS + 2 * INTERVAL_MS);
      expect(await countRows(db, table)).toBe(2);
      await app.stop();
      await publisher.close();
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 30_000);
});

function deadSpecs(table: string, dead: string, form: ClaimForm) {
  const columns = { id: field.id().generated(), attempt: field.attempt().generated(), payload: field.payload<{ n: number }>() };
  const source =
    form === "lease"
      ? defineInbox({ table, columns: { ...columns, locked_until: field.lease() } })
      : form === "advisory"
        ? defineInbox({ table, columns, advisoryLock: "{id}" })
        : defineInbox({ table, columns });
  const deadLetters = defineInbox({
    table: dead,
    columns: { id: field.id().generated(), payload: field.payload<{ n: number }>(), last_error: field.lastError(), dead_at: field.processedAt() },
  });
  return { source, deadLetters };
}

describe.each(matrix)("dead-letter retention on $engine.name × $form", ({ engine, form }) => {
  test("a move stamps the dead-letter table's processedAt with the database's time; the rows go once older than deadLettered", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`retain_src_${form}`);
    const dead = unique(`retain_dead_${form}`);
    const { source, deadLetters } = deadSpecs(table, dead, form);
    try {
      await createInboxTable(db, source);
      await createInboxTable(db, deadLetters);
      const queue = InboxQueue.of(source, "jobs").pollInterval(50).deadLetter(deadLetters).retain({ deadLettered: WINDOW_MS });
      const sub = subscriber(queue, async () => HandlerOutcome.deadLetter("no"));
      const app = await new App({ name: "retain", version: "0", logger: silentLogger }).withBroker(SqlBroker.fromUrl(url).route(source, "jobs"), (b) => b.include(sub)).start();
      try {
        await app.publish("jobs", { n: 1 });
        await until(async () => (await processed(engine, db, dead, "dead_at")).size === 1, 10_000, "the dead letter moved");
        const stamped = [...(await processed(engine, db, dead, "dead_at")).values()][0] as number;
        expect(Math.abs((await databaseNow(engine, db)) - stamped)).toBeLessThan(WINDOW_MS);
        // Still there within the window; gone within two intervals after it.
        expect(await countRows(db, dead)).toBe(1);
        await until(async () => (await countRows(db, dead)) === 0, WINDOW_MS + 2 * INTERVAL_MS + 2_000, "the dead letter pruned");
        expect((await databaseNow(engine, db)) - stamped).toBeGreaterThanOrEqual(WINDOW_MS - CLOCK_TOLERANCE_MS);
      } finally {
        await app.stop();
      }
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await engine.dropTable(db, dead).catch(() => {});
      await db.destroy();
    }
  }, 30_000);
});
