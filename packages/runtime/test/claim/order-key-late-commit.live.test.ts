/**
 * A row of an order key that commits late, on the server engines in the lease and row-lock forms:
 * ids are given at insert, not at commit, so a transaction that publishes a key's row and commits
 * after a later row of the key went into work leaves a row with a smaller id behind a row in work.
 * It becomes its key's head, and must still wait: the lease form's claim counts the key's other rows
 * with a live lease; the row-lock form's claim transaction holds a lock on the key of each row it
 * holds (a slot of `perKey`). The late row runs once a row in work settles (one at a time holds; id
 * order cannot, the later row already ran). SQLite has one writer at a time, so its rows commit in
 * id order.
 */
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, keys, silentLogger, subscriber } from "../../src/index.js";
import { serverEngines, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { deferred, useEngineConnection } from "../support/fixtures.js";
import { Gates, insertLedgerRows, ledgerIds, orderedSpecOf } from "../support/order-key-tables.js";
import { sleep } from "../support/sleep.js";

const POLL = 30;

const cases = serverEngines.flatMap((engine) => (["lease", "rowLock", "rowLock shared"] as const).map((form) => ({ engine, name: engine.name, form })));

describe.each(cases)("a key's row that commits late, on $name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  /**
   * Publishes row A of key 7 in a transaction left open (A gets the smallest id), then `later` rows of
   * the key, committed; runs the subscription until `later` rows are in work, commits A, and hands
   * the test A's id, the later rows' ids and the gates.
   */
  async function lateCommit(later: number, perKey: number | undefined, check: (s: { a: number; rest: number[]; gates: Gates }) => Promise<void>) {
    const table = unique("ordered_late").toLowerCase();
    const spec = orderedSpecOf(table, form === "lease" ? "lease" : "rowLock");
    await createInboxTable(db, spec);
    const writer: AnyKysely = await engine.connect(url);
    const inserted = deferred();
    const commit = deferred();
    const t1 = writer.transaction().execute(async (trx) => {
      await insertLedgerRows(trx, table, [{ account: 7 }]);
      inserted.resolve();
      await commit.promise;
    });
    await inserted.promise;
    await insertLedgerRows(
      db,
      table,
      Array.from({ length: later }, () => ({ account: 7 })),
    );
    const rest = (await ledgerIds(db, table)).map((r) => r.id);
    expect(rest).toHaveLength(later);

    const gates = new Gates();
    // biome-ignore lint/suspicious/noExplicitAny: the description's form is chosen at run time; each queue method is valid for it
    let queue: any = InboxQueue.of(spec, "ledger").workers(4).pollInterval(POLL);
    if (form === "lease") queue = queue.lease(5000);
    // One claim takes up to four rows in one transaction: two rows of a key held by one transaction take two slots.
    if (form === "rowLock shared") queue = queue.sharedTransaction().batch(4);
    if (perKey !== undefined) queue = queue.maxInWorkPerKey(perKey);
    const sub = subscriber(queue, async (_job: unknown, ctx: { get(key: typeof keys.id): unknown }) => {
      await gates.run(Number(ctx.get(keys.id)));
      return HandlerOutcome.ack();
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 8 } }).route(spec, "ledger"), (b) => b.include(sub))
      .start();
    let committed = false;
    try {
      await until(() => gates.started.length === later, 10_000, "the committed rows in work");
      commit.resolve();
      await t1;
      committed = true;
      const ids = async () => (await ledgerIds(db, table)).map((r) => r.id);
      const all = await ids();
      const a = all.find((id) => !rest.includes(id));
      if (a === undefined) throw new Error("row A is not in the table");
      expect(a).toBeLessThan(Math.min(...rest));
      await check({ a, rest, gates });
      gates.releaseAll();
      await until(async () => (await ids()).length === 0, 10_000, "every row acked");
    } finally {
      if (!committed) commit.resolve();
      await t1.catch(() => {});
      gates.releaseAll();
      await app.stop();
      await writer.destroy();
      await engine.dropTable(db, table);
    }
  }

  test("one at a time: row A commits while B, a later row of its key, runs; A waits for B", async () => {
    await lateCommit(1, undefined, async ({ a, rest, gates }) => {
      const [b] = rest as [number];
      // A is its key's head now, free and due: a claim that only looks for the head would take it.
      await sleep(POLL * 15);
      expect(gates.started).toEqual([b]);
      gates.release(b);
      await until(() => gates.started.length === 2, 10_000, "row A after B");
      expect(gates.started).toEqual([b, a]);
      expect(gates.most).toBe(1);
    });
  });

  test("maxInWorkPerKey(2): the smallest of three rows commits last, while the other two run; never three at once", async () => {
    await lateCommit(2, 2, async ({ a, rest, gates }) => {
      const [b, c] = rest as [number, number];
      await sleep(POLL * 15);
      expect([...gates.started].sort((x, y) => x - y)).toEqual([b, c]);
      gates.release(b);
      if (form === "rowLock shared") {
        // B and C share one transaction (and hold both slots of the key) until both settled.
        await sleep(POLL * 15);
        expect(gates.started).toHaveLength(2);
        gates.release(c);
      }
      await until(() => gates.started.length === 3, 10_000, "row A after one of B, C");
      expect(gates.started[2]).toBe(a);
      expect(gates.most).toBe(2);
    });
  });
});
