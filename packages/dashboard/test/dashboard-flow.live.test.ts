import pg from "pg";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium } from "./browser.js";
import { BIN, startDashboardProcess, type DashboardProcess } from "./dashboard-process.js";
import { selects } from "../../../test/support/engine-selection.js";
import { execFileSync } from "node:child_process";

const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const TOKEN = "flow-operator-token";
const suffix = `${process.pid}_${Date.now() % 100_000}`;
const SOURCE = `dash_flow_${suffix}`;
const ROUTE = `dash_route_${suffix}`;

const testId = (page: Page, id: string) => page.getByTestId(id);

describe.runIf(selects("postgres"))("pause, resume and cancel from the dashboard, in a real headless Chromium, against PostgreSQL", () => {
  let client: pg.Client;
  let browser: Browser;
  let writable: DashboardProcess;
  let readOnly: DashboardProcess;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    // The control table as `sqlinbox ddl --control` prints it for a migration.
    await client.query(execFileSync(process.execPath, [BIN, "ddl", "--control", "--engine", "postgres"], { encoding: "utf8" }));
    await client.query(`create table ${SOURCE} (id serial primary key, attempt int not null default 1, locked_until timestamptz, payload text)`);
    await client.query(`insert into ${SOURCE} (payload, locked_until, attempt) values ('{"n":1}', now() + interval '1 minute', 2), ('{"n":2}', null, 1)`);
    const args = ["--url", PG_URL, "--table", SOURCE, "--sample-every", "1"];
    [writable, readOnly, browser] = await Promise.all([startDashboardProcess([...args, "--allow-writes", "--token", TOKEN]), startDashboardProcess(args), launchChromium()]);
  });

  afterAll(async () => {
    await browser?.close();
    await writable?.stop();
    await readOnly?.stop();
    await client?.query(`delete from sqlinbox_control where route in ($1, $2)`, [ROUTE, SOURCE]);
    await client?.query(`drop table if exists ${SOURCE}`);
    await client?.end();
  });

  const paused = async () => (await client.query("select route from sqlinbox_control where kind = 'pause' and route = $1", [ROUTE])).rows.length;

  test("a route is paused after the page asks, shows as paused, and resumes; a cancel removes a queued row and signals one in work", async () => {
    const page = await browser.newPage();
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      // The first question is declined: nothing is written.
      void (dialogs.length === 1 ? d.dismiss() : d.accept());
    });
    await page.goto(writable.url);
    await testId(page, "token").fill(TOKEN);
    // Other tests share the database and may pause routes of their own: this route is the one not shown.
    await expect.poll(() => testId(page, "pause-route").isVisible()).toBe(true);
    expect(await testId(page, `paused-${ROUTE}`).count()).toBe(0);

    await testId(page, "pause-route").fill(ROUTE);
    await testId(page, "pause").click();
    await expect.poll(() => dialogs.length).toBe(1);
    expect(dialogs[0]).toBe(`Pause route ${ROUTE} in every process? Rows in work finish; nothing new starts until it is resumed.`);
    await page.waitForTimeout(300);
    expect(await paused()).toBe(0);

    await testId(page, "pause").click();
    await expect.poll(() => testId(page, "flash-flow").textContent()).toBe(`Paused ${ROUTE}.`);
    expect(await paused()).toBe(1);
    await expect.poll(() => testId(page, `paused-${ROUTE}`).isVisible()).toBe(true);

    await testId(page, `resume-${ROUTE}`).click();
    await expect.poll(() => testId(page, "flash-flow").textContent()).toBe(`Resumed ${ROUTE}.`);
    expect(await paused()).toBe(0);
    await expect.poll(() => testId(page, `paused-${ROUTE}`).count()).toBe(0);

    const [inWork, queued] = (await client.query(`select id from ${SOURCE} order by id`)).rows.map((r) => r.id as number);
    await testId(page, `cancel-id-${SOURCE}`).fill(String(queued));
    // The page is rebuilt every second: the box keeps what was typed.
    await expect.poll(() => testId(page, `cancel-id-${SOURCE}`).inputValue()).toBe(String(queued));
    await testId(page, `cancel-${SOURCE}`).click();
    await expect.poll(() => testId(page, `flash-cancel-${SOURCE}`).textContent()).toBe(`Row ${queued} removed: it will never start.`);
    expect(dialogs.at(-1)).toBe(`Cancel row ${queued} of ${SOURCE}? Not in work: it is removed and never starts. In work: its handler's signal is aborted.`);
    await testId(page, `cancel-id-${SOURCE}`).fill(String(inWork));
    await expect.poll(() => testId(page, `cancel-id-${SOURCE}`).inputValue()).toBe(String(inWork));
    await testId(page, `cancel-${SOURCE}`).click();
    await expect.poll(() => testId(page, `flash-cancel-${SOURCE}`).textContent()).toBe(`Row ${inWork} is in work: its handler is told to stop (ctx.signal aborts with Cancelled).`);
    expect((await client.query(`select id from ${SOURCE}`)).rows.map((r) => r.id)).toEqual([inWork]);
    // The request waits for the process running the row; the table's name tags it.
    expect((await client.query("select target from sqlinbox_control where kind = 'cancel' and route = $1", [SOURCE])).rows).toEqual([{ target: String(inWork) }]);
    await page.close();
  });

  test("a read-only dashboard shows paused routes but offers no pause, resume or cancel, and refuses them with the token", async () => {
    await client.query("insert into sqlinbox_control (kind, route, target, requested_at) values ('pause', $1, '', now())", [ROUTE]);
    const page = await browser.newPage();
    await page.goto(readOnly.url);
    await expect.poll(() => testId(page, `paused-${ROUTE}`).isVisible(), { timeout: 15_000 }).toBe(true);
    expect(await testId(page, `resume-${ROUTE}`).isDisabled()).toBe(true);
    expect(await testId(page, "pause").isDisabled()).toBe(true);
    expect(await testId(page, `cancel-${SOURCE}`).isDisabled()).toBe(true);
    const statuses = await page.evaluate(
      async ([route, table, token]) => {
        const post = async (path: string, body: unknown) =>
          (await fetch(path, { method: "POST", headers: { "x-sqlinbox-token": token!, "content-type": "application/json" }, body: JSON.stringify(body) })).status;
        return [await post("/api/resume", { route }), await post("/api/pause", { route: "other" }), await post(`/api/tables/${table}/cancel`, { id: "1" })];
      },
      [ROUTE, SOURCE, TOKEN],
    );
    expect(statuses).toEqual([403, 403, 403]);
    expect(await paused()).toBe(1);
    await page.close();
  });
});
