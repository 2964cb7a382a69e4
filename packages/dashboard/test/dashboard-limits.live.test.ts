/**
 * The caps and rate limits a loaded module declares, on the page: per route, the rows in work against
 * `maxInWork`, and the starts in the rate limit's window against its limit, read from PostgreSQL in a
 * real headless Chromium. Without `--module` nothing is declared and the section is absent.
 */
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium } from "./browser.js";
import { startDashboardProcess, type DashboardProcess } from "./dashboard-process.js";
import { selects } from "../../../test/support/engine-selection.js";

const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const MODULE = fileURLToPath(new URL("../../cli/test/support/fixtures/flow-limits.ts", import.meta.url));
const TABLE = `dash_limits_${process.pid}_${Date.now() % 100_000}`;

describe.runIf(selects("postgres"))("caps and rate limits on the dashboard, in a real headless Chromium, against PostgreSQL", () => {
  let client: pg.Client;
  let browser: Browser;
  let withModule: DashboardProcess;
  let withoutModule: DashboardProcess;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`create table ${TABLE} (id serial primary key, attempt int not null default 1, locked_until timestamptz, retry_after timestamptz, payload text, grp text)`);
    // Route a: two live leases and one row ready; route b: one live lease.
    await client.query(
      `insert into ${TABLE} (payload, grp, locked_until, attempt) values ('{}', 'a', now() + interval '1 minute', 2), ('{}', 'a', now() + interval '1 minute', 2), ('{}', 'a', null, 1), ('{}', 'b', now() + interval '1 minute', 2)`,
    );
    // Four starts through route a's rate limit a second ago, stamped as the runtime stamps them.
    const { flow } = dialectFor("postgres");
    const place = { name: `rate:${TABLE}:a` };
    for (const query of [flow.createSlotTable(), flow.ensureSlots(place, 10), flow.stampSlots(place, [0, 1, 2, 3], Date.now() - 1000)]) {
      await client.query(query.sql, query.parameters as unknown[]);
    }
    process.env.TEST_SOURCE_TABLE = TABLE;
    [withModule, withoutModule, browser] = await Promise.all([
      startDashboardProcess(["--url", PG_URL, "--module", MODULE]),
      startDashboardProcess(["--url", PG_URL, "--table", TABLE]),
      launchChromium(),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    await withModule?.stop();
    await withoutModule?.stop();
    await client?.query(`delete from sqlinbox_slots where name like $1`, [`%:${TABLE}:%`]).catch(() => undefined);
    await client?.query(`drop table if exists ${TABLE}`);
    await client?.end();
  });

  test("per route: in work against maxInWork, starts in the window against the rate limit", async () => {
    const page = await browser.newPage();
    await page.goto(withModule.url);
    const rowA = page.getByTestId(`limits-${TABLE}-a`);
    await expect.poll(() => rowA.isVisible(), { timeout: 15_000 }).toBe(true);
    expect((await rowA.locator("td").allTextContents()).map((s) => s.trim())).toEqual(["a", "2", "3", "4", "10 per 1m 00s"]);
    expect((await page.getByTestId(`limits-${TABLE}-b`).locator("td").allTextContents()).map((s) => s.trim())).toEqual(["b", "1", "2", "—", "—"]);
    expect(await page.getByText("Caps and rate limits, across every process").count()).toBe(1);
    const shot = join(mkdtempSync(join(tmpdir(), "sqlinbox-dashboard-")), "limits.png");
    await page.getByTestId(`table-${TABLE}`).screenshot({ path: shot });
    console.log(`dashboard limits screenshot: ${shot}`);
    await page.close();
  });

  test("without --module the page has no limits section", async () => {
    const page = await browser.newPage();
    await page.goto(withoutModule.url);
    await expect.poll(() => page.getByTestId(`table-${TABLE}`).isVisible(), { timeout: 15_000 }).toBe(true);
    expect(await page.getByText("Caps and rate limits, across every process").count()).toBe(0);
    await page.close();
  });
});
