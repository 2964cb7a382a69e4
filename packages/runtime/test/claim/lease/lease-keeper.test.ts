/**
 * The lease keeper on every engine: it extends the leases in work, and a lease whose row was
 * claimed again (its token replaced) is lost, its delivery's signal aborted with `LeaseLost`,
 * even when this process holds the newer lease of the same row.
 */
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Activity } from "../../../src/activity.js";
import { systemClock } from "../../../src/clock.js";
import { Database, type AnyKysely } from "../../../src/drivers/database.js";
import { type KeptLease, LeaseKeeper } from "../../../src/claim/lease/lease-keeper.js";
import { MemoryLogger } from "../../../src/testing/index.js";
import { until } from "../../support/claim-forms.js";
import { engines, unique } from "../../support/engines.js";
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";

const LEASE_MS = 400;

describe.each(engines)("lease keeper on $name", (engine) => {
  let db: AnyKysely;
  const table = unique("rt_keeper");
  beforeAll(async () => {
    db = await engine.connect(engine.url());
    await engine.createLeaseTable(db, table);
  });
  afterAll(async () => {
    await engine.dropTable(db, table);
    await db.destroy();
    engine.cleanup();
  });

  async function rowWithToken(token: Date): Promise<number> {
    await sql`DELETE FROM ${sql.id(table)}`.execute(db);
    await sql`INSERT INTO ${sql.id(table)} (id, locked_until, payload) VALUES (1, ${engine.time(token)}, ${Buffer.from("{}")})`.execute(db);
    return 1;
  }

  function keeperOn(logger: MemoryLogger, on = table): LeaseKeeper {
    const dialect = dialectFor(engine.engine);
    const database = new Database(db, dialect, logger, new Activity());
    database.readsTimeAsDate = engine.engine === "postgres";
    const spec = InboxSpec.table(on, column("id").generated())
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .payload(column("payload"), payloadOf<unknown>()).description;
    return new LeaseKeeper({ database, spec, subscription: "jobs", leaseMs: LEASE_MS, precision: 3, clock: systemClock, logger });
  }

  /** Runs the keeper until `lease` holds a token other than `token` (one extension), then stops it. */
  async function untilExtended(keeper: LeaseKeeper, lease: KeptLease, token: Date): Promise<void> {
    keeper.start();
    try {
      await until(() => lease.held.getTime() !== token.getTime(), 3_000, "the extension");
    } finally {
      keeper.stop();
    }
  }

  test("a lease in work is extended: its token and the row's deadline move on together", async () => {
    const token = new Date(Math.floor(Date.now() / 1000) * 1000 + 60_000);
    const id = await rowWithToken(token);
    const keeper = keeperOn(new MemoryLogger());
    const lease = keeper.hold(id, token);
    await untilExtended(keeper, lease, token);
    expect(lease.aborted).toBe(false);
    const { rows } = await sql<{ locked_until: unknown }>`SELECT locked_until FROM ${sql.id(table)}`.execute(db);
    expect(dialectFor(engine.engine).time.decode(rows[0]?.locked_until)?.getTime()).toBe(lease.held.getTime());
  });

  test("a row held twice (claimed again after its first lease ran out unnoticed): the older lease is lost, the newer one is extended", async () => {
    const base = Math.floor(Date.now() / 1000) * 1000;
    const stale = new Date(base - 5_000);
    const current = new Date(base + 60_000);
    const id = await rowWithToken(current);
    const logger = new MemoryLogger();
    const keeper = keeperOn(logger);
    const older = keeper.hold(id, stale);
    const newer = keeper.hold(id, current);
    expect(keeper.size).toBe(2);
    await untilExtended(keeper, newer, current);
    expect(older.aborted).toBe(true);
    expect(older.signal.reason).toMatchObject({ code: "LeaseLost" });
    expect(older.held.getTime()).toBe(stale.getTime());
    expect(newer.aborted).toBe(false);
    expect(keeper.size).toBe(1);
    expect(logger.find("lease lost")).toHaveLength(1);
  });
  test("a lease claimed ahead: not lapsed while extensions go well; lapsed once lost, or past its deadline while they fail", async () => {
    const logger = new MemoryLogger();
    const healthy = keeperOn(logger);
    // Extensions in good health: a deadline in the past is not looked at (no clock read per delivery)…
    expect(healthy.lapsed(healthy.hold(1, new Date(Date.now() - 1_000)))).toBe(false);
    // …but a lease the keeper lost is.
    const lost = healthy.hold(2, new Date(Date.now() + 10_000));
    lost.abort(new Error("lost"));
    expect(healthy.lapsed(lost)).toBe(true);

    // Extensions failing (the keeper's table is gone): deadlines are read.
    const failing = keeperOn(logger, unique("rt_keeper_missing"));
    failing.hold(3, new Date(Date.now() + 10_000));
    failing.start();
    try {
      await until(() => logger.records.some((r) => r.message.startsWith("lease extension failed")), 5_000, "a failed extension");
    } finally {
      failing.stop();
    }
    expect(failing.lapsed(failing.hold(4, new Date(Date.now() + 10_000)))).toBe(false);
    const late = failing.hold(5, new Date(Date.now() - 1));
    expect(failing.lapsed(late)).toBe(true);
    expect(late.signal.aborted).toBe(true);
    expect(logger.records.filter((r) => r.message === "lease lost: it ran out before its delivery started").map((r) => r.fields["id"])).toEqual([5]);
  });
});
