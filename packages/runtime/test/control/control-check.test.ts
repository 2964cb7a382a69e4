/**
 * The cancel check a subscription asks as each delivery starts, on a real control table (in-memory
 * SQLite): it says how many requests it serves (`requested`), which the subscription reads before
 * asking, so a delivery starts without the check while nothing is to be cancelled; a delivery a
 * request names starts with its signal aborted.
 */
import Database from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { Activity } from "../../src/activity.js";
import type { ClaimedDelivery } from "../../src/claim/claim-strategy.js";
import { ControlWatch } from "../../src/control/control-watch.js";
import type { Subscription } from "../../src/consume/subscription.js";
import { Database as RuntimeDatabase, type AnyKysely } from "../../src/drivers/database.js";
import { createControlTable, silentLogger, systemClock } from "../../src/index.js";

const dialect = dialectFor("sqlite");

describe("the cancel check of a delivery that starts", () => {
  let db: AnyKysely;
  let watch: ControlWatch;
  const interrupted: unknown[] = [];
  // The subscription as the watch serves it: its name and table, not paused, nothing in work.
  const subscription = {
    name: "reports",
    table: "report_jobs",
    paused: false,
    pause: async () => undefined,
    resume: () => undefined,
    interrupt: () => [],
  } as unknown as Subscription;
  const delivery = (id: number) => ({ id, interrupt: (reason: unknown) => void interrupted.push({ id, code: (reason as { code?: string }).code }) }) as unknown as ClaimedDelivery;

  beforeAll(async () => {
    db = new Kysely({ dialect: new SqliteDialect({ database: new Database(":memory:") }) });
    await createControlTable(db);
    const database = new RuntimeDatabase(db, dialect, silentLogger, new Activity());
    watch = new ControlWatch({ database, clock: systemClock, logger: silentLogger, intervalMs: 60_000, tableOf: () => undefined, app: "control-check" });
  });
  afterAll(async () => {
    watch.stop();
    await db.destroy();
  });

  test("requested follows the requests read; a delivery a request names starts with its signal aborted, another does not", async () => {
    const check = watch.checkFor("reports", "report_jobs");
    watch.attach([subscription]);
    await watch.read();
    expect(check.requested).toBe(0);

    for (const query of dialect.control.requestCancel("reports", "7", new Date())) await db.executeQuery(query);
    for (const query of dialect.control.requestCancel("report_jobs", "9", new Date())) await db.executeQuery(query);
    await watch.read();
    expect(check.requested).toBe(2);
    check.starting(delivery(8));
    check.starting(delivery(7));
    check.starting(delivery(9));
    expect(interrupted).toEqual([
      { id: 7, code: "Cancelled" },
      { id: 9, code: "Cancelled" },
    ]);

    await db.deleteFrom("sqlinbox_control").execute();
    await watch.read();
    expect(check.requested).toBe(0);
  });
});
