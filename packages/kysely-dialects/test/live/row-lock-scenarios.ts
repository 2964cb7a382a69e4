import { column, InboxSpec } from "@sqlinbox/core";
import { expect, test } from "vitest";
import { affected, run, type LiveEngine } from "../support/servers.js";
import { claimRowLocked, jobsTable, publish, readRows, seconds } from "./helpers.js";

const rowLockSpec = (table: string) => InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).payload(column("payload")).description;

const richSpec = (table: string) =>
  InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .payload(column("payload"))
    .retryAfter(column("retry_after"))
    .processedAt(column("processed_at"))
    .group(column("grp"))
    .priority(column("priority")).description;

/** The row-lock form on a live engine (Postgres, MariaDB). */
export function rowLockScenarios(get: () => LiveEngine): void {
  test("row lock: settleAckMany deletes only its claim's rows, never waiting on rows another claim holds, on a table of 8 rows", async () => {
    const engine = get();
    const table = await jobsTable(engine, "rowlock_ackmany");
    const spec = rowLockSpec(table);
    const ids = await publish(
      engine,
      spec,
      Array.from({ length: 8 }, (_, i) => ({ payload: `p${i}` })),
    );
    const now = new Date();
    const other = await claimRowLocked(engine, spec, { limit: 2, now });
    const mine = await claimRowLocked(engine, spec, { limit: 6, now });
    expect(other.ids).toEqual(ids.slice(0, 2));
    expect(mine.ids).toEqual(ids.slice(2));
    // InnoDB locks every row a DELETE reads: read by a scan of this small table, it would wait for the other
    // claim's rows. Given 1 s, then the other claim rolls back (a waiting DELETE goes on, so the test ends either way).
    const ack = engine.dialect.rowLock.settleAckMany(spec, mine.ids, now);
    expect(ack).not.toBeNull();
    const acking = run(mine.tx, ack!);
    let waited = true;
    try {
      waited = await Promise.race([acking.then(() => false), new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 1_000))]);
    } finally {
      if (waited) await other.tx.rollback().execute();
      const acked = affected(await acking);
      if (waited) await mine.tx.rollback().execute();
      else await mine.tx.commit().execute();
      if (!other.tx.isRolledBack) await other.tx.rollback().execute();
      expect(waited).toBe(false);
      expect(acked).toBe(6);
    }
    expect((await readRows(engine.db, table)).map((r) => Number(r.id))).toEqual(ids.slice(0, 2));
  });

  test("row lock: two sessions claiming concurrently never receive the same row", async () => {
    const engine = get();
    const table = await jobsTable(engine, "rowlock_race");
    const spec = rowLockSpec(table);
    const ids = await publish(
      engine,
      spec,
      Array.from({ length: 10 }, (_, i) => ({ payload: `p${i}` })),
    );
    const now = new Date();
    // One after the other while the first holds its rows…
    const a = await claimRowLocked(engine, spec, { limit: 3, now });
    const b = await claimRowLocked(engine, spec, { limit: 10, now });
    expect(a.ids).toEqual(ids.slice(0, 3));
    expect(b.ids).toEqual(ids.slice(3));
    await a.tx.rollback().execute();
    await b.tx.rollback().execute();
    // …and at the same time.
    const [c, d] = await Promise.all([claimRowLocked(engine, spec, { limit: 5, now }), claimRowLocked(engine, spec, { limit: 5, now })]);
    expect(c.ids.filter((id) => d.ids.includes(id))).toEqual([]);
    expect([...c.ids, ...d.ids].sort((x, y) => x - y)).toEqual(ids);
    await c.tx.commit().execute();
    await d.tx.commit().execute();
    expect((await readRows(engine.db, table)).every((r) => Number(r.attempt) === 2)).toBe(true);
  });

  test("row lock: a rolled-back claim leaves the attempt unchanged; an acked one is gone", async () => {
    const engine = get();
    const table = await jobsTable(engine, "rowlock_rollback");
    const spec = rowLockSpec(table);
    const [id] = await publish(engine, spec, [{ payload: "x" }]);
    const now = new Date();
    const first = await claimRowLocked(engine, spec, { limit: 1, now });
    expect(first.ids).toEqual([id]);
    const inside = await readRows(first.tx, table);
    expect(Number(inside[0]?.attempt)).toBe(2);
    await first.tx.rollback().execute();
    expect(Number((await readRows(engine.db, table))[0]?.attempt)).toBe(1);

    const second = await claimRowLocked(engine, spec, { limit: 1, now });
    expect(second.ids).toEqual([id]);
    expect(affected(await run(second.tx, engine.dialect.rowLock.settleAck(spec, id, now)))).toBe(1);
    await second.tx.commit().execute();
    expect(await readRows(engine.db, table)).toEqual([]);
  });

  test("row lock, every role: group, priority order, retryAfter hides, processedAt marks", async () => {
    const engine = get();
    const table = await jobsTable(engine, "rowlock_roles");
    const spec = richSpec(table);
    const { time } = engine.dialect;
    const now = new Date();
    const [low, high, other, hidden] = await publish(engine, spec, [
      { payload: "low", grp: "g1", priority: 5 },
      { payload: "high", grp: "g1", priority: 1 },
      { payload: "other group", grp: "g2", priority: 0 },
      { payload: "later", grp: "g1", priority: 0, retry_after: time.encode(new Date(now.getTime() + seconds(60)), 3) },
    ]);
    const claim = await claimRowLocked(engine, spec, { limit: 10, now, group: "g1" });
    expect(claim.ids).toEqual([high, low]);
    expect(claim.ids).not.toContain(other);
    expect(claim.ids).not.toContain(hidden);
    const rowLock = engine.dialect.rowLock;
    expect(affected(await run(claim.tx, rowLock.settleAck(spec, high, now)))).toBe(1);
    await run(claim.tx, rowLock.settleRetry(spec, low, new Date(now.getTime() + seconds(60))));
    await claim.tx.commit().execute();
    const rows = new Map((await readRows(engine.db, table)).map((r) => [Number(r.id), r]));
    expect(time.decode(rows.get(high!)?.processed_at)).not.toBeNull();
    const again = await claimRowLocked(engine, spec, { limit: 10, now, group: "g1" });
    expect(again.ids).toEqual([]);
    await again.tx.rollback().execute();
  });
}

/** An order key in the row-lock form: each claimed row's key is locked in the claim's transaction, one slot of perKey. */
export function orderKeyLockScenarios(get: () => LiveEngine): void {
  const orderedSpec = (table: string) =>
    InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).payload(column("payload")).orderKey(column("customer_id")).description;

  test("row lock, order key: a key's slot is held by one transaction at a time, other keys and other slots stay free, and the transaction's end frees it", async () => {
    const engine = get();
    const rowLock = engine.dialect.rowLock;
    const table = await jobsTable(engine, "rowlock_keys");
    const spec = orderedSpec(table);
    const [a1, a2, b1] = (await publish(engine, spec, [
      { payload: "a1", customer_id: "a" },
      { payload: "a2", customer_id: "a" },
      { payload: "b1", customer_id: "b" },
    ])) as [number, number, number];
    const slotOf = async (db: Parameters<typeof run>[0], id: number, slots: number[], perKey?: number) => {
      const rows = (await run(db, rowLock.lockOrderKeys(spec, perKey === undefined ? {} : { perKey }, [id], slots))).rows;
      const slot = rows[0]?.order_slot;
      return slot === null || slot === undefined ? null : Number(slot);
    };
    const first = await claimRowLocked(engine, spec, { limit: 5, now: new Date() });
    // The claim takes each key's head: a1 and b1.
    expect(first.ids).toEqual([a1, b1]);
    expect(await slotOf(first.tx, a1, [0])).toBe(0);
    const other = await engine.db.startTransaction().execute();
    try {
      // Key a's slot 0 is the first transaction's; key b's is free; a second slot (perKey 2) of key a is free.
      expect(await slotOf(other, a2, [0])).toBeNull();
      expect(await slotOf(other, b1, [0])).toBe(0);
      expect(await slotOf(other, a2, [0, 1], 2)).toBe(1);
    } finally {
      if (rowLock.orderKeyLocksOutliveTransaction) await run(other, rowLock.releaseOrderKeys());
      await other.rollback().execute();
    }
    if (rowLock.orderKeyLocksOutliveTransaction) await run(first.tx, rowLock.releaseOrderKeys());
    await first.tx.rollback().execute();
    const after = await engine.db.startTransaction().execute();
    try {
      expect(await slotOf(after, a2, [0])).toBe(0);
    } finally {
      if (rowLock.orderKeyLocksOutliveTransaction) await run(after, rowLock.releaseOrderKeys());
      await after.rollback().execute();
    }
  });
}
