/**
 * The lease form's batching, on SQLite, PostgreSQL and MariaDB: a claim takes a whole batch
 * when a worker is free and workers take from the buffer; acks of several deliveries go in one
 * statement, each still token-checked and failing on its own; a stop gives back the rows that
 * were claimed ahead and never started, without spending their attempt.
 */
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { SqlInboxError } from "../../../src/index.js";
import { TestApp } from "../../../src/testing/index.js";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { engines, insertRaw, readRows, type TestEngine } from "../../support/engines.js";
import { deferred, jobsApp, useLeaseTable } from "../../support/fixtures.js";

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

describe.each(engines)("claims ahead and batched acks on $name", (engine: TestEngine) => {
  let url: string;
  let db: AnyKysely;
  let table: string;
  const track = useLeaseTable(engine, "rt_ahead", (scope) => ({ url, db, table } = scope));

  test("batch(64).workers(1): one claim takes the whole batch, the worker takes from the buffer, every row is handled once", async () => {
    for (let n = 0; n < 150; n++) await insertRaw(db, table, { payload: json({ n }) });
    const seen: number[] = [];
    let leasedAtFirst = 0;
    const { app, sub } = jobsApp(
      url,
      table,
      async (job) => {
        if (seen.length === 0) leasedAtFirst = (await readRows(engine, db, table)).filter((r) => r.locked_until !== null).length;
        seen.push(job.n);
      },
      (q) => q.batch(64).workers(1),
    );
    const t = track(await TestApp.start(app));
    await t.waitFor(async () => (await readRows(engine, db, table)).length === 0, 10_000, "the table to drain");
    expect(leasedAtFirst).toBe(64); // one worker, one claim statement: a whole batch held, not one row
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 150 }, (_, n) => n));
    // Every delivery acked: a failure lists the calls that were not, with their outcome and error.
    const notAcked = t.calls(sub).filter((c) => !(c.outcome?.kind === "ack" && c.error === undefined));
    expect(notAcked.map((c) => ({ outcome: c.outcome?.kind, error: c.error === undefined ? undefined : String(c.error) }))).toEqual([]);
  });

  test("acks written together still fail one by one: a delivery whose row another claim took gets LeaseLost and deletes nothing", async () => {
    await insertRaw(db, table, { payload: json({ n: 1 }) });
    await insertRaw(db, table, { payload: json({ n: 2 }) });
    const release = deferred();
    const { app, sub } = jobsApp(
      url,
      table,
      async () => void (await release.promise),
      (q) => q.batch(2).workers(2),
    );
    const t = track(await TestApp.start(app));
    expect(t.calls(sub)).toHaveLength(2);
    // Another claim takes row 1: its deadline (the token) moves.
    const [first] = await readRows(engine, db, table);
    await sql`UPDATE ${sql.id(table)} SET locked_until = ${engine.time(new Date((first?.locked_until?.getTime() ?? 0) + 60_000))} WHERE id = ${first?.id}`.execute(db);
    release.resolve(); // both acks go in one statement
    await t.settle();
    const byPayload = new Map(t.calls(sub).map((c) => [(c.payload as { n: number }).n, c]));
    expect((byPayload.get(1)?.error as SqlInboxError | undefined)?.code).toBe("LeaseLost");
    expect(byPayload.get(2)?.error).toBeUndefined();
    expect((await readRows(engine, db, table)).map((r) => r.id)).toEqual([first?.id]);
    expect(t.logs.find("settlement failed")).toHaveLength(1);
  });

  test("handlers that return at once run a whole batch in one turn; a stop called from one of them starts no further row and gives the rest back", async () => {
    const seen: number[] = [];
    let stopping: Promise<void> | undefined;
    let t: TestApp | undefined;
    const { app } = jobsApp(
      url,
      table,
      (job) => {
        seen.push(job.n);
        if (seen.length === 10) stopping = t?.stop(); // the synchronous path checks the stop before each next row
      },
      (q) => q.batch(64).workers(1).pollInterval(20),
    );
    t = await TestApp.startLive(app);
    // One statement: the next poll claims all 64 in one batch.
    await db
      .insertInto(table)
      .values(Array.from({ length: 64 }, (_, n) => ({ payload: json({ n }) })))
      .execute();
    await t.waitFor(() => stopping !== undefined, 5_000, "the tenth delivery");
    await stopping;
    expect(seen).toEqual(Array.from({ length: 10 }, (_, n) => n));
    // The ten are acked; the other 54 were given back as they were: no lease, the attempt not spent.
    const left = await readRows(engine, db, table);
    expect(left).toHaveLength(54);
    expect(left.every((r) => r.locked_until === null && Number(r.attempt) === 1)).toBe(true);
  });

  test("a stop gives back the rows claimed ahead and never started, their attempt not spent; the row in work settles", async () => {
    for (let n = 0; n < 5; n++) await insertRaw(db, table, { payload: json({ n }) });
    const before = await readRows(engine, db, table);
    const release = deferred();
    const { app, sub } = jobsApp(
      url,
      table,
      async () => void (await release.promise),
      (q) => q.batch(8).workers(1),
    );
    const t = await TestApp.startLive(app); // the real clock: the shutdown grace does not pass while the handler is held
    await t.waitFor(() => t.calls(sub).length === 1, 5_000, "the first delivery");
    expect(t.calls(sub)).toHaveLength(1); // one worker: four rows wait in the buffer
    const held = await readRows(engine, db, table);
    expect(held.every((r) => r.locked_until !== null)).toBe(true);
    const stopping = t.stop();
    await t.waitFor(async () => (await readRows(engine, db, table)).filter((r) => r.locked_until === null).length === 4, 5_000, "the unstarted rows to be given back");
    release.resolve();
    await stopping;
    expect(t.calls(sub)).toHaveLength(1);
    expect(t.calls(sub)[0]?.error).toBeUndefined();
    const after = await readRows(engine, db, table);
    const started = t.calls(sub)[0]?.id;
    expect(after.map((r) => r.id)).toEqual(before.map((r) => r.id).filter((id) => id !== Number(started)));
    // Given back as they were before the claim: no lease, the attempt it had.
    expect(after.map((r) => [r.id, r.attempt, r.locked_until])).toEqual(before.filter((r) => r.id !== Number(started)).map((r) => [r.id, r.attempt, null]));
    expect(t.logs.find("rows claimed ahead but not started were given back")[0]?.fields).toMatchObject({ released: 4, unstarted: 4 });
  });
});
