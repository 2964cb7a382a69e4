/**
 * The wake of a publish inside the caller's transaction comes after the commit: the COMMIT is
 * heard on the transaction's connection as it completes (no timer, no statement), the connection
 * is left as it was, and a subscription waiting on a long poll starts the job within milliseconds
 * of the commit; a rollback wakes nobody.
 */
import { describe, expect, test, vi } from "vitest";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { CommitWatch, transactionState } from "../../src/publish/after-commit.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { until } from "../support/claim-forms.js";
import { engines, unique } from "../support/engines.js";
import { jobsSpec } from "../support/fixtures.js";
import { sleep } from "../support/sleep.js";

describe.each(engines)("the wake after the caller's commit on $name", (engine) => {
  test("a transaction's state is read without a statement: open, then committed or ended; none outside a transaction", async () => {
    const db = await engine.connect(engine.url());
    try {
      expect(transactionState(undefined).state).toBe("none");
      expect(transactionState(db).state).toBe("none");
      let inside: string | undefined;
      let trxOf: typeof db | undefined;
      await db.transaction().execute(async (trx) => {
        trxOf = trx;
        inside = transactionState(trx).state;
      });
      expect(inside).toBe("open");
      expect(transactionState(trxOf).state).toBe("committed");
      await db
        .transaction()
        .execute(async (trx) => {
          trxOf = trx;
          throw new Error("roll back");
        })
        .catch(() => {});
      expect(transactionState(trxOf).state).toBe("ended");
      const controlled = await db.startTransaction().execute();
      expect(transactionState(controlled).state).toBe("open");
      await controlled.commit().execute();
      expect(transactionState(controlled).state).toBe("committed");
      const rolled = await db.startTransaction().execute();
      await rolled.rollback().execute();
      expect(transactionState(rolled).state).toBe("ended");
    } finally {
      await db.destroy();
    }
  });

  test("CommitWatch wakes once, a few ms after the commit; never after a rollback", async () => {
    const db = await engine.connect(engine.url());
    try {
      const watch = new CommitWatch();
      const woken: Array<{ key: string; at: number }> = [];
      let committedAt = 0;
      await db.transaction().execute(async (trx) => {
        expect(watch.afterCommit(trx, "a", () => woken.push({ key: "a", at: performance.now() }))).toBe("open");
        watch.afterCommit(trx, "a", () => woken.push({ key: "a", at: performance.now() }));
        watch.afterCommit(trx, "b", () => woken.push({ key: "b", at: performance.now() }));
        await sleep(30);
        expect(woken).toEqual([]);
        committedAt = performance.now();
      });
      await until(() => woken.length === 2, 2000, "both keys woken after the commit");
      expect(woken.map((w) => w.key).sort()).toEqual(["a", "b"]);
      for (const w of woken) expect(w.at - committedAt).toBeLessThan(100);
      let rolledBack = false;
      await db
        .transaction()
        .execute(async (trx) => {
          watch.afterCommit(trx, "c", () => {
            rolledBack = true;
          });
          throw new Error("roll back");
        })
        .catch(() => {});
      await sleep(150);
      expect(rolledBack).toBe(false);
    } finally {
      await db.destroy();
    }
  });

  test("the wake follows the COMMIT heard on the connection, with no timer; a ROLLBACK wakes nobody; the connection is unwrapped after", async () => {
    const { db } = await parseDatabaseUrl(engine.url()).open({ max: 1 });
    const executeQueryOf = () =>
      db
        .connection()
        .execute(async (c) =>
          (c.getExecutor() as unknown as { provideConnection<T>(f: (c: { executeQuery: unknown }) => Promise<T>): Promise<T> }).provideConnection(
            async (conn) => conn.executeQuery,
          ),
        );
    const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    try {
      const before = await executeQueryOf();
      // Timers never fire while faked: only the COMMIT heard on the connection can wake.
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      const watch = new CommitWatch();
      let woken = 0;
      await db.transaction().execute(async (trx) => {
        expect(watch.afterCommit(trx, "a", () => woken++)).toBe("open");
      });
      await turn();
      expect(woken).toBe(1);
      const controlled = await db.startTransaction().execute();
      expect(watch.afterCommit(controlled, "a", () => woken++)).toBe("open");
      await controlled.commit().execute();
      await turn();
      expect(woken).toBe(2);
      await db
        .transaction()
        .execute(async (trx) => {
          watch.afterCommit(trx, "a", () => woken++);
          throw new Error("roll back");
        })
        .catch(() => {});
      const rolled = await db.startTransaction().execute();
      watch.afterCommit(rolled, "a", () => woken++);
      await rolled.rollback().execute();
      await turn();
      await turn();
      expect(woken).toBe(2);
      vi.useRealTimers();
      // The one connection of the pool runs its own executeQuery again.
      expect(await executeQueryOf()).toBe(before);
    } finally {
      vi.useRealTimers();
      await db.destroy();
    }
  });

  test("a { via: trx } publish starts its job within ms of the commit, not at the next poll; a rolled-back one is never delivered", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("wake_commit");
    try {
      await engine.createLeaseTable(db, table);
      const spec = jobsSpec(table);
      const broker = SqlBroker.fromKysely(db).route(spec, "jobs");
      const started: Array<{ n: number; at: number }> = [];
      // A 60 s poll: only a wake can start the job in time.
      const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(60_000), async (job) => void started.push({ n: job.n, at: performance.now() }));
      const app = await new App({ name: "wake-commit", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      try {
        await sleep(200); // the first claim came back empty: the subscription waits for a wake
        await db
          .transaction()
          .execute(async (trx) => {
            await broker.publish("jobs", { n: -1 }, { via: trx });
            throw new Error("roll back");
          })
          .catch(() => {});
        let committedAt = 0;
        await db.transaction().execute(async (trx) => {
          await broker.publish("jobs", { n: 1 }, { via: trx });
          await sleep(50); // the caller's transaction goes on: a wake now would find nothing
          committedAt = performance.now();
        });
        await until(() => started.length === 1, 5000, "the job started after the commit");
        expect(started[0]?.n).toBe(1);
        expect((started[0]?.at ?? 0) - committedAt).toBeLessThan(500);
        await sleep(100);
        expect(started.map((s) => s.n)).toEqual([1]);
      } finally {
        await app.stop();
      }
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
