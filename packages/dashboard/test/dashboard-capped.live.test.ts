/**
 * A large table on the page: its counts that reached the cap read "10,000+", never a plain number,
 * and the status JSON the page reads says which counts are lower bounds. The table is large by its
 * ids (one row far out at id 300,000), with 12,000 ready rows, so the sample of 10,000 is full.
 */
import pg from "pg";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { selects } from "../../../test/support/engine-selection.js";
import type { StatusReport } from "../src/index.js";
import { launchChromium } from "./browser.js";
import { type DashboardProcess, startDashboardProcess } from "./dashboard-process.js";

const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const TABLE = `dash_capped_${process.pid}_${Date.now() % 100_000}`;

// The page's rendering of capped counts is the same on every engine (the capped status itself is tested per engine
// in packages/cli/test/status-capped.test.ts): one engine is enough here; skipped when the run leaves Postgres out.
describe.runIf(selects("postgres"))("a large table on the dashboard, against PostgreSQL", () => {
  let client: pg.Client;
  let browser: Browser;
  let dashboard: DashboardProcess;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`create table ${TABLE} (id serial primary key, attempt int not null default 1, locked_until timestamptz, payload text)`);
    await client.query(`insert into ${TABLE} (payload) select '{}' from generate_series(1, 12000)`);
    await client.query(`insert into ${TABLE} (id, payload) values (300000, '{}')`);
    [dashboard, browser] = await Promise.all([startDashboardProcess(["--url", PG_URL, "--table", TABLE, "--sample-every", "1"]), launchChromium()]);
  });

  afterAll(async () => {
    await browser?.close();
    await dashboard?.stop();
    await client?.query(`drop table if exists ${TABLE}`);
    await client?.end();
  });

  test("counts that reached the cap read 10,000+ on the page and as lower bounds in the JSON", async () => {
    const status = (await (await fetch(new URL("/api/status", dashboard.url))).json()) as StatusReport;
    const table = status.tables.find((t) => t.table === TABLE);
    expect(table?.capped).toEqual({ cap: 10_000, estimatedRows: 300_000, atLeast: ["ready", "inWork", "attempts", "expiringLeases"] });
    expect(table?.totals).toMatchObject({ ready: 10_000, inWork: 0 });

    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(dashboard.url);
    await expect.poll(() => page.getByTestId(`ready-${TABLE}`).textContent(), { timeout: 15_000 }).toBe("10,000+");
    expect(await page.getByTestId(`in-work-${TABLE}`).textContent()).toBe("0+");
    expect(await page.locator(`[data-testid="table-${TABLE}"] .notes`).textContent()).toContain("large table (about 300,000 rows by its ids)");
    // The charts: the depth plots lower bounds, and this delete-ack table's throughput (from its backlog's growth) is unknown.
    expect(await page.locator(`[data-testid="chart-depth-${TABLE}"] .title`).textContent()).toBe("Depth (at least: counts stop at 10,000)");
    expect(await page.getByTestId(`throughput-unknown-${TABLE}`).textContent()).toMatch(/^unknown: its backlog is counted up to 10000 rows/);
    expect(errors).toEqual([]);
    await page.close();
  });
});
