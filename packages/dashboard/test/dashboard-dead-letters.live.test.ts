/**
 * A dead-letter list longer than the page shows (50, the oldest): the page says how many more there
 * are and where to see them, in a real headless Chromium against PostgreSQL.
 */
import pg from "pg";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium } from "./browser.js";
import { startDashboardProcess, type DashboardProcess } from "./dashboard-process.js";
import { selects } from "../../../test/support/engine-selection.js";

const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const suffix = `${process.pid}_${Date.now() % 100_000}`;
const SOURCE = `dash_many_${suffix}`;
const DEAD = `dash_many_dead_${suffix}`;

describe.runIf(selects("postgres"))("a long dead-letter list on the dashboard, in a real headless Chromium, against PostgreSQL", () => {
  let client: pg.Client;
  let browser: Browser;
  let dashboard: DashboardProcess;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`create table ${SOURCE} (id serial primary key, attempt int not null default 1, locked_until timestamptz, payload text)`);
    await client.query(`create table ${DEAD} (id serial primary key, payload text, last_error text)`);
    await client.query(`insert into ${DEAD} (payload, last_error) select '{"report":' || g || '}', 'boom' from generate_series(1, 57) g`);
    [dashboard, browser] = await Promise.all([startDashboardProcess(["--url", PG_URL, "--table", SOURCE, "--dead-letter-table", DEAD, "--sample-every", "1"]), launchChromium()]);
  });

  afterAll(async () => {
    await browser?.close();
    await dashboard?.stop();
    await client?.query(`drop table if exists ${SOURCE}, ${DEAD}`);
    await client?.end();
  });

  test("57 dead letters: the oldest 50 are listed, and a line says 7 more and where to see them all", async () => {
    const page = await browser.newPage();
    await page.goto(dashboard.url);
    await expect.poll(() => page.getByTestId(`dead-count-${SOURCE}`).textContent(), { timeout: 15_000 }).toBe("57");
    expect(await page.locator(`[data-testid="dead-${SOURCE}"] tbody tr`).count()).toBe(50);
    expect(await page.getByTestId(`dead-more-${SOURCE}`).textContent()).toBe(
      'and 7 more (the oldest 50 are shown; "Retry all" moves them all; sqlinbox peek --state dead --limit 57 lists them)',
    );
    await page.close();
  });
});
