/**
 * Who holds a running job, on the job page of the advisory form (the lease and row-lock forms are in
 * dashboard-jobs.test.ts): on PostgreSQL and MariaDB the session holding the row's key, found by the
 * running probe; on SQLite, where the keys live in the application's process, the page says it cannot
 * be seen. Through the JSON endpoint and the page in a real headless Chromium; a bulk delete from the
 * page's endpoint leaves the held row alone and counts it.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { dialectFor, inboxTableSql, type Engine } from "@sqlinbox/kysely-dialects";
import { type Kysely, sql } from "kysely";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium } from "./browser.js";
import { startDashboardProcess } from "./dashboard-process.js";
import { type EngineName, selects } from "../../../test/support/engine-selection.js";

const TABLE = `dash_advisory_${process.pid}_${Date.now() % 100_000}`;
process.env.TEST_ADVISORY_TABLE = TABLE;
const { AdvisoryJobs } = await import("./support/fixtures/advisory-table.js");
const MODULE = new URL("./support/fixtures/advisory-table.ts", import.meta.url).pathname;

const ENGINES: readonly { name: EngineName; engine: Engine; url: () => string }[] = [
  { name: "postgres", engine: "postgres", url: () => process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test" },
  { name: "mariadb", engine: "mysql", url: () => process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test" },
  { name: "sqlite", engine: "sqlite", url: () => `sqlite:${join(mkdtempSync(join(tmpdir(), "sqlinbox-holder-")), "app.db")}` },
];

// biome-ignore lint/suspicious/noExplicitAny: the table is made at run time; rows are plain records
type Db = Kysely<any>;

/** Holds advisory key `key` as an advisory claim does, on a session of its own, until the returned release is awaited. */
async function holdKey(db: Db, engine: Engine, key: string): Promise<() => Promise<void>> {
  const dialect = dialectFor(engine);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let held!: () => void;
  const holding = new Promise<void>((r) => (held = r));
  const session = db.connection().execute(async (c) => {
    const database = String((await c.executeQuery(dialect.schema.currentDatabase())).rows[0]?.name ?? "");
    const locked = (await c.executeQuery(dialect.advisory.tryLock(key, database))).rows[0]?.locked;
    if (!(locked === true || Number(locked) === 1)) throw new Error(`advisory key ${key} is held already`);
    held();
    await released;
    await c.executeQuery(dialect.advisory.unlock(key, database));
  });
  await Promise.race([holding, session]);
  return async () => {
    release();
    await session;
  };
}

describe("who holds an advisory job, on the job page", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  for (const target of ENGINES) {
    // An engine SQLINBOX_ENGINES leaves out is skipped (the test runs every engine when it is unset, as in CI).
    test.runIf(selects(target.name))(`${target.name}: the session holding the key, or (SQLite) that it cannot be seen`, async () => {
      const url = target.url();
      const { db } = (await parseDatabaseUrl(url).open({ max: 3 })) as unknown as { db: Db };
      await sql.raw(`drop table if exists ${TABLE}`).execute(db);
      for (const statement of inboxTableSql(AdvisoryJobs, target.engine)) await sql.raw(statement).execute(db);
      await db
        .insertInto(TABLE)
        .values(["c1", "c2"].map((customer) => ({ payload: Buffer.from("{}"), customer })))
        .execute();
      const [free, taken] = (await db.selectFrom(TABLE).select("id").orderBy("id").execute()).map((r) => String(r.id));
      const dashboard = await startDashboardProcess(["--url", url, "--module", MODULE, "--allow-writes", "--token", "holder-token-1"]);
      const job = async (id: string) => (await (await fetch(new URL(`/api/job?table=${TABLE}&id=${id}`, dashboard.url))).json()) as { state: string; holder: string | null };
      let release = async () => undefined;
      try {
        if (target.engine === "sqlite") {
          expect(await job(taken as string)).toMatchObject({
            state: "waiting or running",
            holder: "cannot be seen from outside (advisory keys on SQLite live in the application's process)",
          });
          return;
        }
        // The key a claim takes: the template filled in, under the table's name.
        release = await holdKey(db, target.engine, `${TABLE}:job-c2`);
        expect(await job(free as string)).toMatchObject({ state: "waiting", holder: null });
        expect(await job(taken as string)).toMatchObject({ state: "running", holder: `a session holds its advisory key "${TABLE}:job-c2"` });
        const page = await browser.newPage();
        await page.goto(`${dashboard.url}#jobs`);
        await page.getByTestId("jobs-state").selectOption("running");
        await page.getByTestId(`job-open-${taken}`).click();
        expect(await page.getByTestId("job-holder").textContent()).toBe(`a session holds its advisory key "${TABLE}:job-c2"`);
        await page.close();
        // A bulk delete leaves the held row alone and counts it; the free one goes.
        const res = await fetch(new URL("/api/jobs/bulk", dashboard.url), {
          method: "POST",
          headers: { "content-type": "application/json", "x-sqlinbox-token": "holder-token-1" },
          body: JSON.stringify({ table: TABLE, action: "delete", state: "waiting", ids: [free, taken] }),
        });
        expect(await res.json()).toEqual({ action: "delete", dryRun: false, matched: 2, touched: 1, signalled: 0, inWork: 1, notFound: 0 });
        expect((await db.selectFrom(TABLE).select("id").execute()).map((r) => String(r.id))).toEqual([taken]);
        await release();
        release = async () => undefined;
        expect(await job(taken as string)).toMatchObject({ state: "waiting", holder: null });
      } finally {
        await release();
        await dashboard.stop();
        await sql.raw(`drop table if exists ${TABLE}`).execute(db);
        await db.destroy();
      }
    });
  }
});
