import { tmpdir } from "node:os";
import { join } from "node:path";
import { column, InboxSpec } from "@sqlinbox/core";
import type { ScheduleStatus, StatusReport } from "@sqlinbox/dashboard";
import { startDashboard } from "@sqlinbox/dashboard";
import { App, createControlTable, createInboxTable, HandlerOutcome, InboxQueue, SqlBroker, silentLogger, subscriber, type RunningApp } from "@sqlinbox/runtime";
import { dialectFor } from "@sqlinbox/kysely-dialects/internal";
import { describe, expect, test } from "vitest";
import { launchChromium, shownIn } from "../../dashboard/test/browser.js";
import { openDatabase } from "../src/connect.js";
import { OperatorConsole } from "../src/operator-console.js";
import { resolveTables } from "../src/queue-tables.js";
import { dropTables, ENGINES, uniqueName } from "./support/databases.js";
import { sqlinbox, sqlinboxJson } from "./support/run-bin.js";

// An app with two cron schedules running: one every 2 s in UTC (its last tick moves while the test
// reads), one daily at 06:30 in Asia/Kolkata (no tick during the test: its next tick says the zone
// was applied). `sqlinbox status` and the dashboard show both, each with its correct next tick.
const FAST = "*/2 * * * * *";
const DAILY = "30 6 * * *";
const ZONE = "Asia/Kolkata";

function tickApp(url: string, table: string, fast: string, daily: string) {
  const spec = InboxSpec.table(table, column("id").generated()).lease(column("locked_until")).key(column("job_key")).processedAt(column("processed_at")).payload(column("payload"));
  const broker = SqlBroker.fromUrl(url, { pool: { max: 3 } })
    .route(spec, fast)
    .route(spec, daily);
  const handle = subscriber(InboxQueue.of(spec, fast).pollInterval(200), async () => HandlerOutcome.ack());
  const app = new App({ name: "schedules-test", version: "0", logger: silentLogger })
    .withBroker(broker, (b) => b.include(handle))
    .cron(fast, FAST, (tick) => ({ tick: tick.at.toISOString() }), { timeZone: "UTC" })
    .cron(daily, DAILY, () => ({}), { timeZone: ZONE });
  return { spec, app };
}

describe.each(ENGINES)("cron schedules in sqlinbox status and the dashboard on %s", (name, open) => {
  test("a running app's schedules: route, pattern, zone, last tick and the correct next tick", { timeout: 90_000 }, async () => {
    const t = await open();
    const table = uniqueName("sched");
    const fast = `${table}.fast`;
    const daily = `${table}.daily`;
    const { spec, app } = tickApp(t.url, table, fast, daily);
    let running: RunningApp | undefined;
    try {
      await createControlTable(t.db);
      await createInboxTable(t.db, spec);
      running = await app.start();
      // Two ticks at least, so the record has moved on from the start.
      const mine = (report: StatusReport) => (report.schedules ?? []).filter((s) => s.route.startsWith(table));
      let report: StatusReport = await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", table]);
      const first = mine(report).find((s) => s.route === fast)?.lastTick;
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        report = await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", table]);
        const last = mine(report).find((s) => s.route === fast)?.lastTick;
        if (last !== undefined && last !== first) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const [dailyRow, fastRow] = mine(report) as [ScheduleStatus, ScheduleStatus];
      expect(mine(report).map((s) => [s.route, s.pattern, s.timeZone, s.app])).toEqual([
        [daily, DAILY, ZONE, "schedules-test"],
        [fast, FAST, "UTC", "schedules-test"],
      ]);
      // The fast schedule's next tick is the one after its last (2 s on); the daily one's, the next 06:30 in Kolkata.
      expect(fastRow.lastTick).toMatch(/:\d[02468]\.000Z$/);
      expect(fastRow.nextTick).toBe(new Date(Date.parse(fastRow.lastTick!) + 2000).toISOString());
      expect(Date.parse(fastRow.nextTick) - Date.parse(report.at)).toBeLessThanOrEqual(2500);
      expect(fastRow.overdue).toBe(false);
      expect(dailyRow.lastTick).toBeUndefined();
      // 06:30 in Kolkata is 01:00 UTC (UTC+5:30, no daylight saving): the first 01:00 UTC after now.
      const today = new Date(`${report.at.slice(0, 10)}T01:00:00.000Z`);
      const expectedDaily = today.getTime() > Date.parse(report.at) ? today : new Date(today.getTime() + 86_400_000);
      expect(dailyRow.nextTick).toBe(expectedDaily.toISOString());

      // The text form has a schedules section with the same facts.
      const text = await sqlinbox(["status", "--url", t.url, "--table", table]);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain("Schedules (app.cron, as running apps recorded them):");
      const dailyLine = text.stdout.split("\n").find((l) => l.startsWith(daily));
      expect(dailyLine).toMatch(new RegExp(`^${daily.replace(".", "\\.")}\\s+30 6 \\* \\* \\*\\s+Asia/Kolkata\\s+—\\s+${dailyRow.nextTick.replace(".", "\\.")}\\s+schedules-test`));

      // A schedule no running app moves on (its app stopped five minutes before its next tick): overdue.
      const gone = `${table}.gone`;
      const control = dialectFor(name === "mariadb" ? "mysql" : name).control;
      const stale = new Date(Date.parse(report.at) - 5 * 60_000);
      await t.db.executeQuery(control.recordSchedule(gone, JSON.stringify({ app: "stopped-app", pattern: "*/5 * * * *", timeZone: "UTC" }), stale));
      const withGone = mine(await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", table]));
      expect(withGone.map((s) => [s.route, s.overdue])).toEqual([
        [daily, false],
        [fast, false],
        [gone, true],
      ]);
      expect((await sqlinbox(["status", "--url", t.url, "--table", table])).stdout).toContain(`${stale.toISOString()} (overdue: no app runs it)`);

      // The dashboard: its JSON and its page.
      const opened = await openDatabase(t.url);
      const dashboard = await startDashboard({ source: new OperatorConsole(opened, await resolveTables(opened, { tables: [table] })), port: 0, writes: null, sampleEveryMs: 1000 });
      const browser = await launchChromium();
      try {
        const served = (await (await fetch(new URL("/api/status", dashboard.url))).json()) as StatusReport;
        expect(mine(served).map((s) => [s.route, s.pattern, s.timeZone])).toEqual([
          [daily, DAILY, ZONE],
          [fast, FAST, "UTC"],
          [gone, "*/5 * * * *", "UTC"],
        ]);
        expect(mine(served)[0]!.nextTick).toBe(dailyRow.nextTick);
        // The page shows times in the browser's zone (Adelaide: half an hour off the whole-hour zones), not the schedule's.
        const page = await browser.newPage({ viewport: { width: 1360, height: 1000 }, timezoneId: "Australia/Adelaide" });
        await page.goto(dashboard.url);
        const iso = dailyRow.nextTick;
        await expect.poll(() => page.getByTestId(`schedule-next-${daily}`).textContent(), { timeout: 15_000 }).toBe(shownIn("Australia/Adelaide", new Date(iso)));
        expect(await page.getByTestId(`schedule-${daily}`).textContent()).toContain(DAILY);
        expect(await page.getByTestId(`schedule-last-${daily}`).textContent()).toBe("—");
        expect(await page.getByTestId(`schedule-next-${gone}`).textContent()).toMatch(/\(overdue: no app runs it\)$/);
        expect(await page.getByTestId(`schedule-last-${fast}`).textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
        expect(await page.getByTestId("zone").textContent()).toBe("times in Australia/Adelaide");
        // A few samples, so the throughput chart has a line, then the screenshot to look at.
        await expect.poll(() => page.locator(`[data-testid="table-${table}"] .uplot canvas`).count(), { timeout: 15_000 }).toBe(3);
        await new Promise((r) => setTimeout(r, 5000));
        const shot = join(tmpdir(), `sqlinbox-dashboard-schedules-${name}.png`);
        await page.screenshot({ path: shot, fullPage: true });
        console.log(`dashboard screenshot: ${shot}`);
        await page.close();
      } finally {
        await browser.close();
        await dashboard.close();
        await opened.close();
      }
    } finally {
      await running?.stop();
      // The stopped app's records would read as overdue to the next run: this test's routes only.
      await t.db.deleteFrom("sqlinbox_control").where("route", "like", `${table}.%`).execute();
      await dropTables(t, table);
      await t.close();
    }
  });
});
