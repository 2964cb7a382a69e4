import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium, shownIn } from "./browser.js";
import { startDashboardProcess } from "./dashboard-process.js";
import { selects } from "../../../test/support/engine-selection.js";

const MYSQL_URL = process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";
const suffix = `${process.pid}_${Date.now() % 100_000}`;

describe("the dashboard's numbers on the other engines and forms", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  test.runIf(selects("mariadb"))("MariaDB, row lock: rows a worker's transaction holds show as in work, a dead group as dead letters", async () => {
    const table = `dash_rowlock_${suffix}`;
    const admin = await mysql.createConnection(MYSQL_URL);
    const worker = await mysql.createConnection(MYSQL_URL);
    await admin.query(`create table ${table} (id int auto_increment primary key, attempt int not null default 1, payload text, grp varchar(64))`);
    try {
      await admin.query(`insert into ${table} (payload, grp) values ('{"n":1}','mail'),('{"n":2}','mail'),('{"n":3}','mail'),('{"n":4}','mail'),('{"n":5}','mail.dead')`);
      // Held the way a row-lock claim holds rows.
      await worker.query("set session transaction isolation level read committed");
      await worker.query("begin");
      await worker.query(`select id from ${table} where grp = 'mail' order by id limit 3 for update skip locked`);
      const dashboard = await startDashboardProcess(["--url", MYSQL_URL, "--table", table, "--dead-letter-group", "mail=mail.dead", "--sample-every", "1"]);
      try {
        const page = await browser.newPage();
        await page.goto(dashboard.url);
        await expect.poll(() => page.getByTestId(`in-work-${table}`).textContent(), { timeout: 15_000 }).toBe("3");
        expect(await page.getByTestId(`ready-${table}`).textContent()).toBe("1");
        expect(await page.getByTestId(`dead-count-${table}`).textContent()).toBe("1");
        // The mysql dialect runs MariaDB: the page names the server the operator runs.
        expect(await page.locator("#engine").textContent()).toBe("mariadb");
        await worker.query("rollback");
        await expect.poll(() => page.getByTestId(`in-work-${table}`).textContent(), { timeout: 15_000 }).toBe("0");
        expect(await page.getByTestId(`ready-${table}`).textContent()).toBe("4");
        await page.close();
      } finally {
        await dashboard.stop();
      }
    } finally {
      await worker.end();
      await admin.query(`drop table if exists ${table}`);
      await admin.end();
    }
  });

  test.runIf(selects("sqlite"))("SQLite, lease with fifo groups: ready is each group's head, the due rows behind it are waiting", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sqlinbox-dash-"));
    const file = join(dir, "app.db");
    const db = new Database(file);
    const at = (ms: number) => new Date(Date.now() + ms).toISOString();
    db.exec("create table orders (id integer primary key, attempt integer not null default 1, locked_until text, retry_after text, payload text, grp text)");
    const insert = db.prepare("insert into orders (payload, grp, locked_until, retry_after) values (?, ?, ?, ?)");
    // Customer a: its head is in work, two rows wait behind it. Customer b: a head ready, one row behind it, one delayed.
    insert.run("{}", "a", at(600_000), null);
    insert.run("{}", "a", null, null);
    insert.run("{}", "a", null, null);
    insert.run("{}", "b", null, null);
    insert.run("{}", "b", null, null);
    insert.run("{}", "b", null, at(600_000));
    db.close();
    const dashboard = await startDashboardProcess(["--url", `sqlite:${file}`, "--table", "orders", "--fifo"]);
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      await page.goto(dashboard.url);
      await expect.poll(() => page.getByTestId("ready-orders").textContent(), { timeout: 15_000 }).toBe("1");
      expect(await page.getByTestId("waiting-orders").textContent()).toBe("3");
      expect(await page.getByTestId("in-work-orders").textContent()).toBe("1");
      expect(await page.getByTestId("delayed-orders").textContent()).toBe("1");
      expect(await page.getByTestId("waiting-orders-a").textContent()).toBe("2");
      expect(await page.getByTestId("waiting-orders-b").textContent()).toBe("1");
      // A fifo table: its depth chart has the "Waiting (fifo)" series, and its groups a Group column.
      await expect.poll(() => page.locator('[data-testid="chart-depth-orders"] .u-legend').textContent()).toContain("Waiting (fifo)");
      expect(await page.locator('[data-testid="table-orders"] table.grid th').allTextContents()).toContain("Group");
      if (process.env.SQLINBOX_SCREENSHOT !== undefined) await page.screenshot({ path: process.env.SQLINBOX_SCREENSHOT, fullPage: true });
      await page.close();
    } finally {
      await dashboard.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Each case is one engine's; skipped only when SQLINBOX_ENGINES leaves that engine out.
  test.runIf(selects("sqlite"))("SQLite, lease without groups: the leases table has no Group column, and its times read in the browser's zone", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sqlinbox-dash-"));
    const file = join(dir, "app.db");
    const db = new Database(file);
    const until = new Date(Math.ceil(Date.now() / 1000) * 1000 + 40_000);
    db.exec("create table jobs (id integer primary key, attempt integer not null default 1, locked_until text, payload text)");
    db.prepare("insert into jobs (payload, locked_until) values ('{}', ?), ('{}', null)").run(until.toISOString());
    db.close();
    const dashboard = await startDashboardProcess(["--url", `sqlite:${file}`, "--table", "jobs"]);
    try {
      const page = await browser.newPage({ timezoneId: "Asia/Tokyo", locale: "en-US" });
      await page.goto(dashboard.url);
      await expect.poll(() => page.getByTestId("in-work-jobs").textContent(), { timeout: 15_000 }).toBe("1");
      expect(await page.getByTestId("locked-until-jobs-1").textContent()).toBe(shownIn("Asia/Tokyo", until));
      expect(await page.locator('[data-testid="table-jobs"] table.grid th').allTextContents()).not.toContain("Group");
      expect(await page.locator("#updated").textContent()).toMatch(/^updated \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      expect(await page.getByTestId("zone").textContent()).toBe("times in Asia/Tokyo");
      await page.close();
    } finally {
      await dashboard.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.runIf(selects("sqlite"))("SQLite, advisory: in work is unknown from outside, and the page says so", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sqlinbox-dash-"));
    const file = join(dir, "app.db");
    const db = new Database(file);
    db.exec("create table mail (id integer primary key, attempt integer not null default 1, payload text, customer_id text)");
    db.exec(`insert into mail (payload, customer_id) values ('{}', 'acme'), ('{}', 'beta')`);
    db.close();
    const dashboard = await startDashboardProcess(["--url", `sqlite:${file}`, "--table", "mail", "--advisory-key", "m-{customer_id}"]);
    try {
      const page = await browser.newPage();
      await page.goto(dashboard.url);
      await expect.poll(() => page.getByTestId("ready-mail").textContent(), { timeout: 15_000 }).toBe("2");
      expect(await page.getByTestId("in-work-mail").textContent()).toBe("—");
      expect(await page.getByText("in work: unknown from outside (advisory keys on SQLite live in the application's process)").isVisible()).toBe(true);
      // No group column: no Group header; no fifo: no waiting series.
      expect(await page.locator('[data-testid="table-mail"] table.grid th').allTextContents()).not.toContain("Group");
      await expect.poll(() => page.locator('[data-testid="chart-depth-mail"] .u-legend').textContent()).toContain("Ready");
      expect(await page.locator('[data-testid="chart-depth-mail"] .u-legend').textContent()).not.toContain("Waiting");
      await page.close();
    } finally {
      await dashboard.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
