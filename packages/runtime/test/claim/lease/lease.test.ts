/**
 * The lease form end to end, on SQLite, PostgreSQL and MariaDB: long handlers extended in one
 * statement per subscription, token-checked settlement, LeaseLost, outcomes, polling and wakes.
 */
import { describe, expect, test } from "vitest";
import { HandlerOutcome, SqlInboxError, keys, seconds, type InboxContext } from "../../../src/index.js";
import { PausedClock, TestApp } from "../../../src/testing/index.js";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { engines, insertRaw, readRows, type TestEngine } from "../../support/engines.js";
import { deferred, jobsApp, useLeaseTable, type Deferred } from "../../support/fixtures.js";

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

describe.each(engines)("lease form on $name", (engine: TestEngine) => {
  let url: string;
  let db: AnyKysely;
  let table: string;
  const track = useLeaseTable(engine, "rt_lease", (scope) => ({ url, db, table } = scope));

  test("a handler longer than the lease: every lease in work extended at half its term in one statement; delivered once", async () => {
    const { app, sub } = jobsApp(
      url,
      table,
      async (_job, ctx) => void (await ctx.sleep(seconds(10))),
      (q) => q.workers(2).batch(2),
    );
    const t = track(await TestApp.start(app));
    const t0 = t.clock.now().getTime();
    await t.publish("jobs", { n: 1 });
    await t.publish("jobs", { n: 2 });
    expect(t.calls(sub)).toHaveLength(2);
    await t.advance(seconds(1)); // half the 2 s lease
    const extensions = t.logs.find("leases extended");
    expect(extensions.at(-1)?.fields["extended"]).toBe(2); // both leases, one statement
    const rows = await readRows(engine, db, table);
    expect(rows.map((r) => r.locked_until?.getTime())).toEqual([t0 + 3000, t0 + 3000]);
    await t.advance(seconds(10));
    expect(t.calls(sub).map((c) => [c.payload, c.attempt, c.outcome?.kind, c.error])).toEqual([
      [{ n: 1 }, 1, "ack", undefined],
      [{ n: 2 }, 1, "ack", undefined],
    ]);
    expect(await readRows(engine, db, table)).toEqual([]);
  });

  test("LeaseLost: a holder whose extensions fail past its lease loses the row to another claim; its late ack deletes nothing", async () => {
    const clock = new PausedClock();
    const releaseA = deferred();
    let ctxA: InboxContext | undefined;
    const a = jobsApp(url, table, async (_job, ctx) => {
      ctxA = ctx;
      await releaseA.promise;
      return HandlerOutcome.ack();
    });
    const tA = track(await TestApp.start(a.app, { clock }));
    await tA.publish("jobs", { n: 1 });
    expect(tA.calls(a.sub)).toHaveLength(1);

    tA.failStatements("extend"); // the holder cannot reach the database
    await tA.advance(seconds(1));
    expect(ctxA?.signal.aborted).toBe(false); // failed, but the lease still holds
    await tA.advance(seconds(2));
    expect(ctxA?.signal.aborted).toBe(true);
    expect(ctxA?.signal.reason).toBeInstanceOf(SqlInboxError);
    expect((ctxA?.signal.reason as SqlInboxError | undefined)?.code).toBe("LeaseLost");

    const releaseB: Deferred = deferred();
    const b = jobsApp(url, table, async () => void (await releaseB.promise));
    const tB = track(await TestApp.start(b.app, { clock }));
    const taken = tB.assertCalledOnce(b.sub, { n: 1 });
    expect(taken.attempt).toBe(2);
    const [heldByB] = await readRows(engine, db, table);

    releaseA.resolve();
    await tA.settle();
    const late = tA.assertCalledOnce(a.sub);
    expect(late.outcome?.kind).toBe("ack");
    expect(late.error).toBeInstanceOf(SqlInboxError);
    expect((late.error as SqlInboxError).code).toBe("LeaseLost");
    expect(late.signalAborted).toBe(true);
    expect(await readRows(engine, db, table)).toEqual([heldByB]); // nothing deleted
    expect(tA.logs.find("settlement failed")[0]?.fields).toMatchObject({ subscription: "jobs", table, code: "LeaseLost" });

    releaseB.resolve();
    await tB.settle();
    expect(tB.calls(b.sub)[0]?.error).toBeUndefined();
    expect(await readRows(engine, db, table)).toEqual([]);
  });

  test("a refused extension (the row holds another claim's deadline) aborts ctx.signal at once with LeaseLost", async () => {
    let ctxA: InboxContext | undefined;
    const { app, sub } = jobsApp(url, table, async (_job, ctx) => {
      ctxA = ctx;
      await ctx.sleep(seconds(10)).catch(() => {});
      return HandlerOutcome.ack();
    });
    const t = track(await TestApp.start(app));
    await t.publish("jobs", { n: 1 });
    const other = new Date(t.clock.now().getTime() + seconds(60));
    await db
      .updateTable(table)
      .set({ locked_until: engine.time(other) })
      .execute(); // another claim's token
    await t.advance(seconds(1));
    expect(ctxA?.signal.aborted).toBe(true);
    expect((ctxA?.signal.reason as SqlInboxError | undefined)?.code).toBe("LeaseLost");
    await t.advance(seconds(10));
    expect((t.calls(sub)[0]?.error as SqlInboxError | undefined)?.code).toBe("LeaseLost");
    expect((await readRows(engine, db, table)).map((r) => r.locked_until?.getTime())).toEqual([other.getTime()]);
  });

  test("outcomes: retry comes back with the next attempt, retryAfter after its delay, drop deletes, a throw backs off (the default onError: under 1 s at attempt 1) and is logged", async () => {
    const { app, sub } = jobsApp(
      url,
      table,
      async (job, ctx) => {
        const attempt = ctx.get(keys.attempt);
        if (job.n === 1) return attempt === 1 ? HandlerOutcome.retry() : HandlerOutcome.ack();
        if (job.n === 2) return attempt === 1 ? HandlerOutcome.retryAfter(seconds(30)) : undefined;
        if (job.n === 3) return HandlerOutcome.drop();
        if (attempt === 1) throw new Error("boom");
        return HandlerOutcome.ack();
      },
      (q) => q.workers(4).batch(4),
    );
    const t = track(await TestApp.start(app));
    for (const n of [1, 2, 3, 4]) await t.publish("jobs", { n });
    await t.advance(seconds(1)); // a poll interval: the retried rows come back
    const byN = (n: number) =>
      t
        .calls(sub)
        .filter((c) => (c.payload as { n: number }).n === n)
        .map((c) => [c.attempt, c.outcome?.kind]);
    expect(byN(1)).toEqual([
      [1, "retry"],
      [2, "ack"],
    ]);
    expect(byN(3)).toEqual([[1, "drop"]]);
    expect(byN(4)).toEqual([
      [1, "retryAfter"],
      [2, "ack"],
    ]);
    expect(byN(2)).toEqual([[1, "retryAfter"]]);
    const failed = t.logs.find("handler failed")[0];
    expect(failed?.fields).toMatchObject({ subscription: "jobs", table, attempt: 1 });
    expect(failed?.fields["id"]).toBeDefined();
    await t.advance(seconds(30));
    expect(byN(2)).toEqual([
      [1, "retryAfter"],
      [2, "ack"],
    ]);
    expect(await readRows(engine, db, table)).toEqual([]);
  });

  test("polling: claims again at once while claims come back full; rows written by other means wait for the poll (on a shared SQLite file, they wake it); a publish wakes at once", async () => {
    const { app, sub } = jobsApp(
      url,
      table,
      async () => HandlerOutcome.ack(),
      (q) => q.pollInterval(seconds(5)),
    );
    for (const n of [1, 2, 3]) await insertRaw(db, table, { payload: json({ n }) });
    const t = track(await TestApp.start(app));
    expect(t.calls(sub)).toHaveLength(3); // three full claims of one row, no wait between
    // `db` is a connection of its own: another process, as far as the app can tell.
    await insertRaw(db, table, { payload: json({ n: 4 }) });
    if (dialectFor(engine.engine).capabilities.fileWakes) {
      // The app watches the database file: another connection's commit wakes it, with no clock movement.
      await t.waitFor(() => t.calls(sub).length === 4, 2000, "the row another connection wrote");
    } else {
      await t.advance(seconds(4.9));
      expect(t.calls(sub)).toHaveLength(3);
      await t.advance(seconds(0.1));
      expect(t.calls(sub)).toHaveLength(4);
    }
    await t.publish("jobs", { n: 5 }); // no clock movement
    expect(t.calls(sub)).toHaveLength(5);
  });

  test("a payload that cannot be decoded is kept, logged with subscription, table and id, and never given to the handler", async () => {
    const { app, sub } = jobsApp(url, table, async () => HandlerOutcome.ack());
    await insertRaw(db, table, { payload: Buffer.from("{not json") });
    const t = track(await TestApp.start(app));
    expect(t.calls(sub)).toHaveLength(0);
    const [row] = await readRows(engine, db, table);
    expect(row?.payload).toBe("{not json");
    const logged = t.logs.find("payload cannot be decoded");
    expect(logged[0]?.level).toBe("error");
    expect(logged[0]?.fields).toMatchObject({ subscription: "jobs", table, id: expect.anything() });
    expect(Number(logged[0]?.fields["id"])).toBe(row?.id);
    await t.advance(seconds(2)); // hidden for a lease term, then tried again: never lost
    // The same failure again is counted, not written again; a summary with the count follows within 30 s.
    expect(t.logs.find("payload cannot be decoded")).toHaveLength(1);
    // The column holds the attempt the next claim delivers: two claims counted it from 1 to 3.
    expect((await readRows(engine, db, table)).map((r) => r.attempt)).toEqual([3]);
    await t.advance(seconds(30));
    const summary = t.logs.find("payload cannot be decoded")[1];
    expect(summary?.message).toMatch(/ \(still failing: \d+ more time\(s\) in 3\d s\)$/);
    expect(summary?.fields).toMatchObject({ subscription: "jobs", table, repeats: expect.any(Number) });
  });

  test("graceful stop: no more claims or extensions; in-flight deliveries settle within the grace; later settlements and publishes fail with Closed", async () => {
    const clock = new PausedClock();
    const { app, sub, broker } = jobsApp(
      url,
      table,
      async (job, ctx) => void (await ctx.sleep(job.n === 1 ? seconds(1.5) : seconds(20))),
      (q) => q.workers(2).batch(2),
      { shutdownGrace: seconds(5) },
    );
    const t = await TestApp.start(app, { clock });
    await t.publish("jobs", { n: 1 });
    await t.publish("jobs", { n: 2 });
    const stopped = t.stop();
    await stopped;
    const [quick, slow] = t.calls(sub);
    expect(quick?.outcome?.kind).toBe("ack");
    expect(quick?.error).toBeUndefined();
    expect(t.logs.find("leases extended")).toHaveLength(0); // the keeper stopped with the claims
    // The slow one outlived the grace: abandoned, its signal aborted; its late ack fails with Closed and changes nothing.
    await t.advance(seconds(20));
    expect(slow?.signalAborted).toBe(true);
    expect((slow?.error as SqlInboxError | undefined)?.code).toBe("Closed");
    const rows = await readRows(engine, db, table);
    expect(rows.map((r) => [JSON.parse(r.payload), r.attempt])).toEqual([[{ n: 2 }, 2]]); // its claim counted 1 → 2
    await expect(broker.publish("jobs", { n: 3 })).rejects.toMatchObject({ code: "Closed" });
  });
});
