/**
 * A row claimed ahead whose lease is gone before a worker takes it never starts, on every engine:
 * its lease was lost while it waited (here another claim took the row, as one would once the
 * lease ran out while this process's extensions hung), so running it would run the row twice at
 * once. The app warns that the lease was lost, and the row is left to the claim that holds it.
 */
import { sql } from "kysely";
import { beforeAll, afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { consumer, createJobsTable, insertJobs, until } from "../../support/claim-forms.js";
import { engines, unique } from "../../support/engines.js";
import { deferred, useEngineConnection } from "../../support/fixtures.js";

describe.each(engines)("a lease lost while its row waits for a worker, on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  const table = unique("rt_lapsed").toLowerCase();
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });
  beforeAll(() => createJobsTable(engine, db, table));
  afterAll(() => engine.dropTable(db, table));

  test("the row another claim took is not started; the row in work settles; the loss is warned", { timeout: 30_000 }, async () => {
    await insertJobs(db, table, 2);
    const firstHeld = deferred();
    // One worker, claims of two rows: the first row runs (held until released), the second waits in the buffer.
    const c = consumer(url, table, "lease", { workers: 1, batch: 2, leaseMs: 1_000, handle: (seen) => (seen.n === 0 ? firstHeld.promise : Promise.resolve()) });
    const running = await c.app.start();
    try {
      await until(() => c.seen.length === 1, 10_000, "the first row in work");
      const [first] = c.seen;
      const { rows } = await sql<{ id: number | string }>`SELECT id FROM ${sql.id(table)} WHERE id <> ${first?.id ?? 0}`.execute(db);
      const second = Number(rows[0]?.id);
      // Another claim takes the waiting row: its token changes under this process.
      await sql`UPDATE ${sql.id(table)} SET locked_until = ${engine.time(new Date(Date.now() + 60_000))} WHERE id = ${second}`.execute(db);
      // The keeper's next extension (every half lease) finds the token gone and loses the lease.
      await until(() => c.leasesLost.has(second), 5_000, "the lease of the waiting row lost");
      firstHeld.resolve();
      await until(async () => (await sql<{ id: unknown }>`SELECT id FROM ${sql.id(table)}`.execute(db)).rows.length === 1, 10_000, "the first row acked");
      // A worker is free and the waiting row was next: had it started, it would have done so by now.
      await new Promise((r) => setTimeout(r, 300));
      expect(c.seen.map((s) => s.id)).toEqual([first?.id]);
      expect(c.errors).toEqual([]);
      expect(c.warnings.filter((w) => w.startsWith("lease lost"))).toEqual(["lease lost: another claim took the row"]);
      const left = await sql<{ id: number | string }>`SELECT id FROM ${sql.id(table)}`.execute(db);
      expect(left.rows.map((r) => Number(r.id))).toEqual([second]);
    } finally {
      firstHeld.resolve();
      await running.stop();
    }
  });
});
