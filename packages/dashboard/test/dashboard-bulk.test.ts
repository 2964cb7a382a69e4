/**
 * Bulk actions of the job browser, in a real headless Chromium against PostgreSQL, MariaDB and
 * SQLite, through the dashboard an operator starts (`sqlinbox dashboard --allow-writes --token`):
 * a filter of 100 waiting jobs cancelled, 10 picked jobs rescheduled, 100 dead letters moved back,
 * each counted by a dry run first (the moved dead letters then handled by a subscriber, and listed as done); a row in work left alone and counted; a write without the token
 * refused. The browser runs in Europe/Berlin: every time reads in that zone, and the page says so. And
 * (SQLite only: the page's own code) a filter typed while a list loads is kept when that list comes back.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { dialectFor, inboxTableSql, type Engine } from "@sqlinbox/kysely-dialects";
import { type Kysely, sql } from "kysely";
import type { Browser, Page } from "playwright-core";
import { App, HandlerOutcome, InboxQueue, SqlBroker, silentLogger, subscriber } from "@sqlinbox/runtime";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium, shownIn } from "./browser.js";
import { BIN, startDashboardProcess } from "./dashboard-process.js";
import { type EngineName, selects } from "../../../test/support/engine-selection.js";

const prefix = `dash_bulk_${process.pid}_${Date.now() % 100_000}`;
process.env.TEST_JOBS_PREFIX = prefix;
const { DeadJobs, LeaseJobs } = await import("./support/fixtures/job-tables.js");
const MODULE = new URL("./support/fixtures/job-tables.ts", import.meta.url).pathname;
const LEASE = `${prefix}_lease`;
const DEAD = `${prefix}_dead`;
const SHOTS = join(tmpdir(), "sqlinbox-dashboard-jobs");
const TOKEN = "bulk-token-0123";
const ZONE = "Europe/Berlin";

const ENGINES: readonly { name: EngineName; engine: Engine; url: () => string }[] = [
  { name: "postgres", engine: "postgres", url: () => process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test" },
  { name: "mariadb", engine: "mysql", url: () => process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test" },
  { name: "sqlite", engine: "sqlite", url: () => `sqlite:${join(mkdtempSync(join(tmpdir(), "sqlinbox-bulk-")), "app.db")}` },
];

// biome-ignore lint/suspicious/noExplicitAny: the tables are made at run time; rows are plain records
type Db = Kysely<any>;

const bytes = (v: unknown) => Buffer.from(JSON.stringify(v), "utf8");

/** 100 waiting jobs of acme, 20 of globex, one of acme in work (a live lease); 100 dead letters. */
async function seed(db: Db, engine: Engine) {
  const time = dialectFor(engine).time;
  for (const spec of [LeaseJobs, DeadJobs]) {
    await sql.raw(`drop table if exists ${spec.description.table}`).execute(db);
    for (const statement of inboxTableSql(spec, engine)) await sql.raw(statement).execute(db);
  }
  // The control table, as `sqlinbox ddl --control` prints it for a migration: cancel writes its requests there.
  await sql.raw(execFileSync(process.execPath, [BIN, "ddl", "--control", "--engine", engine], { encoding: "utf8" })).execute(db);
  const ids = async (table: string, rows: Record<string, unknown>[]) => {
    await db.insertInto(table).values(rows).execute();
    return (await db.selectFrom(table).select("id").orderBy("id", "desc").limit(rows.length).execute()).map((r) => String(r.id)).reverse();
  };
  const acme = await ids(
    LEASE,
    Array.from({ length: 100 }, (_, i) => ({ payload: bytes({ acme: i }), customer: "acme" })),
  );
  const globex = await ids(
    LEASE,
    Array.from({ length: 20 }, (_, i) => ({ payload: bytes({ globex: i }), customer: "globex" })),
  );
  const [running] = await ids(LEASE, [{ payload: bytes({ running: true }), customer: "acme", attempt: 2, locked_until: time.encode(new Date(Date.now() + 600_000), 3) }]);
  const dead = await ids(
    DEAD,
    Array.from({ length: 100 }, (_, i) => ({ payload: bytes({ dead: i }), attempts: 5, last_error: `boom ${i}`, customer: "initech" })),
  );
  return { acme, globex, running: running as string, dead };
}

/** Waits for the list to show this page line (`Page 1 · 50 jobs`). */
async function listed(page: Page, line: string) {
  await expect.poll(() => page.getByTestId("jobs-page").textContent(), { timeout: 10_000 }).toBe(line);
}

/** Applies the list's filter: table, state, and a `customer` equality (empty: none). */
async function filter(page: Page, state: string, customer: string) {
  // The filter first: choosing a state applies the form at once, and a list that comes back redraws it.
  await page.getByTestId("jobs-where-column").selectOption("customer");
  await page.getByTestId("jobs-where-value").fill(customer);
  await page.getByTestId("jobs-state").selectOption(state);
  await page.getByTestId("jobs-apply").click();
}

/**
 * Runs a subscriber on the lease table until the 100 moved dead letters are handled, and returns the `dead`
 * numbers its handler saw (once each when nothing runs twice). Other waiting rows are handled too.
 */
async function drainDeadPayloads(url: string): Promise<number[]> {
  const seen: number[] = [];
  const broker = SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(LeaseJobs, "bulk");
  const handle = subscriber(InboxQueue.of(LeaseJobs, "bulk").pollInterval(50).workers(4), async (job) => {
    const { dead } = job as { dead?: number };
    if (dead !== undefined) seen.push(dead);
    return HandlerOutcome.ack();
  });
  const running = await new App({ name: "bulk-drain", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(handle)).start();
  try {
    const deadline = Date.now() + 30_000;
    while (seen.length < 100 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    // A moment more, so a second delivery of a row would show in the count.
    await new Promise((resolve) => setTimeout(resolve, 300));
  } finally {
    await running.stop();
  }
  return seen;
}

describe("bulk actions of the job browser", () => {
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  for (const target of ENGINES) {
    // An engine SQLINBOX_ENGINES leaves out is skipped (the test runs every engine when it is unset, as in CI).
    test.runIf(selects(target.name))(
      `${target.name}: cancel a filter of 100, reschedule 10 picked, move 100 dead letters back and see them handled; dry run first, a running row left alone, no token refused`,
      { timeout: 120_000 },
      async () => {
        const url = target.url();
        const { db } = (await parseDatabaseUrl(url).open({ max: 3 })) as unknown as { db: Db };
        const seeded = await seed(db, target.engine);
        const dashboard = await startDashboardProcess(["--url", url, "--module", MODULE, "--table", LEASE, "--allow-writes", "--token", TOKEN, "--sample-every", "30"]);
        const shot = async (page: Page, name: string) => {
          if (target.name === "postgres") await page.screenshot({ path: join(SHOTS, name) });
        };
        try {
          const post = async (body: unknown, token: string | null = TOKEN) => {
            const res = await fetch(new URL("/api/jobs/bulk", dashboard.url), {
              method: "POST",
              headers: { "content-type": "application/json", ...(token === null ? {} : { "x-sqlinbox-token": token }) },
              body: JSON.stringify(body),
            });
            return { status: res.status, body: (await res.json()) as Record<string, unknown> };
          };
          const cancelAcme = { table: LEASE, action: "cancel", state: "waiting", where: "customer:acme" };
          // Behind the write guard, as the dead-letter retry is: no token 401, a wrong one 403; nothing changes.
          expect(await post(cancelAcme, null)).toEqual({ status: 401, body: { error: expect.stringMatching(/^a write needs the token/) } });
          expect(await post({ ...cancelAcme, dryRun: true }, "wrong-token-000")).toEqual({ status: 403, body: { error: "the token is wrong" } });
          // Requests the table cannot take are refused before anything runs, naming what is wrong.
          expect(await post({ ...cancelAcme, action: "reschedule" })).toEqual({
            status: 400,
            body: { error: 'reschedule needs runAt, an ISO-8601 time such as 2030-01-01T09:00:00Z; got ""' },
          });
          expect(await post({ table: LEASE, action: "cancel", state: "deadLettered" })).toEqual({
            status: 400,
            body: { error: "dead letters are moved back (retry) or deleted (delete); cancel does not take them" },
          });
          expect((await post({ table: LEASE, action: "delete", state: "done", ids: ["1"] })).status).toBe(400);
          // A row in work is left alone and counted; a row that is not there is counted gone.
          expect(await post({ table: LEASE, action: "delete", state: "waiting", ids: [seeded.running, "99999999"] })).toEqual({
            status: 200,
            body: { action: "delete", dryRun: false, matched: 2, touched: 0, signalled: 0, inWork: 1, notFound: 1 },
          });
          expect((await db.selectFrom(LEASE).select("id").where("customer", "=", "acme").execute()).length).toBe(101);
          // What the CLI would refuse comes back 409 with its words: cancel without the control table (SQLite: a database of its own).
          if (target.engine === "sqlite") {
            await sql.raw("drop table sqlinbox_control").execute(db);
            const refused = await post({ table: LEASE, action: "cancel", state: "running", ids: [seeded.running] });
            expect(refused.status).toBe(409);
            expect(refused.body.error).toMatch(/^pause, resume and cancel need the control table "sqlinbox_control" in .*: create it with sqlinbox ddl --control/);
            await sql.raw(execFileSync(process.execPath, [BIN, "ddl", "--control", "--engine", "sqlite"], { encoding: "utf8" })).execute(db);
          }
          // Cancel on a running row: its handler is told to stop, as sqlinbox cancel tells it (a request in the control table).
          expect(await post({ table: LEASE, action: "cancel", state: "running", where: "customer:acme" })).toEqual({
            status: 200,
            body: { action: "cancel", dryRun: false, matched: 1, touched: 0, signalled: 1, inWork: 0, notFound: 0 },
          });
          expect(await db.selectFrom("sqlinbox_control").select(["kind", "target"]).where("route", "=", LEASE).execute()).toEqual([{ kind: "cancel", target: seeded.running }]);
          await db.deleteFrom("sqlinbox_control").where("route", "=", LEASE).execute();

          const page = await browser.newPage({ viewport: { width: 1360, height: 900 }, timezoneId: ZONE });
          const errors: string[] = [];
          page.on("pageerror", (e) => errors.push(e.message));
          await page.goto(`${dashboard.url}#jobs`);
          await page.getByTestId("jobs-view").waitFor();
          expect(await page.getByTestId("zone").textContent()).toBe(`times in ${ZONE}`);
          expect(await page.getByTestId("jobs-zone").textContent()).toMatch(/^Times are in Europe\/Berlin \(this browser's time zone\)/);
          await page.getByTestId("jobs-table").selectOption(LEASE);

          // A write without the token: the dialog says it was refused and why; nothing changed.
          await filter(page, "waiting", "acme");
          await listed(page, "Page 1 · 50 jobs");
          await page.getByTestId("bulk-cancel").click();
          await expect.poll(() => page.getByTestId("bulk-error").textContent()).toBe("Refused (401): a write needs the token: type it in the Token box at the top of the page.");
          expect(await page.getByTestId("bulk-confirm").count()).toBe(0);
          await page.getByTestId("bulk-close").click();
          await page.getByTestId("token").fill(TOKEN);

          // Cancel every waiting job of acme: 100, counted first; the one in work is not waiting, so not taken.
          await page.getByTestId("bulk-cancel").click();
          await expect.poll(() => page.getByTestId("bulk-matched").textContent()).toBe("Dry run: this takes 100 waiting jobs. Nothing has changed yet.");
          expect(await page.getByTestId("bulk-scope-text").textContent()).toBe(`Every waiting job of ${LEASE} with customer = acme.`);
          expect((await db.selectFrom(LEASE).select("id").where("customer", "=", "acme").execute()).length).toBe(101);
          expect(await page.getByTestId("bulk-dialog").textContent()).not.toMatch(/null|undefined/);
          await shot(page, "bulk-dry-run.png");
          await page.getByTestId("bulk-confirm").click();
          await expect.poll(() => page.getByTestId("bulk-result").textContent(), { timeout: 30_000 }).toBe("Finished: 100 waiting jobs taken.");
          expect(Object.fromEntries(await Promise.all(["done", "signalled", "in-work", "gone"].map(async (k) => [k, await page.getByTestId(`bulk-${k}`).textContent()])))).toEqual({
            done: "100",
            signalled: "0",
            "in-work": "0",
            gone: "0",
          });
          await shot(page, "bulk-result.png");
          await page.getByTestId("bulk-close").click();
          await expect.poll(() => page.getByTestId("jobs-empty").textContent()).toBe("No waiting jobs on this page.");
          // All gone from the queue, none started: the table keeps handled rows, so a cancelled row is marked
          // processed, never claimed (attempt 1, no lease); the one in work is left as it was.
          const rows = await db.selectFrom(LEASE).select(["id", "attempt", "locked_until", "processed_at"]).where("customer", "=", "acme").orderBy("id").execute();
          const state = (r: (typeof rows)[number]) => [String(r.id), Number(r.attempt), r.locked_until === null, r.processed_at === null];
          expect(rows.map(state)).toEqual([...seeded.acme.map((id) => [id, 1, true, false]), [seeded.running, 2, false, true]]);
          expect((await db.selectFrom("sqlinbox_control").select("target").where("route", "=", LEASE).execute()).length).toBe(0);

          // Reschedule 10 picked jobs of globex to a Berlin wall-clock time.
          await filter(page, "waiting", "globex");
          await listed(page, "Page 1 · 20 jobs");
          const picked = seeded.globex.slice(3, 13);
          for (const id of picked) await page.getByTestId(`job-select-${id}`).check();
          expect(await page.getByTestId("bulk-scope").inputValue()).toBe("selected");
          await page.getByTestId("bulk-reschedule").click();
          await expect.poll(() => page.getByTestId("bulk-matched").textContent()).toBe("Dry run: this takes 10 waiting jobs. Nothing has changed yet.");
          // A time the page cannot read is said so, and nothing runs; then the right one.
          await page.getByTestId("bulk-run-at").fill("04/03/2031 5:06");
          await page.getByTestId("bulk-confirm").click();
          expect(await page.getByTestId("bulk-error").textContent()).toMatch(/^Write the time as \d{4}-\d{2}-\d{2} \d{2}:00:00 \(Europe\/Berlin\), not "04\/03\/2031 5:06"\.$/);
          await page.getByTestId("bulk-run-at").fill("2031-03-04 05:06:07");
          await shot(page, "bulk-reschedule.png");
          await page.getByTestId("bulk-confirm").click();
          await expect.poll(() => page.getByTestId("bulk-done").textContent(), { timeout: 30_000 }).toBe("10");
          expect(await page.getByTestId("bulk-in-work").textContent()).toBe("0");
          await page.getByTestId("bulk-close").click();
          const time = dialectFor(target.engine).time;
          const runAt = await db.selectFrom(LEASE).select(["id", "retry_after"]).where("customer", "=", "globex").orderBy("id").execute();
          // 05:06:07 in Berlin in March (CET, UTC+1) is 04:06:07 UTC.
          expect(runAt.filter((r) => r.retry_after !== null).map((r) => [String(r.id), time.decode(r.retry_after)?.toISOString()])).toEqual(
            picked.map((id) => [id, "2031-03-04T04:06:07.000Z"]),
          );
          expect(runAt.filter((r) => r.retry_after === null)).toHaveLength(10);
          await expect.poll(() => page.getByTestId("jobs-page").textContent()).toBe("Page 1 · 10 jobs");
          // The scheduled list shows their run-at in Berlin time.
          await filter(page, "scheduled", "globex");
          await listed(page, "Page 1 · 10 jobs");
          const shown = await page.locator('[data-testid="jobs-list"] tbody tr td:nth-child(5)').allTextContents();
          expect(new Set(shown)).toEqual(new Set(["2031-03-04 05:06:07"]));
          expect(shownIn(ZONE, new Date("2031-03-04T04:06:07Z"))).toBe("2031-03-04 05:06:07");

          // Move the 100 dead letters back, all of them through the filter (two pages of the list).
          await filter(page, "deadLettered", "");
          await listed(page, "Page 1 · 50 jobs");
          expect(await page.getByTestId("bulk-scope").locator("option:checked").textContent()).toBe("every dead letter the filter matches");
          await page.getByTestId("bulk-retry").click();
          await expect.poll(() => page.getByTestId("bulk-matched").textContent()).toBe("Dry run: this takes 100 dead letters. Nothing has changed yet.");
          expect(await page.getByTestId("bulk-confirm").textContent()).toBe("Move back: 100 dead letters");
          await page.getByTestId("bulk-confirm").click();
          await expect.poll(() => page.getByTestId("bulk-done").textContent(), { timeout: 30_000 }).toBe("100");
          await shot(page, "bulk-dead-letters.png");
          await page.getByTestId("bulk-close").click();
          await expect.poll(() => page.getByTestId("jobs-empty").textContent()).toBe("No dead letters on this page.");
          expect((await db.selectFrom(DEAD).select("id").execute()).length).toBe(0);
          const payloads = (await db.selectFrom(LEASE).select("payload").execute()).map((r) => JSON.parse(Buffer.from(r.payload as Uint8Array).toString("utf8")));
          expect(payloads.flatMap((p: { dead?: number }) => (p.dead === undefined ? [] : [p.dead])).sort((a: number, b: number) => a - b)).toEqual(
            Array.from({ length: 100 }, (_, i) => i),
          );

          // And handled: a subscriber on the table takes every moved row once; the browser then lists them as done.
          const handled = await drainDeadPayloads(url);
          expect(handled.sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
          await filter(page, "done", "initech");
          await listed(page, "Page 1 · 50 jobs");
          await page.getByTestId("jobs-next").click();
          await listed(page, "Page 2 · 50 jobs");
          await shot(page, "bulk-moved-back-done.png");
          expect(
            Number(
              (
                await db
                  .selectFrom(LEASE)
                  .select((eb) => eb.fn.countAll().as("n"))
                  .where("customer", "=", "initech")
                  .where("processed_at", "is not", null)
                  .executeTakeFirst()
              )?.n,
            ),
          ).toBe(100);
          expect(errors).toEqual([]);
          await page.close();
        } finally {
          await dashboard.stop();
          for (const table of [LEASE, DEAD]) await sql.raw(`drop table if exists ${table}`).execute(db);
          await db.deleteFrom("sqlinbox_control").where("route", "=", LEASE).execute();
          await db.destroy();
        }
      },
    );
  }

  // The page's own code, not the engine's: one engine is enough.
  test.runIf(selects("sqlite"))(
    "a filter typed while a list is loading is still there when the list comes back, and is the one a bulk action takes",
    { timeout: 60_000 },
    async () => {
      const url = `sqlite:${join(mkdtempSync(join(tmpdir(), "sqlinbox-bulk-")), "app.db")}`;
      const { db } = (await parseDatabaseUrl(url).open({ max: 1 })) as unknown as { db: Db };
      await seed(db, "sqlite");
      const dashboard = await startDashboardProcess(["--url", url, "--module", MODULE, "--table", LEASE, "--allow-writes", "--token", TOKEN, "--sample-every", "30"]);
      try {
        const page = await browser.newPage({ viewport: { width: 1360, height: 900 }, timezoneId: ZONE });
        await page.goto(`${dashboard.url}#jobs`);
        await page.getByTestId("jobs-view").waitFor();
        await listed(page, "Page 1 · 50 jobs");
        // The next list is held until the filter has been typed, as a slow server would hold it.
        let release: () => void = () => {};
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        let heldOne = false;
        await page.route("**/api/jobs?*", async (route) => {
          if (!heldOne) {
            heldOne = true;
            await held;
          }
          await route.continue();
        });
        await page.getByTestId("jobs-state").selectOption("scheduled");
        await page.getByTestId("jobs-where-column").selectOption("customer");
        await page.getByTestId("jobs-where-value").fill("acme");
        release();
        await listed(page, "Page 1 · 0 jobs");
        expect(await page.getByTestId("jobs-where-value").inputValue()).toBe("acme");
        // Back to waiting, with the filter typed: the bulk dialog counts acme's 100, not the 120 waiting jobs.
        await page.getByTestId("jobs-state").selectOption("waiting");
        await listed(page, "Page 1 · 50 jobs");
        await page.getByTestId("token").fill(TOKEN);
        await page.getByTestId("bulk-cancel").click();
        await expect.poll(() => page.getByTestId("bulk-matched").textContent()).toBe("Dry run: this takes 100 waiting jobs. Nothing has changed yet.");
        await page.close();
      } finally {
        await dashboard.stop();
        await db.destroy();
      }
    },
  );
});
