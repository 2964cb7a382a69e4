/**
 * The job browser's search in payloads and the job page's route policy, through the JSON endpoints
 * and in a real headless Chromium, on PostgreSQL, MariaDB and SQLite, with the payload column the
 * DDL makes (bytes: `bytea`, `longblob`, `blob`): a page reads a window of 10,000 rows from its
 * cursor and goes on from the window's end; wildcards, a backslash and a non-ASCII letter match as
 * themselves; bytes that are not UTF-8 break nothing; a bulk action refuses a search as its filter. A job that is
 * a workflow's step shows its run and the run's steps.
 */
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { payloadOf, workflow } from "@sqlinbox/core";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { inboxTableSql, type Engine } from "@sqlinbox/kysely-dialects";
import { createWorkflowTable, SqlBroker } from "@sqlinbox/runtime";
import { type Kysely, sql } from "kysely";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type EngineName, selects } from "../../../test/support/engine-selection.js";
import { launchChromium } from "./browser.js";
import { startDashboardProcess } from "./dashboard-process.js";

const prefix = `dash_search_${process.pid}_${Date.now() % 100_000}`;
process.env.TEST_JOBS_PREFIX = prefix;
const { DeadJobs, LeaseJobs } = await import("./support/fixtures/job-tables.js");
const MODULE = new URL("./support/fixtures/job-tables.ts", import.meta.url).pathname;
const LEASE = `${prefix}_lease`;
const DEAD = `${prefix}_dead`;
const SHOTS = join(tmpdir(), "sqlinbox-dashboard-search");
const TOKEN = "search-token-0123";

const ENGINES: readonly { name: EngineName; engine: Engine; url: () => string }[] = [
  { name: "postgres", engine: "postgres", url: () => process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test" },
  { name: "mariadb", engine: "mysql", url: () => process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test" },
  { name: "sqlite", engine: "sqlite", url: () => `sqlite:${join(mkdtempSync(join(tmpdir(), "sqlinbox-search-")), "app.db")}` },
];

// biome-ignore lint/suspicious/noExplicitAny: the tables are made at run time; rows are plain records
type Db = Kysely<any>;
const bytes = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v), "utf8");
const WAITING = 10_010;
/** The ids whose payload holds "Needle": those ending in 007. */
const NEEDLES = Array.from({ length: 11 }, (_, i) => i * 1000 + 7);

/** Ids 1–10 010 waiting ("Needle-<id>" where the id ends in 007, else "hay"), then the odd payloads, then three dead letters. */
async function seed(db: Db, engine: Engine): Promise<Record<"zurich" | "path" | "code" | "decoy" | "binary", number>> {
  for (const spec of [LeaseJobs, DeadJobs]) {
    await sql.raw(`drop table if exists ${spec.description.table}`).execute(db);
    for (const statement of inboxTableSql(spec, engine)) await sql.raw(statement).execute(db);
  }
  for (let from = 1; from <= WAITING; from += 1000) {
    const ids = Array.from({ length: Math.min(1000, WAITING - from + 1) }, (_, i) => from + i);
    await db
      .insertInto(LEASE)
      .values(ids.map((n) => ({ payload: bytes({ n, tag: n % 1000 === 7 ? `Needle-${n}` : "hay" }), customer: "globex" })))
      .execute();
  }
  const odd = [bytes({ city: "Zürich" }), bytes({ path: "C:\\temp" }), bytes({ code: "50%_off" }), bytes({ code: "5000 off" }), Buffer.from([0xff, 0xfe, 0x41, 0xc3])];
  for (const payload of odd) await db.insertInto(LEASE).values({ payload, customer: "globex" }).execute();
  await db
    .insertInto(DEAD)
    .values(["needle-dead", "other", "more"].map((tag) => ({ payload: bytes({ tag }), attempts: 5, last_error: "boom", customer: "acme" })))
    .execute();
  return { zurich: WAITING + 1, path: WAITING + 2, code: WAITING + 3, decoy: WAITING + 4, binary: WAITING + 5 };
}

describe("the job browser's payload search and the job page's route policy", () => {
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
      `${target.name}: a window of 10,000 rows a page, text as typed, bytes read as text, the route's policy`,
      async () => {
        const url = target.url();
        const { db } = (await parseDatabaseUrl(url).open({ max: 2 })) as unknown as { db: Db };
        const odd = await seed(db, target.engine);
        const dashboard = await startDashboardProcess(["--url", url, "--module", MODULE, "--table", LEASE, "--allow-writes", "--token", TOKEN, "--sample-every", "30"]);
        try {
          type Listed = { jobs: { id: string; preview: string | null }[]; next: string | null; notes: string[]; error?: string };
          const api = async (path: string) => {
            const res = await fetch(new URL(path, dashboard.url));
            return { status: res.status, body: (await res.json()) as Listed };
          };
          const ids = (listed: { body: Listed }) => listed.body.jobs.map((j) => Number(j.id));
          // The page's cursor after an id: opaque to the page, built here to start a search past the waiting rows.
          const after = (id: number) => `&after=${Buffer.from(JSON.stringify(["waiting", "id", id])).toString("base64url")}`;
          const search = (text: string, more = "") => api(`/api/jobs?table=${LEASE}&state=waiting&search=${encodeURIComponent(text)}${more}`);

          // The first page read ids 1–10 000 and found ten: it goes on from the window's end, and says why it is short.
          const first = await search("NEEDLE");
          expect(ids(first)).toEqual(NEEDLES.slice(0, 10));
          expect(first.body.next).not.toBeNull();
          expect(first.body.notes).toContain(
            "a search reads the payload's text of each row (no index serves it): a page reads at most 10,000 rows from its cursor, so it may list fewer jobs than its size while more pages follow",
          );
          const second = await search("needle", `&after=${first.body.next}`);
          expect([ids(second), second.body.next]).toEqual([[10_007], null]);
          // A full page before the window's end goes on from its last job.
          const hay = await search("hay", "&limit=5");
          expect([ids(hay), (await search("hay", `&limit=5&after=${hay.body.next}`)).body.jobs.map((j) => Number(j.id))]).toEqual([
            [1, 2, 3, 4, 5],
            [6, 8, 9, 10, 11],
          ]);
          // A-Z in either case, ü as typed; a backslash as JSON writes it; % and _ as themselves, not wildcards.
          expect(ids(await search("ZüRICH", after(WAITING)))).toEqual([odd.zurich]);
          expect(ids(await search('"c:\\\\temp"', after(WAITING)))).toEqual([odd.path]);
          expect(ids(await search("0%_o", after(WAITING)))).toEqual([odd.code]);
          expect(ids(await search("5000 off", after(WAITING)))).toEqual([odd.decoy]);
          // Bytes that are not UTF-8 break no search: the A among them is found.
          expect(ids(await search("a", after(odd.decoy)))).toEqual([odd.binary]);
          const dead = await api(`/api/jobs?table=${LEASE}&state=deadLettered&search=needle`);
          expect(dead.body.jobs.map((j) => j.preview)).toEqual(['{"tag":"needle-dead"}']);
          expect(await search("needle", "&state=scheduled&sort=runAt")).toMatchObject({ status: 400 });
          const bulk = await fetch(new URL("/api/jobs/bulk", dashboard.url), {
            method: "POST",
            headers: { "content-type": "application/json", "x-sqlinbox-token": TOKEN },
            body: JSON.stringify({ table: LEASE, action: "cancel", state: "waiting", search: "needle", dryRun: true }),
          });
          expect([bulk.status, ((await bulk.json()) as { error: string }).error]).toEqual([
            400,
            "a bulk action does not take a payload search as its filter (a search reads a window of rows a page): pick the jobs it listed and send their ids",
          ]);
          expect(Number((await db.selectFrom(LEASE).select(sql<number>`count(*)`.as("n")).executeTakeFirstOrThrow()).n)).toBe(WAITING + 5);

          // The route's policy, as the module declares the queue.
          const job = (await (await fetch(new URL(`/api/job?table=${LEASE}&id=7`, dashboard.url))).json()) as { policies: unknown[] };
          expect(job.policies).toEqual([
            {
              route: "reports",
              maxAttempts: 5,
              deadLetter: `table ${DEAD}`,
              timeout: { ms: 90_000, graceMs: 5_000 },
              onError: "default backoff",
              workers: 4,
              batch: 10,
              pollIntervalMs: expect.any(Number),
              rateLimit: { max: 100, perMs: 60_000 },
            },
          ]);

          // A job that is a step of a workflow run: its page shows the run and every step, the waiting one too.
          await createWorkflowTable(db);
          const Flow = workflow(`${prefix}_flow`, payloadOf<{ n: number; tag: string }>())
            .step("first", LeaseJobs, (input) => input)
            .step("second", LeaseJobs, { after: ["first"] }, (input) => input);
          const broker = SqlBroker.fromUrl(url).route(LeaseJobs, "first").route(LeaseJobs, "second").workflow(Flow);
          const run = await broker.startWorkflow(Flow, { n: 0, tag: "flow-step" });
          await broker.close();
          const [stepJob] = ids(await search("flow-step", after(odd.binary)));
          type Shown = { workflow: { id: string; name: string; state: string; step: string; item: number | null; steps: unknown[] } | null };
          const shownStep = (await (await fetch(new URL(`/api/job?table=${LEASE}&id=${stepJob}`, dashboard.url))).json()) as Shown;
          expect(shownStep.workflow).toEqual({
            id: run.id,
            name: `${prefix}_flow`,
            state: "running",
            step: "first",
            item: null,
            steps: [
              { step: "first", item: null, state: "released", jobTable: LEASE, jobId: String(stepJob) },
              { step: "second", item: null, state: "waiting", jobTable: null, jobId: null },
            ],
          });
          expect(job).toMatchObject({ workflow: null });

          // The page: the search box, the short first page and the next, the job's page with its policy.
          const page = await browser.newPage({ viewport: { width: 1360, height: 1000 } });
          const errors: string[] = [];
          page.on("pageerror", (e) => errors.push(e.message));
          await page.goto(`${dashboard.url}#jobs`);
          await page.getByTestId("token").fill(TOKEN);
          await page.getByTestId("jobs-view").waitFor();
          await page.getByTestId("jobs-table").selectOption(LEASE);
          await page.getByTestId("jobs-search").fill("needle");
          await page.getByTestId("jobs-apply").click();
          await expect.poll(() => page.getByTestId("jobs-page").textContent(), { timeout: 10_000 }).toBe("Page 1 · 10 jobs");
          // A search's matches are acted on as picked rows only: nothing picked, no action.
          expect(await page.getByTestId("bulk-cancel").isDisabled()).toBe(true);
          expect(await page.locator('[data-testid="bulk-scope"] option[value="filter"]').isDisabled()).toBe(true);
          await page.getByTestId(`job-select-${NEEDLES[0]}`).check();
          expect(await page.getByTestId("bulk-cancel").isDisabled()).toBe(false);
          if (target.name === "postgres") await page.screenshot({ path: join(SHOTS, "search.png"), fullPage: false });
          await page.getByTestId("jobs-next").click();
          await expect.poll(() => page.getByTestId("jobs-page").textContent(), { timeout: 10_000 }).toBe("Page 2 · 1 job");
          await page.getByTestId(`job-open-${NEEDLES[10]}`).click();
          await page.getByTestId("job-detail").waitFor();
          expect(await page.getByTestId("policy-max-attempts-reports").textContent()).toBe("5");
          expect(await page.getByTestId("policy-timeout-reports").textContent()).toBe("1.5 min, then 5 s grace");
          expect(await page.getByTestId("policy-dead-letter-reports").textContent()).toBe(`table ${DEAD}`);
          expect(await page.getByTestId("policy-rate-limit-reports").textContent()).toBe("100 per 1 min");
          expect(await page.getByTestId("job-payload").textContent()).toBe(JSON.stringify({ n: 10_007, tag: "Needle-10007" }, null, 2));
          if (target.name === "postgres") await page.screenshot({ path: join(SHOTS, "job-policy.png"), fullPage: true });
          // The workflow step's page: the run and its steps, this one marked.
          await page.getByTestId("job-back").click();
          await page.getByTestId("jobs-search").fill("flow-step");
          await page.getByTestId("jobs-apply").click();
          // Ids 1–10,000 hold none: an empty first page that leads on to the window holding it.
          await page.getByTestId("jobs-empty").waitFor();
          await page.getByTestId("jobs-next").click();
          await page.getByTestId(`job-open-${stepJob}`).click();
          await page.getByTestId("job-workflow").waitFor();
          expect(await page.getByTestId("job-workflow-run").textContent()).toBe(`${prefix}_flow ${run.id}: running. This job is step first.`);
          expect(await page.getByTestId("workflow-step-second").textContent()).toBe("secondwaiting—");
          if (target.name === "postgres") {
            await page.screenshot({ path: join(SHOTS, "job-workflow.png"), fullPage: true });
            console.log(`screenshots: ${["search.png", "job-policy.png", "job-workflow.png"].map((f) => join(SHOTS, f)).join(", ")}`);
          }
          expect(errors).toEqual([]);
          await page.close();
        } finally {
          await dashboard.stop();
          for (const table of [LEASE, DEAD]) await sql.raw(`drop table if exists ${table}`).execute(db);
          await db.destroy();
        }
      },
      120_000,
    );
  }
});
