import { expect, test } from "vitest";
import { checkSchema, type HeldLease } from "../../src/internal.js";
import { affected, run, type LiveEngine } from "../support/servers.js";
import { ackMany, claimLease, jobsTable, publish, readRows, retryingDeadlocks, seconds, seedSpec } from "./helpers.js";

/** The lease form on a live engine. `leaseTypes`: column types whose read-back must equal the token. */
export function leaseScenarios(get: () => LiveEngine, leaseTypes: readonly string[], concurrent: boolean): void {
  test("lease: a claim skips a row whose lease is valid and takes one whose lease expired, counting an attempt", async () => {
    const engine = get();
    const table = await jobsTable(engine, "lease_skip");
    const spec = seedSpec(table);
    const { time } = engine.dialect;
    const now = new Date();
    const [valid, expired, fresh] = await publish(engine, spec, [
      { payload: "valid", locked_until: time.encode(new Date(now.getTime() + seconds(60)), engine.precision) },
      { payload: "expired", locked_until: time.encode(new Date(now.getTime() - seconds(60)), engine.precision) },
      { payload: "fresh" },
    ]);
    const until = new Date(now.getTime() + seconds(30));
    const claimed = await claimLease(engine, spec, { limit: 10, now, until, precision: engine.precision });
    expect(claimed.sort()).toEqual([expired, fresh].sort());
    const rows = await readRows(engine.db, table);
    const byId = new Map(rows.map((r) => [Number(r.id), r]));
    expect(Number(byId.get(valid!)?.attempt)).toBe(1);
    expect(Number(byId.get(expired!)?.attempt)).toBe(2);
    expect(time.decode(byId.get(expired!)?.locked_until)).toEqual(time.truncate(until, engine.precision));
    // Claimed rows are held now: a second claim at the same time finds nothing.
    expect(await claimLease(engine, spec, { limit: 10, now, until, precision: engine.precision })).toEqual([]);
  });

  test("lease: an extension or settlement with a stale token changes nothing and reports so", async () => {
    const engine = get();
    const table = await jobsTable(engine, "lease_stale");
    const spec = seedSpec(table);
    const { time, lease, capabilities } = engine.dialect;
    const p = engine.precision;
    const now = new Date();
    const [id] = await publish(engine, spec, [{ payload: "x" }]);
    const until = new Date(now.getTime() + seconds(30));
    expect(await claimLease(engine, spec, { limit: 1, now, until, precision: p })).toEqual([id]);
    const held: HeldLease = { id, held: time.truncate(until, p) };
    const stale: HeldLease = { id, held: new Date(held.held.getTime() - seconds(5)) };
    const later = new Date(until.getTime() + seconds(30));

    // Where `extend` returns ids, the ids tell which took; elsewhere the affected count (and readLeases) does.
    const took = (result: Awaited<ReturnType<typeof run>>): number => (capabilities.updateReturning ? result.rows.length : affected(result));
    const staleExtend = await run(engine.db, lease.extend(spec, [stale], later, p));
    expect(staleExtend.rows).toEqual([]);
    expect(took(staleExtend)).toBe(0);
    const read = await run(engine.db, lease.readLeases(spec, [id]));
    expect(time.decode(read.rows[0]?.locked_until)).toEqual(held.held);

    expect(affected(await run(engine.db, lease.settleAck(spec, stale, now, p)))).toBe(0);
    expect(affected(await run(engine.db, lease.settleRetry(spec, stale, null, p)))).toBe(0);
    expect(await readRows(engine.db, table)).toHaveLength(1);

    // The right token extends (and reports the id), then the old token is stale too.
    const extended = await run(engine.db, lease.extend(spec, [held], later, p));
    if (capabilities.updateReturning) expect(extended.rows.map((r) => Number(r.id))).toEqual([id]);
    expect(took(extended)).toBe(1);
    expect(affected(await run(engine.db, lease.settleAck(spec, held, now, p)))).toBe(0);
    const current: HeldLease = { id, held: time.truncate(later, p) };

    // Retry with the current token releases the row without counting an attempt.
    expect(affected(await run(engine.db, lease.settleRetry(spec, current, null, p)))).toBe(1);
    const [row] = await readRows(engine.db, table);
    expect(row?.locked_until).toBeNull();
    expect(Number(row?.attempt)).toBe(2);

    // Claimed again: the ack with the new token deletes it.
    const again = new Date(now.getTime() + seconds(45));
    expect(await claimLease(engine, spec, { limit: 1, now, until: again, precision: p })).toEqual([id]);
    expect(affected(await run(engine.db, lease.settleAck(spec, { id, held: time.truncate(again, p) }, now, p)))).toBe(1);
    expect(await readRows(engine.db, table)).toHaveLength(0);
  });

  test("lease: a batched ack deletes exactly the rows still holding their tokens and names them; a lost lease is never reported acked", async () => {
    const engine = get();
    const table = await jobsTable(engine, "lease_ack_many");
    const spec = seedSpec(table);
    const { time, lease } = engine.dialect;
    const p = engine.precision;
    const now = new Date();
    const ids = await publish(engine, spec, [{ payload: "a" }, { payload: "b" }, { payload: "c" }, { payload: "d" }]);
    const until = new Date(now.getTime() + seconds(30));
    expect((await claimLease(engine, spec, { limit: 4, now, until, precision: p })).sort()).toEqual(ids);
    const token = time.truncate(until, p);
    const [a, b, c, d] = ids as [number, number, number, number];
    // b was taken by another claim (its lease moved), d was deleted by someone else.
    const taken = new Date(token.getTime() + seconds(60));
    expect(affected(await run(engine.db, lease.extend(spec, [{ id: b, held: token }], taken, p)))).toBeGreaterThanOrEqual(0);
    expect(affected(await run(engine.db, lease.settleAck(spec, { id: d, held: token }, now, p)))).toBe(1);
    const acked = await ackMany(
      engine,
      spec,
      ids.map((id) => ({ id, held: token })),
      now,
      p,
    );
    expect(acked.sort()).toEqual([a, c]);
    const left = await readRows(engine.db, table);
    expect(left.map((r) => Number(r.id))).toEqual([b]);
    expect(time.decode(left[0]?.locked_until)).toEqual(time.truncate(taken, p));
    // Again with the same tokens: nothing is held any more, nothing is acked.
    expect(
      await ackMany(
        engine,
        spec,
        ids.map((id) => ({ id, held: token })),
        now,
        p,
      ),
    ).toEqual([]);
    expect(await readRows(engine.db, table)).toHaveLength(1);
  });

  test("lease: releaseUnstarted gives rows back with the claim's attempt undone, only while the token holds", async () => {
    const engine = get();
    const table = await jobsTable(engine, "lease_release");
    const spec = seedSpec(table);
    const { time, lease, capabilities } = engine.dialect;
    const p = engine.precision;
    const now = new Date();
    const [x, y] = (await publish(engine, spec, [{ payload: "x" }, { payload: "y" }])) as [number, number];
    const until = new Date(now.getTime() + seconds(30));
    await claimLease(engine, spec, { limit: 2, now, until, precision: p });
    const token = time.truncate(until, p);
    const stale = new Date(token.getTime() - seconds(5));
    const result = await run(
      engine.db,
      lease.releaseUnstarted(
        spec,
        [
          { id: x, held: token },
          { id: y, held: stale },
        ],
        p,
      ),
    );
    if (capabilities.updateReturning) expect(result.rows.map((r) => Number(r.id))).toEqual([x]);
    else expect(affected(result)).toBe(1);
    const rows = new Map((await readRows(engine.db, table)).map((r) => [Number(r.id), r]));
    expect(rows.get(x)?.locked_until).toBeNull();
    // The test table's attempt starts at 1 and the claim made it 2.
    expect(Number(rows.get(x)?.attempt)).toBe(1);
    expect(time.decode(rows.get(y)?.locked_until)).toEqual(token);
    expect(Number(rows.get(y)?.attempt)).toBe(2);
    // The next claim counts the attempt once: the released row reads 2 again, as if never claimed before.
    await claimLease(engine, spec, { limit: 2, now, until: new Date(until.getTime() + seconds(1)), precision: p });
    expect(Number((await readRows(engine.db, table)).find((r) => Number(r.id) === x)?.attempt)).toBe(2);
  });

  test.each(leaseTypes)("lease: a deadline read back from a %s column equals the token written", async (leaseType) => {
    const engine = get();
    const table = await jobsTable(engine, "lease_time", leaseType);
    const spec = seedSpec(table);
    const { time, schema, lease, capabilities } = engine.dialect;
    const found = engine.dialect.readFoundColumns((await run(engine.db, schema.describeTable(table))).rows);
    const precision = checkSchema(spec, found, capabilities.engine)?.precision ?? -1;
    expect(precision).toBe(expectedPrecision(leaseType));
    const now = new Date();
    const until = new Date(Math.floor(now.getTime() / 1000) * 1000 + seconds(60) + 789);
    const [id] = await publish(engine, spec, [{ payload: "t" }]);
    expect(await claimLease(engine, spec, { limit: 1, now, until, precision })).toEqual([id]);
    const token = time.truncate(until, precision);
    const read = await run(engine.db, lease.readLeases(spec, [id]));
    expect(time.decode(read.rows[0]?.locked_until)).toEqual(token);
    // The server agrees: the token matches the stored value.
    expect(affected(await run(engine.db, lease.settleAck(spec, { id, held: token }, now, precision)))).toBe(1);
  });

  if (concurrent) {
    test("lease: sessions claiming concurrently never receive the same row", async () => {
      const engine = get();
      const table = await jobsTable(engine, "lease_race");
      const spec = seedSpec(table);
      const ids = await publish(
        engine,
        spec,
        Array.from({ length: 60 }, (_, i) => ({ payload: `p${i}` })),
      );
      const now = new Date();
      const until = new Date(now.getTime() + seconds(60));
      const claimer = async (): Promise<number[]> => {
        const mine: number[] = [];
        for (;;) {
          const got = await retryingDeadlocks(() => claimLease(engine, spec, { limit: 3, now, until, precision: engine.precision }));
          if (got.length === 0) return mine;
          mine.push(...got);
        }
      };
      const results = await Promise.all([claimer(), claimer(), claimer(), claimer()]);
      const all = results.flat();
      expect(new Set(all).size).toBe(all.length);
      expect(all.sort((a, b) => a - b)).toEqual(ids);
      expect(results.filter((r) => r.length > 0).length).toBeGreaterThan(1);
    });
  }
}

function expectedPrecision(type: string): number {
  const m = /\((\d)\)/.exec(type);
  if (m !== null) return Number(m[1]);
  if (/^datetime$/i.test(type)) return 0;
  return /timestamptz/i.test(type) ? 6 : 3;
}
