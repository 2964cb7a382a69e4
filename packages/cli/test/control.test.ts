import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ExitCode } from "../src/exit-codes.js";
import { createQueue, dropTables, ENGINES, insertRows, sqlite, uniqueName, type TestDatabase, holdRows } from "./support/databases.js";
import { sqlinbox, sqlinboxJson } from "./support/run-bin.js";

const ENGINE_OF = { postgres: "postgres", mariadb: "mysql", sqlite: "sqlite" } as const;
const DECLARED_ROUTES = fileURLToPath(new URL("./support/fixtures/declared-routes.ts", import.meta.url));
const DAY_MS = 24 * 60 * 60 * 1000;

/** The bin on a host whose clock reads 60 s ahead of the database's (`Date` shifted for the whole process). */
const HOST_AHEAD = {
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${fileURLToPath(new URL("../../../test/support/skew-host-clock.mjs", import.meta.url))}`.trim(),
  SQLINBOX_TEST_HOST_SKEW_MS: "60000",
};
async function onHostAhead<T>(args: readonly string[]): Promise<T> {
  const result = await sqlinbox([...args, "--json"], { env: HOST_AHEAD });
  if (result.code !== 0) throw new Error(`sqlinbox ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

describe.each(ENGINES)("sqlinbox pause, resume and cancel on %s", (name, open) => {
  let t: TestDatabase;
  const tables: string[] = [];
  beforeAll(async () => {
    t = await open();
    // The control table from `sqlinbox ddl --control`, run as a migration would.
    const ddl = await sqlinbox(["ddl", "--control", "--engine", ENGINE_OF[name]]);
    expect(ddl.code).toBe(0);
    const statements = ddl.stdout
      .replace(/^--.*$/gm, "")
      .split(";\n")
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    expect(statements).toHaveLength(1);
    for (const statement of statements) await sql.raw(statement).execute(t.db);
  });
  afterAll(async () => {
    await dropTables(t, ...tables);
    await t.close();
  });

  test("pause shows in status (text and JSON) until resume; resuming a route that is not paused is exit 3", async () => {
    const jobs = await createQueue(t, uniqueName("ctl_status"), { lease: true });
    tables.push(jobs);
    const route = uniqueName("route");
    const paused = await sqlinbox(["pause", route, "--url", t.url]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toContain(`paused ${route}`);
    const status = await sqlinboxJson<{ paused: string[] }>(["status", "--url", t.url, "--table", jobs]);
    expect(status.paused).toContain(route);
    expect((await sqlinbox(["status", "--url", t.url, "--table", jobs])).stdout).toMatch(new RegExp(`Paused routes: .*${route}`));
    // A second pause leaves one.
    expect((await sqlinbox(["pause", route, "--url", t.url])).code).toBe(0);
    expect((await sqlinboxJson<{ paused: string[] }>(["status", "--url", t.url, "--table", jobs])).paused.filter((r) => r === route)).toHaveLength(1);
    expect(await sqlinboxJson(["resume", route, "--url", t.url])).toEqual({ route, resumed: true });
    expect((await sqlinboxJson<{ paused: string[] }>(["status", "--url", t.url, "--table", jobs])).paused).not.toContain(route);
    const again = await sqlinbox(["resume", route, "--url", t.url]);
    // A failure is said once, on stderr.
    expect([again.code, again.stdout, again.stderr]).toEqual([ExitCode.nothingMatched, "", `sqlinbox: route "${route}" was not paused\n`]);
  });

  test("pause and resume --module refuse a route the module's queues do not declare, naming it and the declared ones; a declared route or prefix goes through", async () => {
    const prefix = uniqueName("mod");
    const env = { TEST_ROUTE_PREFIX: prefix };
    const declared = `${prefix}.mail, ${prefix}.reports`;
    const pausedRows = async (route: string) => (await t.db.selectFrom("sqlinbox_control").select("route").where("kind", "=", "pause").where("route", "=", route).execute()).length;
    for (const command of ["pause", "resume"]) {
      const typo = await sqlinbox([command, `${prefix}.mails`, "--url", t.url, "--module", DECLARED_ROUTES], { env });
      expect([typo.code, typo.stdout]).toEqual([ExitCode.usage, ""]);
      expect(typo.stderr).toBe(
        `sqlinbox: route "${prefix}.mails" is not declared in ${DECLARED_ROUTES}, which declares the routes ${declared}; nothing was ${command === "pause" ? "paused" : "resumed"}\n`,
      );
    }
    expect(await pausedRows(`${prefix}.mails`)).toBe(0);
    // A prefix names the declared routes it takes, as a pause applies to them.
    const route = `${prefix}.*`;
    const paused = await sqlinbox(["pause", route, "--url", t.url, "--module", DECLARED_ROUTES], { env });
    expect([paused.code, paused.stderr]).toEqual([0, ""]);
    expect(await pausedRows(route)).toBe(1);
    const resumed = await sqlinbox(["resume", route, "--url", t.url, "--module", DECLARED_ROUTES, "--json"], { env });
    expect([resumed.code, resumed.stderr, JSON.parse(resumed.stdout)]).toEqual([0, "", { route, resumed: true }]);
  });

  test("without --module, pause and resume warn on a route no running app has recorded in the last day, and not on one an app serves", async () => {
    const served = uniqueName("served");
    const stale = uniqueName("stale");
    const nobody = uniqueName("nobody");
    // What an app writes as it starts (and once an hour): one row per route it serves, under its name.
    await t.db
      .insertInto("sqlinbox_control")
      .values([
        { kind: "route", route: served, target: "reports-app", requested_at: t.types.now(-60_000) },
        { kind: "route", route: stale, target: "old-app", requested_at: t.types.now(-2 * DAY_MS) },
      ])
      .execute();
    try {
      for (const route of [nobody, stale]) {
        const paused = await sqlinbox(["pause", route, "--url", t.url]);
        expect([paused.code, paused.stdout]).toEqual([0, `paused ${route}: its subscriptions stop claiming within their poll interval\n`]);
        expect(paused.stderr).toMatch(
          new RegExp(`^sqlinbox: warning: no running app serves a route "${route}" \\(the routes apps serve: .*${served}.*\\); paused all the same\\. Pass --module`),
        );
        expect(paused.stderr.match(/\(the routes apps serve: ([^)]*)\)/)?.[1]).not.toContain(stale);
        const resumed = await sqlinbox(["resume", route, "--url", t.url]);
        expect([resumed.code, resumed.stdout]).toEqual([0, `resumed ${route}\n`]);
        expect(resumed.stderr).toContain(`no running app serves a route "${route}"`);
      }
      const paused = await sqlinbox(["pause", served, "--url", t.url]);
      expect([paused.code, paused.stderr]).toEqual([0, ""]);
      const resumed = await sqlinbox(["resume", served, "--url", t.url]);
      expect([resumed.code, resumed.stderr]).toEqual([0, ""]);
    } finally {
      await t.db.deleteFrom("sqlinbox_control").where("kind", "=", "route").where("route", "in", [served, stale]).execute();
    }
  });

  test("lease table: cancel removes a row not in work, signals one with a live lease, and a missing id is exit 3", async () => {
    const jobs = await createQueue(t, uniqueName("ctl_lease"), { lease: true });
    tables.push(jobs);
    await insertRows(t, jobs, [
      { id: 1, payload: '{"n":1}', grp: "a" },
      { id: 2, payload: '{"n":2}', grp: "a", locked_until: t.types.now(60_000) },
      { id: 3, payload: '{"n":3}', grp: "a", locked_until: t.types.now(-60_000) },
    ]);
    // A route of its own: an app of another test file on this database may serve a route named jobs.
    const route = uniqueName("route");
    const cancel = (id: string) => sqlinboxJson<{ result: string }>(["cancel", route, id, "--url", t.url, "--table", jobs]);
    expect((await cancel("1")).result).toBe("removed");
    expect((await cancel("2")).result).toBe("signalled");
    // An expired lease is no longer in work.
    expect((await cancel("3")).result).toBe("removed");
    const left = await t.db.selectFrom(jobs).select("id").execute();
    expect(left.map((r) => Number(r.id))).toEqual([2]);
    const missing = await sqlinbox(["cancel", route, "99", "--url", t.url, "--table", jobs]);
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([ExitCode.nothingMatched, "", "sqlinbox: no row 99 (or it is done)\n"]);
    // The request for the row in work waits in the control table for the process running it.
    const requests = await t.db.selectFrom("sqlinbox_control").select(["kind", "target"]).where("route", "=", route).where("target", "in", ["1", "2", "3"]).execute();
    expect(requests).toEqual([{ kind: "cancel", target: "2" }]);
    await t.db.deleteFrom("sqlinbox_control").where("route", "=", route).where("target", "=", "2").execute();
  });

  test("from a host whose clock runs 60 s ahead, a lease live on the database's clock is in work: status counts it, peek shows it leased, cancel signals it", async () => {
    const jobs = await createQueue(t, uniqueName("ctl_skew"), { lease: true });
    tables.push(jobs);
    const route = uniqueName("route");
    // Row 1's lease runs 20 s more on the database's clock; on the host's, it ran out 40 s ago.
    await insertRows(t, jobs, [
      { id: 1, payload: '{"n":1}', grp: "a", locked_until: t.types.now(20_000) },
      { id: 2, payload: '{"n":2}', grp: "a" },
    ]);
    const status = await onHostAhead<{ tables: { totals: { ready: number; inWork: number } }[] }>(["status", "--url", t.url, "--table", jobs]);
    expect(status.tables[0]?.totals).toMatchObject({ ready: 1, inWork: 1 });
    const leased = await onHostAhead<{ columns: { id: unknown } }[]>(["peek", "--url", t.url, "--table", jobs, "--state", "leased"]);
    expect(leased.map((r) => Number(r.columns.id))).toEqual([1]);
    expect((await onHostAhead<{ result: string }>(["cancel", route, "1", "--url", t.url, "--table", jobs])).result).toBe("signalled");
    expect((await onHostAhead<{ result: string }>(["cancel", route, "2", "--url", t.url, "--table", jobs])).result).toBe("removed");
    expect((await t.db.selectFrom(jobs).select("id").execute()).map((r) => Number(r.id))).toEqual([1]);
    // The request waits for the process running row 1, written at the database's time (not a minute ahead).
    const request = await t.db.selectFrom("sqlinbox_control").select(["target", "requested_at"]).where("route", "=", route).execute();
    expect(request.map((r) => r.target)).toEqual(["1"]);
    const at = request[0]?.requested_at as unknown;
    const requestedAt = at instanceof Date ? at.getTime() : Date.parse(`${String(at).replace(" ", "T").replace(/Z?$/, "Z")}`);
    expect(Math.abs(requestedAt - Date.now())).toBeLessThan(10_000);
    await t.db.deleteFrom("sqlinbox_control").where("route", "=", route).execute();
  });

  test.runIf(name !== "sqlite")("row-lock table: a row a claim holds is signalled, a free one removed", async () => {
    const jobs = await createQueue(t, uniqueName("ctl_rowlock"));
    tables.push(jobs);
    const route = uniqueName("route");
    await insertRows(t, jobs, [
      { id: 1, payload: '{"n":1}', grp: "a" },
      { id: 2, payload: '{"n":2}', grp: "a" },
    ]);
    const release = await holdRows(t.db, `select id from ${jobs} where id = 1 for update skip locked`);
    try {
      expect((await sqlinboxJson<{ result: string }>(["cancel", route, "1", "--url", t.url, "--table", jobs])).result).toBe("signalled");
      expect((await sqlinboxJson<{ result: string }>(["cancel", route, "2", "--url", t.url, "--table", jobs])).result).toBe("removed");
    } finally {
      await release();
    }
    expect((await t.db.selectFrom(jobs).select("id").execute()).map((r) => Number(r.id))).toEqual([1]);
    await t.db.deleteFrom("sqlinbox_control").where("route", "=", route).execute();
  });
});

describe("without the control table", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await sqlite();
  });
  afterAll(async () => t.close());

  test("pause and cancel say how to create it (exit 2); status shows no paused routes", async () => {
    const jobs = await createQueue(t, "jobs", { lease: true });
    await insertRows(t, jobs, [{ id: 1, payload: '{"n":1}', grp: "a" }]);
    const pause = await sqlinbox(["pause", "reports", "--url", t.url]);
    expect(pause.code).toBe(ExitCode.cannotConnect);
    expect(pause.stderr).toContain('pause, resume and cancel need the control table "sqlinbox_control"');
    expect(pause.stderr).toContain("sqlinbox ddl --control");
    const cancel = await sqlinbox(["cancel", "jobs", "1", "--url", t.url, "--table", jobs]);
    expect(cancel.code).toBe(ExitCode.cannotConnect);
    expect((await sqlinboxJson<{ paused: unknown }>(["status", "--url", t.url, "--table", jobs])).paused).toBeNull();
    expect((await t.db.selectFrom(jobs).select("id").execute()).length).toBe(1);
  });
});
