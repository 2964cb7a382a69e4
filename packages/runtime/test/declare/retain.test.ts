/**
 * `InboxQueue.retain` where it is declared and where the app starts (SQLite: nothing here depends on
 * the engine): each window a positive duration, `done` on a table that keeps handled rows,
 * `deadLettered` into a dead-letter table with a time column (in either order of declaration, the
 * dead letter's absence refused at start); a table that keeps every handled row logs one warning, and a
 * cron whose catch-up reaches further back than the window logs which window it needs.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { describe, expect, test } from "vitest";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, days, hours, minutes, seconds, subscriber } from "../../src/index.js";
import { MemoryLogger } from "../../src/testing/index.js";
import { engineNamed } from "../support/engines.js";

interface Job {
  readonly n: number;
}

const keeping = (table: string) =>
  defineInbox({
    table,
    columns: {
      id: field.id().generated(),
      attempt: field.attempt().generated(),
      locked_until: field.lease(),
      processed_at: field.processedAt(),
      job_key: field.key(),
      grp: field.group(),
      payload: field.payload<Job>(),
    },
  });
const deleting = defineInbox({ table: "deleting", columns: { id: field.id().generated(), locked_until: field.lease(), payload: field.payload<Job>() } });
const deadWithTime = defineInbox({ table: "dead", columns: { id: field.id().generated(), payload: field.payload<Job>(), dead_at: field.processedAt() } });
const deadWithoutTime = defineInbox({ table: "dead_untimed", columns: { id: field.id().generated(), payload: field.payload<Job>() } });

describe("retain where the queue is declared", () => {
  test("hours and days are durations in ms", () => {
    expect([seconds(1), minutes(1), hours(1), days(1)]).toEqual([1000, 60_000, 3_600_000, 86_400_000]);
  });

  test("the windows are kept on the queue's options", () => {
    const queue = InboxQueue.of(keeping("jobs"), "a")
      .deadLetter(deadWithTime)
      .retain({ done: hours(24), deadLettered: days(30) });
    expect(queue.options.retain).toEqual({ done: hours(24), deadLettered: days(30) });
  });

  test("a window is a positive duration", () => {
    expect(() => InboxQueue.of(keeping("jobs"), "a").retain({ done: 0 })).toThrow("retain's done must be a window above 0 ms, got 0");
    expect(() => InboxQueue.of(keeping("jobs"), "a").retain({ done: Number.NaN })).toThrow("retain's done must be a window above 0 ms");
  });

  test("done on a table whose ack deletes the row is refused (a plain call past the type rule)", () => {
    expect(() => InboxQueue.of(deleting, "a").retain({ done: hours(1) } as never)).toThrow("retain({ done }) needs a processedAt column");
  });

  test("deadLettered into a table without a time column, or into a group, is refused, whichever is declared first", () => {
    expect(() =>
      InboxQueue.of(keeping("jobs"), "a")
        .deadLetter(deadWithoutTime)
        .retain({ deadLettered: days(1) }),
    ).toThrow('needs a processedAt column on the dead-letter table "dead_untimed"');
    expect(() =>
      InboxQueue.of(keeping("jobs"), "a")
        .retain({ deadLettered: days(1) })
        .deadLetter(deadWithoutTime),
    ).toThrow('needs a processedAt column on the dead-letter table "dead_untimed"');
    expect(() =>
      InboxQueue.of(keeping("jobs"), "a")
        .deadLetter({ group: "dead" })
        .retain({ deadLettered: days(1) }),
    ).toThrow("retain({ deadLettered }) needs a dead-letter table");
  });
});

describe("retain where the app starts", () => {
  const sqlite = engineNamed("sqlite");

  async function started(table: string, queue: (q: InboxQueue<ReturnType<typeof keeping>>) => InboxQueue<ReturnType<typeof keeping>>, cron?: { catchUp: number }) {
    const url = sqlite.url();
    const db = await sqlite.connect(url);
    const spec = keeping(table);
    await createInboxTable(db, spec);
    await db.destroy();
    const logger = new MemoryLogger();
    const sub = subscriber(queue(InboxQueue.of(spec, "jobs")), async () => HandlerOutcome.ack());
    let app = new App({ name: "retain", version: "0", logger }).withBroker(SqlBroker.fromUrl(url).route(spec, "jobs"), (b) => b.include(sub));
    if (cron !== undefined) app = app.cron("jobs", "* * * * * *", () => ({ n: 1 }), { catchUp: cron.catchUp });
    return { start: () => app.start(), logger };
  }

  test("deadLettered with no dead letter declared is refused at start", async () => {
    const { start } = await started("jobs", (q) => q.retain({ deadLettered: days(1) }));
    await expect(start()).rejects.toThrow("retain({ deadLettered }) needs a dead-letter table");
  });

  test("a table that keeps every handled row logs one warning; with a done window, none", async () => {
    const kept = await started("jobs", (q) => q);
    await (await kept.start()).stop();
    expect(kept.logger.find("keeps every handled row for ever").map((r) => r.fields)).toEqual([expect.objectContaining({ table: "jobs", subscriptions: "jobs" })]);
    const pruned = await started("jobs", (q) => q.retain({ done: hours(1) }));
    await (await pruned.start()).stop();
    expect(pruned.logger.find("keeps every handled row for ever")).toEqual([]);
    expect(pruned.logger.find("pruning rows older than the retention window").map((r) => r.fields)).toEqual([
      expect.objectContaining({ table: "jobs", retain: "done", windowMs: hours(1), everyMs: 60_000 }),
    ]);
  });

  test("a cron's catchUp says the window it needs, and warns when the table keeps less", async () => {
    const short = await started("jobs", (q) => q.retain({ done: seconds(1) }), { catchUp: 3 });
    await (await short.start()).stop();
    // Three missed ticks of a per-second schedule, up to the next: 3 s of handled rows.
    expect(short.logger.find("cron schedule started").map((r) => r.fields.retainDoneAtLeastMs)).toEqual([3000]);
    expect(short.logger.find("cron catchUp reaches further back").map((r) => r.fields)).toEqual([
      expect.objectContaining({ route: "jobs", catchUp: 3, retainDoneAtLeastMs: 3000, retainDoneMs: 1000 }),
    ]);
    const enough = await started("jobs", (q) => q.retain({ done: minutes(1) }), { catchUp: 3 });
    await (await enough.start()).stop();
    expect(enough.logger.find("cron catchUp reaches further back")).toEqual([]);
  });
});

describe("a pruner whose statements fail", () => {
  const sqlite = engineNamed("sqlite");

  test("logs the failure once, keeps the rows, and prunes them once the database answers again", async () => {
    const { TestApp } = await import("../../src/testing/index.js");
    const { sql } = await import("kysely");
    const url = sqlite.url();
    const db = await sqlite.connect(url);
    const spec = keeping("jobs");
    await createInboxTable(db, spec);
    const sub = subscriber(InboxQueue.of(spec, "jobs").retain({ done: seconds(1) }), async () => HandlerOutcome.ack());
    const app = new App({ name: "retain", version: "0" }).withBroker(SqlBroker.fromUrl(url).route(spec, "jobs"), (b) => b.include(sub));
    const t = await TestApp.start(app);
    const count = async () => Number((await sql<{ n: unknown }>`select count(*) as n from jobs`.execute(db)).rows[0]?.n);
    try {
      await t.publish("jobs", { n: 1 });
      await t.advance(100);
      await t.settle();
      expect(await count()).toBe(1);
      const heal = t.failStatements("prune");
      // Eight runs, every one failing (a quarter second apart), past the window.
      for (let i = 0; i < 8; i++) await t.advance(250);
      expect(await count()).toBe(1);
      expect(t.logs.find("pruning failed")).toHaveLength(1);
      heal();
      await t.advance(250);
      await t.settle();
      expect(await count()).toBe(0);
    } finally {
      await t.stop();
      await db.destroy();
    }
  });
});
