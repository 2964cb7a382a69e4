import { column, InboxSpec } from "@sqlinbox/core";
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { ControlledTransaction } from "kysely";
import { expect, test } from "vitest";
import type { HeldLease } from "../../src/index.js";
import { claimLease, claimRowLocked, jobsTable, publish, seconds } from "./helpers.js";
import { affected, run, type LiveEngine } from "../support/servers.js";

const GROUP = "g";

const fifoRowLock = (table: string): InboxDescription =>
  InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .payload(column("payload"))
    .retryAfter(column("retry_after"))
    .group(column("grp"))
    .priority(column("priority"))
    .fifo().description;

const fifoLease = (table: string): InboxDescription =>
  InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .payload(column("payload"))
    .retryAfter(column("retry_after"))
    .group(column("grp"))
    .priority(column("priority"))
    .fifo().description;

/**
 * FIFO heads and the race the head rule must survive, statement by statement on a live engine
 * (row lock: Postgres and MariaDB; lease: every engine, the in-flight claim on row-lock engines).
 */
export function fifoScenarios(get: () => LiveEngine): void {
  test("fifo lease: the head is the first due row in claim order; a row in work stays the head; a delayed head moves behind", async () => {
    const engine = get();
    const { lease, time } = engine.dialect;
    const table = await jobsTable(engine, "fifo_head");
    const spec = fifoLease(table);
    const now = new Date();
    const until = new Date(now.getTime() + seconds(30));
    const inAnHour = new Date(now.getTime() + seconds(3600));
    const options = { limit: 5, now, until, precision: engine.precision, group: GROUP };
    const held = (id: number): HeldLease => ({ id, held: time.truncate(until, engine.precision) });
    const ack = async (id: number) => expect(affected(await run(engine.db, lease.settleAck(spec, held(id), now, engine.precision)))).toBe(1);
    const [x, y, , better] = await publish(engine, spec, [
      { payload: "x", grp: GROUP, priority: 5 },
      { payload: "y", grp: GROUP, priority: 5 },
      { payload: "delayed", grp: GROUP, priority: 0, retry_after: time.encode(inAnHour, 3) },
      { payload: "better", grp: GROUP, priority: 1 },
      { payload: "other group", grp: "h", priority: -9 },
    ]);
    // Priority 1, published after the priority 5 rows, goes first; the delayed priority 0 row does not block the group.
    expect(await claimLease(engine, spec, options)).toEqual([better]);
    // In work it stays the head, even against a row published now with a better priority.
    const [best] = await publish(engine, spec, [{ payload: "best", grp: GROUP, priority: -1 }]);
    expect(await claimLease(engine, spec, options)).toEqual([]);
    await ack(better as number);
    expect(await claimLease(engine, spec, options)).toEqual([best]);
    await ack(best as number);
    expect(await claimLease(engine, spec, options)).toEqual([x]);
    // The handler delays x: it moves behind y.
    expect(affected(await run(engine.db, lease.settleRetry(spec, held(x as number), inAnHour, engine.precision)))).toBe(1);
    expect(await claimLease(engine, spec, options)).toEqual([y]);
  });
}

/** The row-lock engines' races: a row in work is a lock a plain read cannot see. */
export function fifoRaceScenarios(get: () => LiveEngine): void {
  test("fifo row lock: while the head is held, a row published with a better priority is not claimable", async () => {
    const engine = get();
    const rowLock = engine.dialect.rowLock;
    if (!engine.dialect.capabilities.rowLock) throw new Error(`${engine.name} has no row lock`);
    const table = await jobsTable(engine, "fifo_rl_race");
    const spec = fifoRowLock(table);
    const now = new Date();
    const [head] = await publish(engine, spec, [{ payload: "head", grp: GROUP, priority: 5 }]);
    const open: Tx[] = [];
    try {
      const a = await claimRowLocked(engine, spec, { limit: 1, now, group: GROUP });
      open.push(a.tx);
      expect(a.ids).toEqual([head]);
      const [better] = await publish(engine, spec, [{ payload: "better", grp: GROUP, priority: 0 }]);
      // Another session: the head's lock is skipped, so the group is given up (not `better`).
      const b = await claimRowLocked(engine, spec, { limit: 1, now, group: GROUP });
      open.push(b.tx);
      expect(b.ids).toEqual([]);
      await b.tx.rollback().execute();
      expect(affected(await run(a.tx, rowLock.settleAck(spec, head, now)))).toBe(1);
      await a.tx.commit().execute();
      const c = await claimRowLocked(engine, spec, { limit: 1, now, group: GROUP });
      open.push(c.tx);
      expect(c.ids).toEqual([better]);
    } finally {
      await endAll(open);
    }
  });

  test("fifo lease: a claim not yet committed keeps the group from a better priority published meanwhile", async () => {
    const engine = get();
    const table = await jobsTable(engine, "fifo_ls_race");
    const spec = fifoLease(table);
    const { lease, capabilities } = engine.dialect;
    const now = new Date();
    const until = new Date(now.getTime() + seconds(30));
    const options = { limit: 1, now, until, precision: engine.precision, group: GROUP };
    const [head] = await publish(engine, spec, [{ payload: "head", grp: GROUP, priority: 5 }]);
    // Claim A runs in a transaction left open: its lease is written but not committed.
    let begin = engine.db.startTransaction();
    if (capabilities.claimIsolation !== undefined) begin = begin.setIsolationLevel(capabilities.claimIsolation);
    const a = await begin.execute();
    try {
      let claimed: number[];
      if (lease.claimsInOneStatement) {
        claimed = (await run(a, lease.claim(spec, options))).rows.map((r) => Number(r[spec.id.name]));
      } else {
        const fifoLocked = (await run(a, lease.lockFifoGroup(spec, options))).rows.length;
        claimed = (await run(a, lease.selectClaimable(spec, { ...options, fifoLocked }))).rows.map((r) => Number(r[spec.id.name]));
        await run(a, lease.stampClaimed(spec, claimed, until, engine.precision));
      }
      expect(claimed).toEqual([head]);
      const [better] = await publish(engine, spec, [{ payload: "better", grp: GROUP, priority: 0 }]);
      // B cannot see A's lease yet, but A's lock on the head makes B give the group up.
      expect(await claimLease(engine, spec, options)).toEqual([]);
      await a.commit().execute();
      // Committed: the head is in work and ranks first.
      expect(await claimLease(engine, spec, options)).toEqual([]);
      const held: HeldLease = { id: head, held: engine.dialect.time.truncate(until, engine.precision) };
      expect(affected(await run(engine.db, lease.settleAck(spec, held, now, engine.precision)))).toBe(1);
      expect(await claimLease(engine, spec, options)).toEqual([better]);
    } finally {
      await endAll([a]);
    }
  });
}

// biome-ignore lint/suspicious/noExplicitAny: test tables are created at run time
type Tx = ControlledTransaction<any>;

/** Rolls back what a failed test left open, so the table can be dropped. */
async function endAll(open: readonly Tx[]): Promise<void> {
  for (const tx of open)
    if (!tx.isCommitted && !tx.isRolledBack)
      await tx
        .rollback()
        .execute()
        .catch(() => undefined);
}
