import { mkdtempSync } from "node:fs";
import { statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium, shownIn } from "./browser.js";
import { startDashboardProcess, type DashboardProcess } from "./dashboard-process.js";
import { selects } from "../../../test/support/engine-selection.js";

const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const TOKEN = "s3cret-operator-token";
const suffix = `${process.pid}_${Date.now() % 100_000}`;
const SOURCE = `dash_reports_${suffix}`;
const DEAD = `dash_reports_dead_${suffix}`;

/** Counts straight from the table, to hold the page's numbers against. */
async function counted(client: pg.Client) {
  const one = async (text: string) => Number((await client.query(text)).rows[0].n);
  return {
    ready: await one(`select count(*) as n from ${SOURCE} where locked_until is null or locked_until <= now()`),
    inWork: await one(`select count(*) as n from ${SOURCE} where locked_until > now()`),
    dead: await one(`select count(*) as n from ${DEAD}`),
  };
}

const testId = (page: Page, id: string) => page.getByTestId(id);

describe.runIf(selects("postgres"))("the dashboard in a real headless Chromium, against PostgreSQL", () => {
  let client: pg.Client;
  let browser: Browser;
  let writable: DashboardProcess;
  let readOnly: DashboardProcess;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`create table ${SOURCE} (id serial primary key, attempt int not null default 1, locked_until timestamptz, payload text, grp text,
      created_at timestamptz not null default now() - interval '2 minutes')`);
    await client.query(`create table ${DEAD} (id serial primary key, attempts int, payload text, grp text, last_error text)`);
    await client.query(`insert into ${SOURCE} (payload, grp) select '{"report":' || g || '}', 'reports' from generate_series(1, 5) g`);
    await client.query(`insert into ${SOURCE} (payload, grp, locked_until, attempt) values ('{"report":6}', 'reports', now() + interval '40 seconds', 2),
      ('{"report":7}', 'reports', now() + interval '50 seconds', 3)`);
    await client.query(`insert into ${DEAD} (payload, grp, attempts, last_error) values
      ('{"report":100,"customer":"acme"}', 'reports', 5, 'TypeError: cannot read properties of undefined (reading ''pages'')'),
      ('{"report":101}', 'reports', 5, 'timeout after 30s'), ('{"report":102}', 'reports', 5, 'renderer exited with 137')`);
    const args = ["--url", PG_URL, "--table", SOURCE, "--dead-letter-table", DEAD, "--sample-every", "1"];
    [writable, readOnly, browser] = await Promise.all([startDashboardProcess([...args, "--allow-writes", "--token", TOKEN]), startDashboardProcess(args), launchChromium()]);
  });

  afterAll(async () => {
    await browser?.close();
    await writable?.stop();
    await readOnly?.stop();
    await client?.query(`drop table if exists ${SOURCE}, ${DEAD}`);
    await client?.end();
  });

  test("the page shows the table's numbers, refreshed live, with charts, and takes a screenshot worth looking at", async () => {
    // A browser in New York with 12-hour clocks: the page shows every time in New York time, 24-hour, and says so.
    const page = await browser.newPage({ viewport: { width: 1360, height: 1000 }, timezoneId: "America/New_York", locale: "en-US" });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(writable.url);
    const expected = await counted(client);
    expect(expected).toEqual({ ready: 5, inWork: 2, dead: 3 });
    await expect.poll(() => testId(page, `ready-${SOURCE}`).textContent(), { timeout: 15_000 }).toBe(String(expected.ready));
    expect(await testId(page, `in-work-${SOURCE}`).textContent()).toBe(String(expected.inWork));
    expect(await testId(page, `dead-count-${SOURCE}`).textContent()).toBe(String(expected.dead));
    expect(await testId(page, `oldest-${SOURCE}`).textContent()).toMatch(/^2m \d\ds$/);
    expect(await page.locator(`[data-testid="dead-${SOURCE}"] tbody tr`).count()).toBe(3);
    await expect.poll(() => page.locator(`[data-testid="table-${SOURCE}"] .uplot canvas`).count()).toBe(3);

    // One zone: the header, the leases and the chart's cursor read the browser's zone, 24-hour.
    expect(await page.getByTestId("zone").textContent()).toBe("times in America/New_York");
    expect(await page.locator("#updated").textContent()).toMatch(/^updated \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    const leases = await client.query(`select id, locked_until from ${SOURCE} where locked_until is not null order by id`);
    for (const row of leases.rows as { id: number; locked_until: Date }[]) {
      expect(await testId(page, `locked-until-${SOURCE}-${row.id}`).textContent()).toBe(shownIn("America/New_York", row.locked_until));
    }
    const depth = page.locator(`[data-testid="chart-depth-${SOURCE}"]`);
    await depth.locator(".u-over").hover();
    expect(await depth.locator(".u-legend .u-series").first().textContent()).toMatch(/^Time\d{2}:\d{2}:\d{2}$/);
    // Legends only where they apply: this table has no fifo, so no "Waiting (fifo)".
    expect(await depth.locator(".u-legend").textContent()).not.toContain("Waiting");

    // Live: rows written after the page loaded appear without a reload.
    await client.query(`insert into ${SOURCE} (payload, grp) select '{}', 'reports' from generate_series(1, 4)`);
    await expect.poll(() => testId(page, `ready-${SOURCE}`).textContent(), { timeout: 15_000 }).toBe(String((await counted(client)).ready));

    const shot = join(mkdtempSync(join(tmpdir(), "sqlinbox-dashboard-")), "dashboard.png");
    await page.waitForTimeout(2500); // a few samples in the charts
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(30_000);
    console.log(`dashboard screenshot: ${shot}`);
    expect(errors).toEqual([]);
    await page.close();
  });

  test("a dead letter is retried through the page: refused without the token (the selection stays), moved with it; bulk writes ask first; no move reads as throughput", async () => {
    const page = await browser.newPage();
    const dialogs: string[] = [];
    await page.goto(writable.url);
    const first = (await client.query(`select min(id) as id from ${DEAD}`)).rows[0].id as number;
    await testId(page, `select-${SOURCE}-${first}`).check();
    await testId(page, `retry-selected-${SOURCE}`).click();
    await expect.poll(() => testId(page, `flash-${SOURCE}`).textContent()).toBe("Refused (401): a write needs the token: type it in the Token box at the top of the page.");
    expect((await counted(client)).dead).toBe(3);
    // The refusal keeps the selection: type the token, press again.
    expect(await testId(page, `select-${SOURCE}-${first}`).isChecked()).toBe(true);
    expect(await testId(page, `retry-selected-${SOURCE}`).textContent()).toBe("Retry selected (1)");

    await testId(page, "token").fill("wrong-token-here");
    await testId(page, `retry-selected-${SOURCE}`).click();
    await expect.poll(() => testId(page, `flash-${SOURCE}`).textContent()).toBe("Refused (403): the token is wrong");
    expect((await counted(client)).dead).toBe(3);
    expect(await testId(page, `select-${SOURCE}-${first}`).isChecked()).toBe(true);

    // Publishes rolled back take 700 ids of the sequence: the dashboard reads them as 700 rows
    // inserted and settled (its documented limit; a sequence cannot tell them apart). The move below
    // takes ids too: those, and the moved rows, read as neither settled nor failed.
    await client.query("begin");
    await client.query(`insert into ${SOURCE} (payload, grp) select '{}', 'reports' from generate_series(1, 700)`);
    await client.query("rollback");
    await testId(page, "token").fill(TOKEN);
    await testId(page, `retry-selected-${SOURCE}`).click();
    await expect.poll(() => testId(page, `flash-${SOURCE}`).textContent()).toBe(`Moved 1 back to ${SOURCE}.`);
    expect((await counted(client)).dead).toBe(2);
    const back = await client.query(`select attempt, locked_until from ${SOURCE} where payload = '{"report":100,"customer":"acme"}'`);
    expect(back.rows).toEqual([{ attempt: 1, locked_until: null }]);
    await expect.poll(() => testId(page, `dead-count-${SOURCE}`).textContent()).toBe("2");

    expect(await testId(page, `retry-selected-${SOURCE}`).textContent()).toBe("Retry selected (0)");

    // "Retry all" asks first: dismissed, nothing moves.
    page.once("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await testId(page, `retry-all-${SOURCE}`).click();
    await expect.poll(() => dialogs.length).toBe(1);
    expect(dialogs[0]).toBe(`Move all 2 dead letters back into ${SOURCE}?`);
    await page.waitForTimeout(500);
    expect((await counted(client)).dead).toBe(2);

    page.once("dialog", (d) => void d.accept());
    await testId(page, `retry-all-${SOURCE}`).click();
    await expect.poll(() => testId(page, `flash-${SOURCE}`).textContent()).toBe(`Moved 2 back to ${SOURCE}.`);
    expect((await counted(client)).dead).toBe(0);
    await expect.poll(() => testId(page, `no-dead-${SOURCE}`).isVisible()).toBe(true);

    // No worker ran: the three rows moved back are not deliveries, so the rows read as settled over
    // every sample are the 700 rolled-back ids and no more (and no dead letter was added).
    await page.waitForTimeout(2500);
    const samples = (await page.evaluate(async () => (await fetch("/api/samples")).json())) as {
      at: number;
      from: number;
      tables: Record<string, { finishedPerSecond: number | null; failedPerSecond: number | null }>;
    }[];
    const rates = samples.map((s) => s.tables[SOURCE]).filter((t) => t !== undefined && t.finishedPerSecond !== null);
    expect(rates.length).toBeGreaterThan(3);
    // Windows that meet end to end, from the last sample back: a read the page asked for between two
    // timed ones is measured from the same earlier read as the next, so not every sample starts a window.
    let settled = 0;
    for (let s = samples.at(-1); s !== undefined && s.from !== s.at; s = samples.find((earlier) => earlier.at === s!.from)) {
      settled += ((s.tables[SOURCE]?.finishedPerSecond ?? 0) * (s.at - s.from)) / 1000;
    }
    expect(Math.round(settled)).toBe(700);
    expect(Math.max(...rates.map((t) => t!.failedPerSecond!))).toBe(0);
    await page.close();
  });

  test("a read-only dashboard refuses writes even with the token, and offers no retry button", async () => {
    await client.query(`insert into ${DEAD} (payload, grp, attempts, last_error) values ('{"report":200}', 'reports', 5, 'boom')`);
    const page = await browser.newPage();
    await page.goto(readOnly.url);
    await expect.poll(() => testId(page, `dead-count-${SOURCE}`).textContent(), { timeout: 15_000 }).toBe("1");
    expect(await testId(page, `retry-all-${SOURCE}`).isDisabled()).toBe(true);
    const id = (await client.query(`select min(id) as id from ${DEAD}`)).rows[0].id as number;
    expect(await testId(page, `select-${SOURCE}-${id}`).isDisabled()).toBe(true);
    expect(await page.getByText("Read-only: start with --allow-writes --token").isVisible()).toBe(true);
    const status = await page.evaluate(
      async ([table, token]) => {
        const res = await fetch(`/api/dead-letters/${table}/retry`, {
          method: "POST",
          headers: { "x-sqlinbox-token": token!, "content-type": "application/json" },
          body: '{"all":true}',
        });
        return res.status;
      },
      [SOURCE, TOKEN],
    );
    expect(status).toBe(403);
    expect((await counted(client)).dead).toBe(1);
    await page.close();
  });
});
