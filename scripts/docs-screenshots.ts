/**
 * Makes the dashboard screenshots in docs/ (dashboard.png, dashboard-jobs.png, dashboard-bulk.png) from a
 * SQLite file seeded with report jobs, through `sqlinbox dashboard` as an operator starts it, in Debian's
 * Chromium. Run `npm run docs:screenshots` after a change to the pages, look at the images, commit them.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { inboxTableSql } from "@sqlinbox/kysely-dialects";
import Database from "better-sqlite3";
import { chromium, type Page } from "playwright-core";
import { DeadReports, ReportJobs } from "./docs-screenshots-tables.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = join(ROOT, "packages/cli/dist/bin.js");
const MODULE = fileURLToPath(new URL("./docs-screenshots-tables.ts", import.meta.url));
const TOKEN = "docs-screenshot-token";
const file = join(mkdtempSync(join(tmpdir(), "sqlinbox-docs-shots-")), "app.db");

/** 60 report jobs of three customers, 4 of them in work, 3 failed once; 7 dead letters. */
function seed(): void {
  const db = new Database(file);
  for (const statement of [...inboxTableSql(ReportJobs, "sqlite"), ...inboxTableSql(DeadReports, "sqlite")]) db.exec(statement);
  db.exec(execFileSync(process.execPath, [BIN, "ddl", "--control", "--engine", "sqlite"], { encoding: "utf8" }));
  const customers = ["acme", "globex", "initech"];
  const insert = db.prepare("insert into reports_lease (payload, dedup_key, customer, attempt, locked_until, last_error) values (?, ?, ?, ?, ?, ?)");
  for (let i = 0; i < 60; i++) {
    const customer = customers[i % 3] as string;
    const report = 1000 + i;
    const payload = Buffer.from(JSON.stringify({ report, customer, pages: 41 - (i % 40), format: "pdf" }));
    const inWork = i % 15 === 2;
    const failed = i % 20 === 7;
    insert.run(
      payload,
      `report-${report}`,
      customer,
      failed ? 2 : 1,
      inWork ? new Date(Date.now() + 120_000).toISOString() : null,
      failed ? "renderer timed out after 30 s" : null,
    );
  }
  const dead = db.prepare("insert into reports_dead (payload, attempts, last_error, customer) values (?, 5, ?, ?)");
  for (let i = 0; i < 7; i++) dead.run(Buffer.from(JSON.stringify({ report: 900 + i, customer: "acme", pages: 3, format: "pdf" })), "the template reports_v1 is gone", "acme");
  db.close();
}

/** `sqlinbox dashboard` on the file, with writes allowed behind the token; resolves to its URL and a stop. */
function startDashboard(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(
    process.execPath,
    [BIN, "dashboard", "--port", "0", "--url", `sqlite:${file}`, "--module", MODULE, "--allow-writes", "--token", TOKEN, "--sample-every", "1"],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  return new Promise((resolve, reject) => {
    let out = "";
    child.on("exit", (code) => reject(new Error(`the dashboard exited with ${code}`)));
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const url = /on (http:\/\/\S+)/.exec(out)?.[1];
      if (url !== undefined) resolve({ url, stop: () => child.kill("SIGTERM") });
    });
  });
}

async function shoot(page: Page, name: string, fullPage = false): Promise<void> {
  const path = join(ROOT, "docs", name);
  await page.screenshot({ path, fullPage });
  console.log(`wrote ${path}`);
}

seed();
const dashboard = await startDashboard();
const browser = await chromium.launch({ executablePath: process.env.SQLINBOX_CHROMIUM ?? "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
try {
  // The overview, after a few samples so the charts have a line.
  const overview = await browser.newPage({ viewport: { width: 1360, height: 900 }, timezoneId: "Europe/Berlin" });
  await overview.goto(dashboard.url);
  await overview.waitForTimeout(4_000);
  await shoot(overview, "dashboard.png", true);

  // The job browser: the waiting jobs of a lease table, by id.
  const page = await browser.newPage({ viewport: { width: 1280, height: 700 }, timezoneId: "Europe/Berlin" });
  await page.goto(`${dashboard.url}#jobs`);
  await page.getByTestId("jobs-view").waitFor();
  await page.getByTestId("jobs-table").selectOption("reports_lease");
  await page.getByTestId("jobs-state").selectOption("waiting");
  await page.getByTestId("jobs-apply").click();
  await page.waitForTimeout(1_000);
  await shoot(page, "dashboard-jobs.png");

  // A bulk reschedule: a few of acme's jobs picked, the dry run's count, the time in the browser's zone.
  await page.fill("#token", TOKEN);
  await page.getByTestId("jobs-where-column").selectOption("customer");
  await page.getByTestId("jobs-where-value").fill("acme");
  await page.getByTestId("jobs-apply").click();
  await page.waitForTimeout(1_000);
  const boxes = page.locator('[data-testid^="job-select-"]');
  for (const i of [1, 2, 3, 4, 5]) await boxes.nth(i).check();
  await page.getByTestId("bulk-reschedule").click();
  await page.getByTestId("bulk-matched").waitFor();
  await page.getByTestId("bulk-run-at").fill("2027-01-04 09:00:00");
  await shoot(page, "dashboard-bulk.png");
} finally {
  await browser.close();
  dashboard.stop();
}
