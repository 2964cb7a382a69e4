/**
 * `app.cron(…)` on the paused clock of `TestApp`, on every engine: two apps (two pools, as two
 * processes would have) on one clock publish each tick once, with its key; a subscriber handles each;
 * `catchUp` publishes the missed ticks at start; after stop no tick is published.
 */
import { describe, expect, test } from "vitest";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, subscriber } from "../../src/index.js";
import { silentLogger } from "../../src/logger.js";
import { PausedClock, TestApp } from "../../src/testing/index.js";
import { everySecondKeys, readTicks, tickSpec } from "../support/cron-tables.js";
import { engines, unique } from "../support/engines.js";

const START = new Date("2026-06-01T12:00:00.500Z");
const at = (s: number): Date => new Date(Date.UTC(2026, 5, 1, 12, 0, s));

describe.each(engines)("app.cron on a paused clock on $name", (engine) => {
  /** An app that publishes `* * * * * *` to route "ticks" and handles each tick (ack marks processed_at). */
  function tickApp(url: string, table: string, options: { catchUp?: number; handled?: string[] } = {}) {
    const spec = tickSpec(table);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "ticks");
    const handle = subscriber(InboxQueue.of(spec, "ticks"), async (job) => {
      options.handled?.push(job.tick);
      return HandlerOutcome.ack();
    });
    return new App({ name: "cron-test", version: "0", logger: silentLogger })
      .withBroker(broker, (b) => b.include(handle))
      .cron("ticks", "* * * * * *", (tick) => ({ tick: tick.at.toISOString() }), options.catchUp === undefined ? {} : { catchUp: options.catchUp });
  }

  test("two apps on one clock: each tick published once, with its key, and handled once; after stop, none", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("cron_paused");
    const clock = new PausedClock(START);
    const handled: string[] = [];
    try {
      await createInboxTable(db, tickSpec(table));
      const a = await TestApp.start(tickApp(url, table, { handled }), { clock });
      const b = await TestApp.start(tickApp(url, table, { handled }), { clock });
      // Each advance fires both apps' timers; both settle before the next second.
      for (let i = 0; i < 5; i++) {
        await a.advance(1000);
        await b.settle();
        await a.settle();
      }
      await a.stop();
      await b.stop();
      const rows = await readTicks(db, table);
      const keys = everySecondKeys("ticks", at(1), at(5));
      expect(rows.map((r) => r.key)).toEqual(keys);
      expect(rows.map((r) => r.tick)).toEqual([1, 2, 3, 4, 5].map((s) => at(s).toISOString()));
      expect([...handled].sort()).toEqual(rows.map((r) => r.tick));
      // Stopped: no timer of either app waits on the clock any more (the schedule's was cancelled).
      expect(clock.pending).toBe(0);
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 60_000);

  test("catchUp: 3 publishes the three most recent ticks at start, then goes on from there; a later start publishes the handled ones no more; without catchUp, none", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("cron_catchup");
    try {
      await createInboxTable(db, tickSpec(table));
      const first = await TestApp.start(tickApp(url, table, { catchUp: 3 }), { clock: new PausedClock(START) });
      await first.settle();
      expect((await readTicks(db, table)).map((r) => r.key)).toEqual(everySecondKeys("ticks", at(-2), at(0)));
      await first.advance(2000);
      await first.stop();
      const handled = await readTicks(db, table);
      expect(handled.map((r) => r.key)).toEqual(everySecondKeys("ticks", at(-2), at(2)));
      expect(handled.every((r) => r.processed)).toBe(true);
      // A start at 12:00:05.5 with catchUp 4: ticks 2 to 5; 2 was handled and its processed row keeps the key, so 3, 4 and 5 are new.
      const again = await TestApp.start(tickApp(url, table, { catchUp: 4 }), { clock: new PausedClock(new Date(START.getTime() + 5000)) });
      await again.settle();
      await again.stop();
      expect((await readTicks(db, table)).map((r) => r.key)).toEqual(everySecondKeys("ticks", at(-2), at(5)));
      // Without catchUp, a start publishes none of the ticks it missed (6 to 10 here), only those after it.
      const plain = await TestApp.start(tickApp(url, table), { clock: new PausedClock(new Date(START.getTime() + 10_000)) });
      await plain.advance(1000);
      await plain.stop();
      expect((await readTicks(db, table)).map((r) => r.key)).toEqual([...everySecondKeys("ticks", at(-2), at(5)), ...everySecondKeys("ticks", at(11), at(11))]);
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 60_000);

  test("a tick whose publish fails is published again a second later on the app's clock, and the next tick still on time", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("cron_retry");
    try {
      await createInboxTable(db, tickSpec(table));
      const broker = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(tickSpec(table), "ticks");
      const app = new App({ name: "cron-test", version: "0", logger: silentLogger })
        .withBroker(broker, (b) => b)
        .cron("ticks", "* * * * * *", (tick) => ({ tick: tick.at.toISOString() }));
      const t = await TestApp.start(app, { clock: new PausedClock(START) });
      await t.advance(1000);
      // The table is gone when tick 2 comes: its publish fails, and is tried again 1 s later, when the table is back.
      await engine.dropTable(db, table);
      await t.advance(1000);
      const failed = t.logs.find("cron tick publish failed");
      expect(failed.map((r) => [r.level, r.fields["key"], r.fields["retryInMs"]])).toEqual([["warn", `cron:ticks:${at(2).toISOString()}`, 1000]]);
      await createInboxTable(db, tickSpec(table));
      await t.advance(1000);
      await t.stop();
      expect((await readTicks(db, table)).map((r) => r.key)).toEqual(everySecondKeys("ticks", at(2), at(3)));
      expect(t.logs.find("cron tick not published")).toEqual([]);
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 60_000);
});
