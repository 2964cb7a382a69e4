/**
 * The job browser, in a real headless Chromium and through its JSON endpoints, on PostgreSQL,
 * MariaDB and SQLite: each state of a lease table and of a row-lock table, filters by key and by a
 * data column, keyset pages forward and back, one job's page, dead letters past the first 50.
 */
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { dialectFor, inboxTableSql, type Engine } from "@sqlinbox/kysely-dialects";
import { type Kysely, sql } from "kysely";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium, shownIn } from "./browser.js";
import { startDashboardProcess } from "./dashboard-process.js";
import { type EngineName, selects } from "../../../test/support/engine-selection.js";

const prefix = `dash_jobs_${process.pid}_${Date.now() % 100_000}`;
process.env.TEST_JOBS_PREFIX = prefix;
const { DeadJobs, LeaseJobs, RowLockJobs } = await import("./support/fixtures/job-tables.js");
const MODULE = new URL("./support/fixtures/job-tables.ts", import.meta.url).pathname;
const LEASE = `${prefix}_lease`;
const DEAD = `${prefix}_dead`;
const ROWLOCK = `${prefix}_rowlock`;
const SHOTS = join(tmpdir(), "sqlinbox-dashboard-jobs");

const ENGINES: readonly { name: EngineName; engine: Engine; url: () => string }[] = [
  { name: "postgres", engine: "postgres", url: () => process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test" },
  { name: "mariadb", engine: "mysql", url: () => process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test" },
  { name: "sqlite", engine: "sqlite", url: () => `sqlite:${join(mkdtempSync(join(tmpdir(), "sqlinbox-jobs-")), "app.db")}` },
];

// biome-ignore lint/suspicious/noExplicitAny: the tables are made at run time; rows are plain records
type Db = Kysely<any>;
const XSS = '<img src=x onerror="document.title=`owned`">';

/** The ids each state holds, as inserted. */
interface Seeded {
  waiting: number[];
  running: number[];
  scheduled: number[];
  done: number[];
  dead: number[];
  big: number;
}

async function seed(db: Db, engine: Engine): Promise<Seeded> {
  const time = dialectFor(engine).time;
  const at = (ms: number) => time.encode(new Date(Date.now() + ms), 3);
  const bytes = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v), "utf8");
  for (const spec of engine === "sqlite" ? [LeaseJobs, DeadJobs] : [LeaseJobs, DeadJobs, RowLockJobs]) {
    await sql.raw(`drop table if exists ${spec.description.table}`).execute(db);
    for (const statement of inboxTableSql(spec, engine)) await sql.raw(statement).execute(db);
  }
  const many = async (rows: Record<string, unknown>[], table = LEASE) => {
    await db.insertInto(table).values(rows).execute();
    return (await db.selectFrom(table).select("id").orderBy("id", "desc").limit(rows.length).execute()).map((r) => Number(r.id)).reverse();
  };
  const first = await many([{ payload: bytes({ report: 1, note: XSS }), headers: JSON.stringify({ traceparent: "00-abc-01" }), dedup_key: "k-1", customer: "globex" }]);
  const rest = await many(Array.from({ length: 104 }, (_, i) => ({ payload: bytes({ report: i + 2 }), dedup_key: `k-${i + 2}`, customer: (i + 2) % 3 === 0 ? "acme" : "globex" })));
  const running = await many(
    [1, 2, 3].map((i) => ({
      payload: bytes({ running: i }),
      attempt: 2,
      locked_until: at(600_000),
      last_error: `TypeError: <b>pages</b> is undefined (${i})`,
      customer: "globex",
    })),
  );
  // Scheduled in the reverse of their id order: run-at order shows them backwards.
  const scheduled = await many([4, 3, 2, 1].map((h) => ({ payload: bytes({ later: h }), retry_after: at(h * 3_600_000), customer: "globex" })));
  const done = await many([1, 2].map((i) => ({ payload: bytes({ done: i }), processed_at: at(-60_000), result: JSON.stringify({ pages: i }), customer: "globex" })));
  const [big] = await many([{ payload: bytes({ blob: "x".repeat(100_000) }), processed_at: at(-60_000), customer: "globex" }]);
  const dead = await many(
    Array.from({ length: 57 }, (_, i) => ({ payload: bytes({ dead: i + 1 }), attempts: 5, last_error: `renderer exited with 137 (${i + 1})`, customer: "acme" })),
    DEAD,
  );
  if (engine !== "sqlite")
    await many([1, 2, 3, 4, 5].map((n) => ({ payload: bytes({ mail: n }), grp: "mail" })).concat([{ payload: bytes({ mail: 6 }), grp: "mail.dead" }]), ROWLOCK);
  return { waiting: [...first, ...rest], running, scheduled, done: [...done, big as number], dead, big: big as number };
}

const rowIds = async (page: Page) =>
  await page.locator('[data-testid="jobs-list"] tbody tr').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-testid")?.split("-").at(-1))));

/** Waits until the list shows the page with these facts. */
async function listed(page: Page, pageText: string) {
  await expect.poll(() => page.getByTestId("jobs-page").textContent(), { timeout: 10_000 }).toBe(pageText);
  return rowIds(page);
}

describe("the job browser", () => {
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
    test.runIf(selects(target.name))(`${target.name}: every state, filters, pages back and forth, a job's page, dead letters past 50`, async () => {
      const url = target.url();
      const { db } = (await parseDatabaseUrl(url).open({ max: 3 })) as unknown as { db: Db };
      let release: () => void = () => undefined;
      let holding: Promise<unknown> = Promise.resolve();
      const dashboard = await (async () => {
        const seeded = await seed(db, target.engine);
        return {
          seeded,
          process: await startDashboardProcess(["--url", url, "--module", MODULE, "--sample-every", "5", ...(target.engine === "sqlite" ? ["--table", LEASE] : [])]),
        };
      })();
      const { seeded } = dashboard;
      try {
        const api = async (path: string) => {
          const res = await fetch(new URL(path, dashboard.process.url));
          return { status: res.status, body: (await res.json()) as Record<string, unknown> & { jobs: { id: string }[]; next: string | null; error?: string } };
        };
        // The JSON endpoints: three keyset pages cover the waiting jobs once each, in id order.
        const walked: number[] = [];
        let after = "";
        for (let n = 0; n < 4; n++) {
          const { status, body } = await api(`/api/jobs?table=${LEASE}&state=waiting${after ? `&after=${after}` : ""}`);
          expect(status).toBe(200);
          walked.push(...body.jobs.map((j) => Number(j.id)));
          if (body.next === null) break;
          after = body.next;
        }
        expect(walked).toEqual(seeded.waiting);
        for (const [state, want] of [
          ["running", seeded.running],
          ["scheduled", seeded.scheduled],
          ["done", seeded.done],
        ] as const) {
          expect(
            (await api(`/api/jobs?table=${LEASE}&state=${state}`)).body.jobs.map((j) => Number(j.id)),
            state,
          ).toEqual(want);
        }
        expect((await api(`/api/jobs?table=${LEASE}&state=scheduled&sort=runAt`)).body.jobs.map((j) => Number(j.id))).toEqual([...seeded.scheduled].reverse());
        const runAtFirst = await api(`/api/jobs?table=${LEASE}&state=scheduled&sort=runAt&limit=2`);
        const runAtNext = await api(`/api/jobs?table=${LEASE}&state=scheduled&sort=runAt&limit=2&after=${runAtFirst.body.next}`);
        expect([...runAtFirst.body.jobs, ...runAtNext.body.jobs].map((j) => Number(j.id))).toEqual([...seeded.scheduled].reverse());
        expect((await api(`/api/jobs?table=${LEASE}&state=waiting&key=k-7`)).body.jobs.map((j) => Number(j.id))).toEqual([seeded.waiting[6]]);
        expect((await api(`/api/jobs?table=${LEASE}&state=waiting&where=customer:acme&limit=500`)).body.jobs).toHaveLength(35);
        expect(await api(`/api/jobs?table=${LEASE}&state=gone`)).toMatchObject({
          status: 400,
          body: { error: 'state must be one of scheduled, waiting, running, done, deadLettered, got "gone"' },
        });
        expect((await api(`/api/jobs?table=${LEASE}&state=waiting&where=payload:x`)).body.error).toMatch(
          /^where names "payload", which is not a data column of .*_lease \(its data columns: customer\)$/,
        );
        expect((await api(`/api/jobs?table=${LEASE}&state=running&after=${after}`)).body.error).toMatch(/is not one of a running page sorted by id: start again without after$/);
        expect((await api(`/api/jobs?table=${LEASE}&state=waiting&sort=runAt`)).status).toBe(400);
        expect((await api(`/api/job?table=${LEASE}&id=999999`)).status).toBe(404);
        const big = (await api(`/api/job?table=${LEASE}&id=${seeded.big}`)).body as unknown as { state: string; payload: { text: string; bytes: number; cut: boolean } };
        expect(big.state).toBe("done");
        expect(big.payload.cut).toBe(true);
        expect(big.payload.bytes).toBeGreaterThan(100_000);
        expect(Buffer.byteLength(big.payload.text)).toBeLessThanOrEqual(65_536);

        // The page: a browser in Tokyo reads Tokyo time, as the rest of the page does, and says so.
        const page = await browser.newPage({ viewport: { width: 1360, height: 1000 }, timezoneId: "Asia/Tokyo" });
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(e.message));
        await page.goto(`${dashboard.process.url}#jobs`);
        await page.getByTestId("jobs-view").waitFor();
        await page.getByTestId("jobs-table").selectOption(LEASE);
        await page.getByTestId("jobs-state").selectOption("waiting");
        expect(await listed(page, "Page 1 · 50 jobs")).toEqual(seeded.waiting.slice(0, 50));
        await page.getByTestId("jobs-next").click();
        expect(await listed(page, "Page 2 · 50 jobs")).toEqual(seeded.waiting.slice(50, 100));
        if (target.name === "postgres") await page.screenshot({ path: join(SHOTS, "jobs-list.png"), fullPage: false });
        await page.getByTestId("jobs-next").click();
        expect(await listed(page, "Page 3 · 5 jobs")).toEqual(seeded.waiting.slice(100));
        expect(await page.getByTestId("jobs-next").isDisabled()).toBe(true);
        await page.getByTestId("jobs-prev").click();
        expect(await listed(page, "Page 2 · 50 jobs")).toEqual(seeded.waiting.slice(50, 100));
        await page.getByTestId("jobs-prev").click();
        expect(await listed(page, "Page 1 · 50 jobs")).toEqual(seeded.waiting.slice(0, 50));
        expect(await page.getByTestId("jobs-zone").textContent()).toMatch(/^Times are in Asia\/Tokyo \(this browser's time zone\)/);
        expect(await page.getByTestId("zone").textContent()).toBe("times in Asia/Tokyo");

        // A page that comes back while someone types in a filter leaves what they typed, and the cursor, in place.
        await page.route("**/api/jobs?*", async (route) => {
          await new Promise((resolve) => setTimeout(resolve, 600));
          await route.continue();
        });
        await page.getByTestId("jobs-next").click();
        await page.getByTestId("jobs-key").click();
        await page.keyboard.type("k-1");
        expect(await listed(page, "Page 2 · 50 jobs")).toEqual(seeded.waiting.slice(50, 100));
        await page.unroute("**/api/jobs?*");
        expect(await page.getByTestId("jobs-key").inputValue()).toBe("k-1");
        await page.keyboard.type("2");
        expect(await page.getByTestId("jobs-key").inputValue()).toBe("k-12");
        await page.getByTestId("jobs-key").fill("");
        await page.getByTestId("jobs-prev").click();
        await listed(page, "Page 1 · 50 jobs");

        for (const [state, want] of [
          ["running", seeded.running],
          ["scheduled", seeded.scheduled],
          ["done", seeded.done],
        ] as const) {
          await page.getByTestId("jobs-state").selectOption(state);
          expect(await listed(page, `Page 1 · ${want.length} jobs`), state).toEqual(want);
        }
        await page.getByTestId("jobs-state").selectOption("scheduled");
        await listed(page, "Page 1 · 4 jobs");
        await page.getByTestId("jobs-sort").selectOption("runAt");
        await expect.poll(() => rowIds(page)).toEqual([...seeded.scheduled].reverse());
        const runAt = await page.locator('[data-testid="jobs-list"] tbody tr td:nth-child(4)').allTextContents();
        const scheduledAt = (await api(`/api/jobs?table=${LEASE}&state=scheduled&sort=runAt`)).body.jobs.map((j) =>
          shownIn("Asia/Tokyo", new Date((j as { runAt: string }).runAt)),
        );
        expect(runAt).toEqual(scheduledAt);

        // Filters: the dedup key, then a data column.
        await page.getByTestId("jobs-state").selectOption("waiting");
        await listed(page, "Page 1 · 50 jobs");
        await page.getByTestId("jobs-key").fill("k-7");
        await page.getByTestId("jobs-apply").click();
        expect(await listed(page, "Page 1 · 1 job")).toEqual([seeded.waiting[6]]);
        await page.getByTestId("jobs-key").fill("");
        await page.getByTestId("jobs-where-column").selectOption("customer");
        await page.getByTestId("jobs-where-value").fill("acme");
        await page.getByTestId("jobs-apply").click();
        expect(await listed(page, "Page 1 · 35 jobs")).toEqual(seeded.waiting.filter((_, i) => (i + 1) % 3 === 0));
        await page.getByTestId("jobs-where-value").fill("");
        await page.getByTestId("jobs-apply").click();
        await listed(page, "Page 1 · 50 jobs");

        // One job: its payload as text (the markup in it is not markup), headers, attempt.
        await page.getByTestId(`job-open-${seeded.waiting[0]}`).click();
        await page.getByTestId("job-detail").waitFor();
        expect(await page.getByTestId("job-payload").textContent()).toBe(JSON.stringify({ report: 1, note: XSS }, null, 2));
        expect(await page.locator("#jobs img").count()).toBe(0);
        expect(await page.getByTestId("job-headers").textContent()).toContain('"traceparent": "00-abc-01"');
        expect(await page.getByTestId("job-state").textContent()).toBe("Waiting");
        expect(await page.getByTestId("job-attempt").textContent()).toBe("1");
        await page.getByTestId("job-back").click();
        await page.getByTestId("jobs-state").selectOption("running");
        await listed(page, "Page 1 · 3 jobs");
        await page.getByTestId(`job-open-${seeded.running[0]}`).click();
        await page.getByTestId("job-detail").waitFor();
        expect(await page.getByTestId("job-state").textContent()).toBe("Running");
        expect(await page.getByTestId("job-attempt").textContent()).toBe("2");
        expect(await page.getByTestId("job-last-error").textContent()).toBe("TypeError: <b>pages</b> is undefined (1)");
        const leased = (await api(`/api/job?table=${LEASE}&id=${seeded.running[0]}`)).body as unknown as { leaseUntil: string; holder: string };
        const leaseShown = shownIn("Asia/Tokyo", new Date(leased.leaseUntil));
        expect(leased.holder).toBe("a worker's lease (locked_until holds its token)");
        expect(await page.getByTestId("job-holder").textContent()).toBe(`a worker's lease (locked_until holds its token), until ${leaseShown}`);
        expect(await page.getByTestId("job-detail").textContent()).not.toContain("[object");
        expect(await page.getByTestId("job-lease").textContent()).toBe(leaseShown);
        if (target.name === "postgres") await page.screenshot({ path: join(SHOTS, "job-page.png"), fullPage: true });

        // A payload over 64 KiB: its first 64 KiB, and a line that says so.
        await page.getByTestId("job-back").click();
        await page.getByTestId("jobs-state").selectOption("done");
        await listed(page, "Page 1 · 3 jobs");
        await page.getByTestId(`job-open-${seeded.big}`).click();
        expect(await page.getByTestId("job-payload-cut").textContent()).toBe(`Cut: the first 64 KiB of ${big.payload.bytes.toLocaleString("en-US")} bytes are shown.`);
        expect(await page.getByTestId("job-state").textContent()).toBe("Done");

        // Dead letters, from the overview's "Browse all", past the first 50.
        await page.goto(`${dashboard.process.url}#overview`);
        await page.getByTestId(`dead-browse-${LEASE}`).click();
        expect(await listed(page, "Page 1 · 50 jobs")).toEqual(seeded.dead.slice(0, 50));
        await page.getByTestId("jobs-next").click();
        expect(await listed(page, "Page 2 · 7 jobs")).toEqual(seeded.dead.slice(50));
        if (target.name === "postgres") await page.screenshot({ path: join(SHOTS, "dead-letters.png"), fullPage: true });
        await page.getByTestId(`job-open-${seeded.dead[56]}`).click();
        await page.getByTestId("job-detail").waitFor();
        expect(await page.getByTestId("job-state").textContent()).toBe("Dead letter");
        expect(await page.getByTestId("job-attempt").textContent()).toBe("5");
        expect(await page.getByTestId("job-last-error").textContent()).toBe("renderer exited with 137 (57)");

        // The row-lock form: rows a worker's transaction holds are running, the rest waiting, the dead group dead.
        if (target.name !== "sqlite") {
          const heldIds = (await db.selectFrom(ROWLOCK).select("id").where("grp", "=", "mail").orderBy("id").execute()).map((r) => Number(r.id));
          let held: () => void = () => undefined;
          const locked = new Promise<void>((resolve) => (held = resolve));
          // Held the way a row-lock claim holds rows (its transaction reads committed rows).
          holding = db
            .transaction()
            .setIsolationLevel("read committed")
            .execute(async (trx) => {
              await sql`select id from ${sql.table(ROWLOCK)} where grp = 'mail' order by id limit 2 for update skip locked`.execute(trx);
              held();
              await new Promise<void>((resolve) => (release = resolve));
            });
          await locked;
          await page.getByTestId("job-back").click();
          await page.getByTestId("jobs-table").selectOption(ROWLOCK);
          await page.getByTestId("jobs-state").selectOption("running");
          expect(await listed(page, "Page 1 · 2 jobs")).toEqual(heldIds.slice(0, 2));
          await page.getByTestId("jobs-state").selectOption("waiting");
          expect(await listed(page, "Page 1 · 3 jobs")).toEqual(heldIds.slice(2));
          await page.getByTestId("jobs-state").selectOption("deadLettered");
          expect((await listed(page, "Page 1 · 1 job")).length).toBe(1);
          // A route narrows a grouped table to its rows.
          expect((await api(`/api/jobs?table=${ROWLOCK}&state=waiting&route=mail`)).body.jobs.map((j) => Number(j.id))).toEqual(heldIds.slice(2));
          expect((await api(`/api/jobs?table=${ROWLOCK}&state=waiting&route=sms`)).body.jobs).toEqual([]);
          const one = (await api(`/api/job?table=${ROWLOCK}&id=${heldIds[0]}`)).body;
          expect(one).toMatchObject({ state: "running", holder: "a session holds its row lock (a claim's open transaction)" });
          release();
          await holding;
          expect((await api(`/api/job?table=${ROWLOCK}&id=${heldIds[0]}`)).body).toMatchObject({ state: "waiting", holder: null });
        }
        expect(errors).toEqual([]);
        if (target.name === "postgres") console.log(`screenshots: ${["jobs-list.png", "job-page.png", "dead-letters.png"].map((f) => join(SHOTS, f)).join(", ")}`);
        await page.close();
      } finally {
        release();
        await holding.catch(() => undefined);
        await dashboard.process.stop();
        for (const table of [LEASE, DEAD, ROWLOCK]) await sql.raw(`drop table if exists ${table}`).execute(db);
        await db.destroy();
      }
    });
  }
});
