/**
 * Graceful shutdown of the forms that hold a session (DESIGN §4), on Postgres and MariaDB:
 * a delivery in work finishes within the grace period; one still running after it is given
 * up — the row-lock transaction rolls back (row back, attempt not spent), the advisory lock
 * is released (row back, attempt spent) — and its late settlement and any later publish fail
 * with `Closed`.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ClaimForm } from "@sqlinbox/core/internal";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { deferred } from "../../support/fixtures.js";
import { unique } from "../../support/engines.js";
import { consumer, createJobsTable, deliverySession, dropScope, insertJobs, readJobs, scopedUrl, serverEngines, until } from "../../support/claim-forms.js";

const holding: readonly ClaimForm[] = ["rowLock", "advisory"];
const cases = serverEngines.flatMap((engine) => holding.map((form) => ({ engine, form })));

describe.each(cases)("shutdown on $engine.name × $form", ({ engine, form }) => {
  let base: AnyKysely;
  const scopes: string[] = [];
  const opened: AnyKysely[] = [];
  beforeAll(async () => {
    base = await engine.connect(engine.url());
  });
  afterAll(async () => {
    for (const db of opened) await db.destroy().catch(() => {});
    for (const s of scopes) await dropScope(engine, base, s).catch(() => {});
    await base.destroy();
  });

  async function queue(prefix: string) {
    const scope = unique(`sqlinbox_${prefix}`).toLowerCase();
    scopes.push(scope);
    const url = await scopedUrl(engine, base, scope);
    const db = engine.engine === "postgres" ? base : await engine.connect(url);
    if (db !== base) opened.push(db);
    const table = unique(`stop_${form}`).toLowerCase();
    await createJobsTable(engine, db, table);
    await insertJobs(db, table, 1);
    return { scope, url, db, table };
  }

  test("a delivery in work finishes within the grace period", async () => {
    const { url, db, table } = await queue("grace_ok");
    const c = consumer(url, table, form, { shutdownGrace: 5000, handle: () => new Promise((r) => setTimeout(r, 300)) });
    const app = await c.app.start();
    await until(() => c.seen.length === 1, 10_000, "the delivery");
    await app.stop();
    expect(await readJobs(db, table)).toEqual([]);
    expect(c.errors).toEqual([]);
  });

  test("after the grace period: the hold is given up at once, the late settlement and publishes fail with Closed", async () => {
    const { scope, url, db, table } = await queue("grace_over");
    const release = deferred();
    const c = consumer(url, table, form, { shutdownGrace: 300, handle: () => release.promise });
    const app = await c.app.start();
    await until(() => c.seen.length === 1, 10_000, "the delivery");
    expect(await deliverySession(engine, base, scope, form, "row-0", table)).toBeDefined();
    const began = Date.now();
    await app.stop();
    expect(Date.now() - began).toBeLessThan(3000);
    // Nothing holds the row any more; row lock rolled its attempt back, advisory had committed it.
    expect(await deliverySession(engine, base, scope, form, "row-0", table)).toBeUndefined();
    expect((await readJobs(db, table)).map((r) => r.attempt)).toEqual([form === "rowLock" ? 1 : 2]);
    release.resolve();
    await until(() => c.errors.some((e) => e.message === "settlement failed"), 5000, "the late settlement");
    expect(c.errors.find((e) => e.message === "settlement failed")?.code).toBe("Closed");
    await expect(app.publish("jobs", { n: 9 })).rejects.toMatchObject({ code: "Closed" });
    expect(await readJobs(db, table)).toHaveLength(1); // the row was not lost
  });
});
