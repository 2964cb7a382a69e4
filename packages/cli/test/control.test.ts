import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ExitCode } from "../src/exit-codes.js";
import { createQueue, dropTables, ENGINES, insertRows, sqlite, uniqueName, type TestDatabase } from "./databases.js";
import { sqlinbox, sqlinboxJson } from "./run-bin.js";

const ENGINE_OF = { postgres: "postgres", mariadb: "mysql", sqlite: "sqlite" } as const;

/** Holds the rows `lockSql` selects the way a row-lock claim does, until the returned release is awaited. */
async function holdRows(db: TestDatabase["db"], lockSql: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let holding!: () => void;
  const held = new Promise<void>((r) => (holding = r));
  const holder = db
    .transaction()
    .setIsolationLevel("read committed")
    .execute(async (trx) => {
      await sql.raw(lockSql).execute(trx);
      holding();
      await released;
    });
  await held;
  return async () => {
    release();
    await holder;
  };
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
    expect(again.code).toBe(ExitCode.nothingMatched);
    expect(again.stdout).toContain("was not paused");
  });

  test("lease table: cancel removes a row not in work, signals one with a live lease, and a missing id is exit 3", async () => {
    const jobs = await createQueue(t, uniqueName("ctl_lease"), { lease: true });
    tables.push(jobs);
    await insertRows(t, jobs, [
      { id: 1, payload: '{"n":1}', grp: "a" },
      { id: 2, payload: '{"n":2}', grp: "a", locked_until: t.types.now(60_000) },
      { id: 3, payload: '{"n":3}', grp: "a", locked_until: t.types.now(-60_000) },
    ]);
    const cancel = (id: string) => sqlinboxJson<{ result: string }>(["cancel", "jobs", id, "--url", t.url, "--table", jobs]);
    expect((await cancel("1")).result).toBe("removed");
    expect((await cancel("2")).result).toBe("signalled");
    // An expired lease is no longer in work.
    expect((await cancel("3")).result).toBe("removed");
    const left = await t.db.selectFrom(jobs).select("id").execute();
    expect(left.map((r) => Number(r.id))).toEqual([2]);
    const missing = await sqlinbox(["cancel", "jobs", "99", "--url", t.url, "--table", jobs]);
    expect(missing.code).toBe(ExitCode.nothingMatched);
    expect(missing.stdout).toContain("no row 99");
    // The request for the row in work waits in the control table for the process running it.
    const requests = await t.db.selectFrom("sqlinbox_control").select(["kind", "target"]).where("route", "=", "jobs").where("target", "in", ["1", "2", "3"]).execute();
    expect(requests).toEqual([{ kind: "cancel", target: "2" }]);
    await t.db.deleteFrom("sqlinbox_control").where("route", "=", "jobs").where("target", "=", "2").execute();
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
