import { column, InboxSpec, type InboxDescription } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { advisoryKeyOf, dialectFor } from "../../src/internal.js";
import { operatorFor, waitingOf, type DeadLetterPlace } from "../../src/operator/index.js";
import { claimLease, claimRowLocked, jobsTable, publish, readRows } from "../live/helpers.js";
import { fifoRichLease } from "../support/specs.js";
import { connectMariadb, connectPostgres, connectSqlite, run, selects, type Db, type LiveEngine } from "../support/servers.js";

const grouped = (table: string) =>
  InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .payload(column("payload"))
    .retryAfter(column("retry_after"))
    .processedAt(column("processed_at"))
    .group(column("grp")).description;
const fifoRowLocked = (table: string) =>
  InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).payload(column("payload")).group(column("grp")).fifo().description;
const rowLocked = (table: string) =>
  InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).payload(column("payload")).group(column("grp")).description;
const advisory = (table: string) =>
  InboxSpec.table(table, column("id").generated()).payload(column("payload")).data(column("customer_id")).advisoryLock("c-{customer_id}").description;

const num = (v: unknown): number => Number(v);
const affectedRows = (result: { numAffectedRows?: bigint }): number => Number(result.numAffectedRows ?? 0n);

/** Runs the operator statements of the engine against a real server. */
function operatorScenarios(get: () => LiveEngine): void {
  const ops = () => operatorFor(get().dialect.capabilities.engine);

  test("countByState: done, leased, delayed and claimable rows per group, against the host's now", async () => {
    const engine = get();
    const spec = grouped(await jobsTable(engine, "op_count"));
    const now = new Date();
    const enc = (ms: number) => engine.dialect.time.encode(new Date(now.getTime() + ms), 3);
    await publish(engine, spec, [
      { payload: "ready", grp: "a" },
      { payload: "ready2", grp: "a" },
      { payload: "leased", grp: "a", locked_until: enc(60_000) },
      { payload: "expired lease", grp: "a", locked_until: enc(-60_000) },
      { payload: "delayed", grp: "b", retry_after: enc(60_000) },
      { payload: "done", grp: "b", processed_at: enc(-1000) },
    ]);
    const rows = (await run(engine.db, ops().countByState({ spec }, now))).rows;
    const byGroup = Object.fromEntries(rows.map((r) => [String(r.grp), [r.total, r.done, r.leased, r.delayed, r.claimable].map(num)]));
    expect(byGroup).toEqual({ a: [4, 0, 1, 0, 3], b: [2, 1, 0, 1, 0] });
    const expiring = (await run(engine.db, ops().expiringLeases(spec, now, new Date(now.getTime() + 120_000), 10))).rows;
    expect(expiring.map((r) => num(r.attempt))).toEqual([1]);
    const histogram = (await run(engine.db, ops().attemptHistogram(spec))).rows;
    expect(histogram.map((r) => [String(r.grp), num(r.attempt), num(r.rows)])).toEqual([
      ["a", 1, 4],
      ["b", 1, 1],
    ]);
  });

  test("fifo: ready is each group's head, exactly the rows the claim takes next; the due rows behind it are waiting", async () => {
    const engine = get();
    const spec = fifoRichLease(await jobsTable(engine, "op_fifo"));
    const now = new Date();
    const enc = (ms: number) => engine.dialect.time.encode(new Date(now.getTime() + ms), 3);
    const ids = await publish(engine, spec, [
      // a: the head is in work (a live lease); a better priority published after it waits behind it.
      { payload: "a leased head", grp: "a", priority: 5, locked_until: enc(60_000) },
      { payload: "a better priority", grp: "a", priority: 0 },
      { payload: "a due", grp: "a", priority: 5 },
      { payload: "a delayed", grp: "a", priority: 0, retry_after: enc(60_000) },
      // b: the head is due (priority 1 before 5; never delayed before a past retry_after); a delayed priority 0 row does not block it.
      { payload: "b due", grp: "b", priority: 5 },
      { payload: "b head", grp: "b", priority: 1 },
      { payload: "b delayed", grp: "b", priority: 0, retry_after: enc(60_000) },
      { payload: "b expired lease", grp: "b", priority: 5, locked_until: enc(-60_000) },
      { payload: "b was delayed", grp: "b", priority: 1, retry_after: enc(-60_000) },
      { payload: "b done", grp: "b", priority: 0, processed_at: enc(-1000) },
      // c: only a delayed row; d: one due row, its own head.
      { payload: "c delayed", grp: "c", priority: 0, retry_after: enc(60_000) },
      { payload: "d alone", grp: "d", priority: 0 },
    ]);
    const payloads = [
      "a leased head",
      "a better priority",
      "a due",
      "a delayed",
      "b due",
      "b head",
      "b delayed",
      "b expired lease",
      "b was delayed",
      "b done",
      "c delayed",
      "d alone",
    ];
    const id = (payload: string) => ids[payloads.indexOf(payload)] as number;
    const rows = (await run(engine.db, ops().countByState({ spec }, now))).rows;
    const byGroup = Object.fromEntries(rows.map((r) => [String(r.grp), [r.total, r.done, r.leased, r.delayed, r.claimable, waitingOf(spec, r)].map(num)]));
    expect(byGroup).toEqual({ a: [4, 0, 1, 1, 0, 2], b: [6, 1, 0, 1, 1, 3], c: [1, 0, 0, 1, 0, 0], d: [1, 0, 0, 0, 1, 0] });
    const peek = async (state: "ready" | "waiting") => (await run(engine.db, ops().peek({ spec }, { state, now, limit: 100 }))).rows.map((r) => num(r.id));
    const ready = await peek("ready");
    expect(ready).toEqual([id("b head"), id("d alone")]);
    expect(await peek("waiting")).toEqual(["a better priority", "a due", "b due", "b expired lease", "b was delayed"].map(id));
    // The claim's own statement, on the same rows at the same now, takes exactly the ready rows.
    const until = new Date(now.getTime() + 30_000);
    const claimed: number[] = [];
    for (const group of ["a", "b", "c", "d"]) claimed.push(...(await claimLease(engine, spec, { limit: 10, now, until, precision: engine.precision, group })));
    expect(claimed).toEqual(ready);
    // The heads are in work now: nothing is ready, the rows behind them still wait (a leased head is neither); a purge of them deletes those five.
    expect(await peek("ready")).toEqual([]);
    const counted = (await run(engine.db, ops().countByState({ spec }, now))).rows;
    expect(counted.map((r) => [String(r.grp), num(r.leased), num(r.claimable), waitingOf(spec, r)])).toEqual([
      ["a", 1, 0, 2],
      ["b", 1, 0, 3],
      ["c", 0, 0, 0],
      ["d", 1, 0, 0],
    ]);
    expect(affectedRows(await run(engine.db, ops().purge({ spec }, { state: "waiting", now })))).toBe(5);
    expect(await peek("waiting")).toEqual([]);
  });

  test("order key: ready is each key's head, exactly the rows the claim takes next; the due rows behind it, and a head whose key holds a live lease, are waiting", async () => {
    const engine = get();
    const table = await jobsTable(engine, "op_ordered");
    // The jobs table's grp column plays the order key here.
    const spec = InboxSpec.table(table, column("id").generated())
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .payload(column("payload"))
      .retryAfter(column("retry_after"))
      .processedAt(column("processed_at"))
      .priority(column("priority"))
      .orderKey(column("grp")).description;
    const now = new Date();
    const enc = (ms: number) => engine.dialect.time.encode(new Date(now.getTime() + ms), 3);
    const ids = await publish(engine, spec, [
      // a: the head is in work; b: the head is delayed (it holds its key, whatever the priorities); c: the first row is done.
      { payload: "a leased head", grp: "a", priority: 5, locked_until: enc(60_000) },
      { payload: "a due", grp: "a", priority: 0 },
      { payload: "b delayed head", grp: "b", priority: 5, retry_after: enc(60_000) },
      { payload: "b due", grp: "b", priority: 0 },
      { payload: "c done", grp: "c", priority: 0, processed_at: enc(-1000) },
      { payload: "c head", grp: "c", priority: 3 },
      { payload: "c due", grp: "c", priority: 0 },
      { payload: "d alone", grp: "d", priority: 1 },
      // e: a head that committed after a later row of its key went into work; it waits for that row.
      { payload: "e late head", grp: "e", priority: 0 },
      { payload: "e leased", grp: "e", priority: 0, locked_until: enc(60_000) },
    ]);
    const payloads = ["a leased head", "a due", "b delayed head", "b due", "c done", "c head", "c due", "d alone", "e late head", "e leased"];
    const id = (payload: string) => ids[payloads.indexOf(payload)] as number;
    const [row] = (await run(engine.db, ops().countByState({ spec }, now))).rows;
    expect([row?.total, row?.done, row?.leased, row?.delayed, row?.claimable].map(num)).toEqual([10, 1, 2, 1, 2]);
    expect(waitingOf(spec, row ?? {})).toBe(4);
    const peek = async (state: "ready" | "waiting") => (await run(engine.db, ops().peek({ spec }, { state, now, limit: 100 }))).rows.map((r) => num(r.id));
    expect(await peek("ready")).toEqual([id("c head"), id("d alone")]);
    expect(await peek("waiting")).toEqual(["a due", "b due", "c due", "e late head"].map(id));
    // The claim's own statement, on the same rows at the same now, takes exactly the ready rows (in claim order: priority 1, then 3).
    const claimed = await claimLease(engine, spec, { limit: 10, now, until: new Date(now.getTime() + 30_000), precision: engine.precision });
    expect([...claimed].sort((x, y) => x - y)).toEqual([id("c head"), id("d alone")]);
    expect(affectedRows(await run(engine.db, ops().purge({ spec }, { state: "waiting", now })))).toBe(4);
  });

  test("dead letters in a group: retry sets the group back and resets attempt, lease and delay in one statement", async () => {
    const engine = get();
    const spec = grouped(await jobsTable(engine, "op_deadgrp"));
    const place: DeadLetterPlace = { kind: "group", group: "reports", deadGroup: "reports.dead" };
    const [a, b] = await publish(engine, spec, [
      { payload: "x", grp: "reports.dead" },
      { payload: "y", grp: "reports.dead" },
      { payload: "z", grp: "reports" },
    ]);
    await sql`update ${sql.id(spec.table)} set attempt = 5`.execute(engine.db);
    const counted = (await run(engine.db, ops().countDeadLetters(spec, place))).rows;
    expect(counted.map((r) => [r.grp, num(r.rows)])).toEqual([["reports.dead", 2]]);
    await engine.db.transaction().execute(async (trx) => {
      const ids = (await run(trx, ops().lockDeadLetterIds(spec, place, 1))).rows.map((r) => r.id);
      expect(ids.map(num)).toEqual([a]);
      for (const q of ops().retryDeadLetters(spec, place, ids)) await run(trx, q);
    });
    const rows = await readRows(engine.db, spec.table);
    expect(rows.map((r) => [num(r.id), r.grp, num(r.attempt)])).toEqual([
      [a, "reports", 1],
      [b, "reports.dead", 5],
      [b! + 1, "reports", 5],
    ]);
    await run(engine.db, ops().purgeDeadLetters(spec, place));
    expect((await readRows(engine.db, spec.table)).map((r) => r.grp)).toEqual(["reports", "reports"]);
  });

  test("dead letters in a table: insert into the source and delete from the destination, in one transaction", async () => {
    const engine = get();
    const source = grouped(await jobsTable(engine, "op_src"));
    const destination = grouped(await jobsTable(engine, "op_dst"));
    const place: DeadLetterPlace = { kind: "table", destination };
    const ids = await publish(engine, destination, [
      { payload: "p1", grp: "g" },
      { payload: "p2", grp: "g" },
    ]);
    await engine.db.transaction().execute(async (trx) => {
      for (const q of ops().retryDeadLetters(source, place, ids)) await run(trx, q);
    });
    expect((await readRows(engine.db, source.table)).map((r) => [r.payload, r.grp, num(r.attempt), r.locked_until])).toEqual([
      ["p1", "g", 1, null],
      ["p2", "g", 1, null],
    ]);
    expect(await readRows(engine.db, destination.table)).toEqual([]);
  });
}

/** Probes that need a second session holding rows or keys (Postgres, MariaDB). */
function inWorkScenarios(get: () => LiveEngine): void {
  const ops = () => operatorFor(get().dialect.capabilities.engine);

  test("lockableProbe: a row another transaction holds FOR UPDATE is not lockable, so it is in work", async () => {
    const engine = get();
    const spec: InboxDescription = rowLocked(await jobsTable(engine, "op_probe"));
    const [first] = await publish(engine, spec, [
      { payload: "a", grp: "g" },
      { payload: "b", grp: "g" },
      { payload: "c", grp: "h" },
    ]);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = engine.db.transaction().execute(async (trx) => {
      await sql`select id from ${sql.id(spec.table)} where id = ${first} for update`.execute(trx);
      locked();
      await held;
    });
    await isLocked;
    try {
      const lockable = await engine.db.transaction().execute(async (trx) => (await run(trx, ops().lockableProbe(spec, new Date()))).rows);
      expect(lockable.map((r) => num(r.id))).toEqual([first! + 1, first! + 2]);
    } finally {
      release();
      await holder;
    }
  });

  test("lockableProbe beside another probe's open transaction: on Postgres share locks pass each other (only the claim's row is in work); MySQL/MariaDB's probe locks for update and sees them held", async () => {
    const engine = get();
    const spec: InboxDescription = rowLocked(await jobsTable(engine, "op_probe2"));
    const [first] = await publish(engine, spec, [
      { payload: "a", grp: "g" },
      { payload: "b", grp: "g" },
      { payload: "c", grp: "h" },
    ]);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    /** A transaction that runs `statement`, tells it ran, and stays open until the test releases it. */
    const open = (statement: (trx: typeof engine.db) => Promise<unknown>) => {
      let ran!: () => void;
      const done = new Promise<void>((r) => (ran = r));
      const trx = engine.db.transaction().execute(async (t) => {
        await statement(t as unknown as typeof engine.db);
        ran();
        await held;
      });
      return { ran: done, trx };
    };
    // A claim holds the first row; then another operator's probe is mid-transaction, holding what it locked.
    const claim = open((t) => sql`select id from ${sql.id(spec.table)} where id = ${first} for update`.execute(t));
    await claim.ran;
    const other = open((t) => run(t, ops().lockableProbe(spec, new Date())));
    await other.ran;
    try {
      const lockable = await engine.db.transaction().execute(async (trx) => (await run(trx, ops().lockableProbe(spec, new Date()))).rows);
      expect(lockable.map((r) => num(r.id))).toEqual(engine.dialect.capabilities.engine === "postgres" ? [first! + 1, first! + 2] : []);
    } finally {
      release();
      await claim.trx;
      await other.trx;
    }
  });

  test("fifo row lock: a group a claim holds has its head ready by state but not lockable (in work); the rows behind it wait", async () => {
    const engine = get();
    const spec = fifoRowLocked(await jobsTable(engine, "op_fifo_rl"));
    const [g1, g2, g3, h1, h2] = await publish(engine, spec, [
      { payload: "g1", grp: "g" },
      { payload: "g2", grp: "g" },
      { payload: "g3", grp: "g" },
      { payload: "h1", grp: "h" },
      { payload: "h2", grp: "h" },
    ]);
    const now = new Date();
    // The real claim: it locks group g's rows and takes its head.
    const claim = await claimRowLocked(engine, spec, { limit: 1, now, group: "g" });
    try {
      expect(claim.ids).toEqual([g1]);
      const counts = (await run(engine.db, ops().countByState({ spec }, now))).rows;
      expect(counts.map((r) => [String(r.grp), num(r.claimable), waitingOf(spec, r)])).toEqual([
        ["g", 1, 2],
        ["h", 1, 1],
      ]);
      const waiting = (await run(engine.db, ops().peek({ spec }, { state: "waiting", now, limit: 10 }))).rows.map((r) => num(r.id));
      expect(waiting).toEqual([g2, g3, h2]);
      // The probe sees only the heads, and cannot take g's: g has one row in work, h none.
      const lockable = await engine.db.transaction().execute(async (trx) => (await run(trx, ops().lockableProbe(spec, now))).rows);
      expect(lockable.map((r) => num(r.id))).toEqual([h1]);
    } finally {
      await claim.tx.rollback().execute();
    }
  });

  test("heldAdvisoryKeys: a key another session locked is reported held, others are not", async () => {
    const engine = get();
    const spec = advisory(await jobsTable(engine, "op_adv"));
    await publish(engine, spec, [
      { payload: "a", customer_id: "acme" },
      { payload: "b", customer_id: "beta" },
    ]);
    const candidates = (await run(engine.db, ops().advisoryCandidates(spec, new Date(), 100))).rows;
    const keys = candidates.map((r) => advisoryKeyOf(spec, r));
    await engine.db.connection().execute(async (session: Db) => {
      const lock = engine.dialect.advisory.tryLock(keys[0]!, engine.database);
      await session.executeQuery(lock);
      const held = (await run(engine.db, ops().heldAdvisoryKeys(keys, engine.database))).rows;
      expect(held.map((r) => r.key)).toEqual([keys[0]]);
      await session.executeQuery(engine.dialect.advisory.unlock(keys[0]!, engine.database));
    });
    expect((await run(engine.db, ops().heldAdvisoryKeys(keys, engine.database))).rows).toEqual([]);
  });
}

const engineOf = { PostgreSQL: "postgres", MariaDB: "mariadb", SQLite: "sqlite" } as const;

describe.each(
  (
    [
      ["PostgreSQL", connectPostgres, true],
      ["MariaDB", connectMariadb, true],
      ["SQLite", async () => connectSqlite("memory"), false],
    ] as const
  ).filter(([name]) => selects(engineOf[name])),
)("operator statements on live %s", (_name, connect, sessions) => {
  let engine: LiveEngine | undefined;
  beforeAll(async () => {
    engine = await connect();
  });
  afterAll(async () => {
    await engine?.close();
  });
  const get = (): LiveEngine =>
    engine ??
    (() => {
      throw new Error("not connected: run `bash scripts/services.sh`");
    })();
  operatorScenarios(get);
  if (sessions) inWorkScenarios(get);
  else {
    test("SQLite: no row-lock probe and no held keys from outside the application", () => {
      expect(dialectFor("sqlite").capabilities.rowLock).toBe(false);
      expect(dialectFor("sqlite").capabilities.advisoryLocks).toBe("process");
      expect(() => operatorFor("sqlite").lockableProbe(rowLocked("t"), new Date())).toThrow(/UnsupportedForm: no operator.lockableProbe statement on sqlite: it has no row locks/);
      expect(() => operatorFor("sqlite").heldAdvisoryKeys(["t:c-1"], "main")).toThrow(/UnsupportedForm: no operator.heldAdvisoryKeys statement on sqlite/);
    });
  }
});
