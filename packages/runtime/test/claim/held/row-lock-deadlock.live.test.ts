/**
 * A MySQL/MariaDB deadlock (InnoDB 1213) rolls the whole row-lock transaction back, so the
 * runtime retries the transaction, not the statement: a deadlocked claim claims again; a
 * deadlocked settlement is written again in a fresh transaction, counting the attempt the
 * rollback undid. Both are logged as "deadlock retried" and never surface as a failed job.
 * The deadlock is injected once (the error InnoDB raises), on Postgres and MariaDB alike.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import type { StatementKind } from "../../../src/drivers/database.js";
import { TestApp } from "../../../src/testing/index.js";
import { unique } from "../../support/engines.js";
import { consumer, createJobsTable, insertJobs, readJobs, serverEngines } from "../../support/claim-forms.js";

function deadlockOnce(): () => Error {
  let fired = false;
  return () => {
    if (fired) return undefined as unknown as Error; // no fault after the first
    fired = true;
    return Object.assign(new Error("Deadlock found when trying to get lock; try restarting transaction"), { errno: 1213, code: "ER_LOCK_DEADLOCK" });
  };
}

describe.each(serverEngines)("row-lock deadlocks on $name", (engine) => {
  let db: AnyKysely;
  beforeAll(async () => {
    db = await engine.connect(engine.url());
  });
  afterAll(async () => {
    await db.destroy();
  });

  test.each<StatementKind>(["claim", "settle"])("a deadlocked %s is retried as a whole transaction and counted", async (kind) => {
    const table = unique(`deadlock_${kind}`);
    await createJobsTable(engine, db, table);
    try {
      const c = consumer(engine.url(), table, "rowLock", { workers: 1 });
      const t = await TestApp.startLive(c.app);
      t.failStatements(kind, deadlockOnce());
      await insertJobs(db, table, 2);
      await t.waitFor(async () => (await readJobs(db, table)).length === 0, 10_000, "both rows settled");
      await t.stop();
      expect(c.seen.map((s) => s.n).sort()).toEqual([0, 1]);
      expect(c.seen.every((s) => s.attempt === 1)).toBe(true);
      expect(t.logs.records.filter((r) => r.level === "error")).toEqual([]);
      expect(t.logs.records.filter((r) => r.message === "deadlock retried")).toHaveLength(1);
    } finally {
      await engine.dropTable(db, table);
    }
  });
});
