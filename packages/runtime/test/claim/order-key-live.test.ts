/**
 * Ordered keys in one process, on every engine × form that has them: a retry keeps its key's
 * order (the row stays the head; a delayed head holds its key until due, while other keys run),
 * and `maxInWorkPerKey(n)` lets up to n rows of a key run at once, in id order — with an order key,
 * and on a fifo group, where it replaces fifo's one at a time.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, keys, silentLogger, subscriber } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";
import { fifoSpecOf } from "../support/fifo-tables.js";
import { insertLedgerRows, ledgerIds, orderedSpecOf } from "../support/order-key-tables.js";
import { sleep } from "../support/sleep.js";

interface Start {
  readonly id: number;
  readonly key: string;
  readonly attempt: number;
  readonly at: number;
}

/** Starts and ends in the order they happened; the most rows of one key in work at once. */
class Runs {
  readonly starts: Start[] = [];
  readonly ended: number[] = [];
  readonly #inWork = new Map<string, number>();
  most = 0;

  start(start: Start): void {
    this.starts.push(start);
    const n = (this.#inWork.get(start.key) ?? 0) + 1;
    this.#inWork.set(start.key, n);
    this.most = Math.max(this.most, n);
  }

  /** Starts of a row while `n` or more rows of its key with smaller ids had not ended (none when each row started within its key's first n). */
  pastWindow(n: number, ids: readonly number[]): string[] {
    const out: string[] = [];
    const ended = new Set<number>();
    let e = 0;
    for (const start of this.starts) {
      // Ends recorded before this start (both lists are in the order things happened).
      while (e < this.endedBefore.length && (this.endedBefore[e] as [number, number])[1] <= this.starts.indexOf(start)) ended.add((this.endedBefore[e++] as [number, number])[0]);
      const ahead = ids.filter((id) => id < start.id && !ended.has(id));
      if (ahead.length >= n) out.push(`${start.id} started with ${ahead.join(", ")} ahead of it`);
    }
    return out;
  }

  /** Each end with the number of starts before it. */
  readonly endedBefore: Array<[number, number]> = [];

  end(start: Start): void {
    this.endedBefore.push([start.id, this.starts.length]);
    this.#inWork.set(start.key, (this.#inWork.get(start.key) ?? 1) - 1);
    this.ended.push(start.id);
  }

  of(key: string): Start[] {
    return this.starts.filter((s) => s.key === key);
  }
}

describe.each(matrix.filter((m) => m.form !== "advisory"))("ordered keys on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test("a retry keeps the key's order: the retried row stays the head, a delayed head holds its key until due, other keys run meanwhile", async () => {
    const table = unique(`ordered_retry_${form}`).toLowerCase();
    const spec = orderedSpecOf(table, form);
    await createInboxTable(db, spec);
    // Key 1: three rows; key 2: two rows, published after key 1's.
    await insertLedgerRows(db, table, [{ account: 1 }, { account: 1 }, { account: 1 }, { account: 2 }, { account: 2 }]);
    const [a1, a2, a3, b1, b2] = (await ledgerIds(db, table)).map((r) => r.id) as [number, number, number, number, number];
    const runs = new Runs();
    const delay = 600;
    const sub = subscriber(InboxQueue.of(spec, "ledger").workers(4).pollInterval(30), async (job, ctx) => {
      const start = { id: Number(ctx.get(keys.id)), key: String(job.account), attempt: ctx.get(keys.attempt), at: Date.now() };
      runs.start(start);
      await sleep(20);
      runs.end(start);
      if (start.id === a1 && start.attempt === 1) return HandlerOutcome.retryAfter(delay);
      if (start.id === a2 && start.attempt === 1) return HandlerOutcome.retry();
      return HandlerOutcome.ack();
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 8 } }).route(spec, "ledger"), (b) => b.include(sub))
      .start();
    try {
      await until(() => runs.ended.length === 7, 20_000, "every delivery");
      await until(async () => (await ledgerIds(db, table)).length === 0, 5_000, "every row acked");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
    expect(runs.of("1").map((s) => [s.id, s.attempt])).toEqual([
      [a1, 1],
      [a1, 2],
      [a2, 1],
      [a2, 2],
      [a3, 1],
    ]);
    const [first, second] = runs.of("1") as [Start, Start];
    expect(second.at - first.at).toBeGreaterThanOrEqual(delay);
    // Key 2 ran while key 1's head waited for its delay.
    expect(runs.of("2").map((s) => s.id)).toEqual([b1, b2]);
    expect(Math.max(...runs.of("2").map((s) => s.at))).toBeLessThan(second.at);
    expect(runs.most).toBe(1);
  });

  test("maxInWorkPerKey(2): two rows of a key at once, never three, each started within its key's first two unfinished rows", async () => {
    const table = unique(`ordered_two_${form}`).toLowerCase();
    const spec = orderedSpecOf(table, form);
    await createInboxTable(db, spec);
    await insertLedgerRows(
      db,
      table,
      Array.from({ length: 8 }, () => ({ account: 7 })),
    );
    const ids = (await ledgerIds(db, table)).map((r) => r.id);
    const runs = new Runs();
    const sub = subscriber(InboxQueue.of(spec, "ledger").workers(4).maxInWorkPerKey(2).pollInterval(30), async (job, ctx) => {
      const start = { id: Number(ctx.get(keys.id)), key: String(job.account), attempt: ctx.get(keys.attempt), at: Date.now() };
      runs.start(start);
      await sleep(150);
      runs.end(start);
      return HandlerOutcome.ack();
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 8 } }).route(spec, "ledger"), (b) => b.include(sub))
      .start();
    try {
      await until(() => runs.ended.length === ids.length, 20_000, "every delivery");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
    expect(runs.most).toBe(2);
    expect(runs.pastWindow(2, ids)).toEqual([]);
  });

  test("maxInWorkPerKey(2) on a fifo group: two of the group's rows at once, each within its first two unfinished rows (claim order inside them), in place of one", async () => {
    const table = unique(`fifo_two_${form}`).toLowerCase();
    const spec = fifoSpecOf(table, form);
    // The table as createInboxTable makes it: on MariaDB a row-lock claim that sorts without its claim index
    // locks every row it matched until its transaction ends, so the second row of the window would stay locked.
    await createInboxTable(db, spec);
    await db
      .insertInto(table)
      .values(Array.from({ length: 8 }, (_, n) => ({ grp: "g0", priority: (n * 3) % 4, payload: Buffer.from(JSON.stringify({ n })) })))
      .execute();
    const runs = new Runs();
    const sub = subscriber(InboxQueue.of(spec, "g0").workers(4).maxInWorkPerKey(2).pollInterval(30), async (job, ctx) => {
      const start = { id: job.n, key: "g0", attempt: ctx.get(keys.attempt), at: Date.now() };
      runs.start(start);
      await sleep(150);
      runs.end(start);
      return HandlerOutcome.ack();
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 8 } }).route(spec, "g0"), (b) => b.include(sub))
      .start();
    try {
      await until(() => runs.ended.length === 8, 20_000, "every delivery");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
    expect(runs.most).toBe(2);
    expect(runs.pastWindow(2, [0, 1, 2, 3, 4, 5, 6, 7])).toEqual([]);
  });
});

describe("maxInWorkPerKey at run time (a JavaScript caller, or a cast past the types)", () => {
  const untyped = (queue: InboxQueue) => queue as unknown as { maxInWorkPerKey(n: unknown): InboxQueue };

  test("without an order key or a group, and on an advisory table, it is refused with the sentence; a count must be a positive integer", () => {
    const plain = defineInbox({ table: "plain_jobs", columns: { id: field.id(), payload: field.payload() } });
    expect(() => untyped(InboxQueue.of(plain, "plain")).maxInWorkPerKey(2)).toThrow(/^Declaration: maxInWorkPerKey needs an order key or a group column/);
    const advisory = defineInbox({ table: "keyed_jobs", columns: { id: field.id(), grp: field.group(), payload: field.payload() }, advisoryLock: "k-{id}" });
    expect(() => untyped(InboxQueue.of(advisory, "keyed")).maxInWorkPerKey(2)).toThrow(/^Declaration: maxInWorkPerKey needs a lease or row-lock table/);
    const ordered = orderedSpecOf("ledger_jobs", "lease");
    expect(() => untyped(InboxQueue.of(ordered, "ledger")).maxInWorkPerKey(0)).toThrow(/maxInWorkPerKey must be a positive integer, got 0/);
    expect(InboxQueue.of(ordered, "ledger").maxInWorkPerKey(3).options.maxInWorkPerKey).toBe(3);
  });
});
