import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ExitCode } from "../src/exit-codes.js";
import { dropTables, ENGINES, insertRows, type TestDatabase } from "./support/databases.js";
import { holdKey, holdRows, jobsTables } from "./support/jobs-tables.js";
import { sqlinbox } from "./support/run-bin.js";

const ENGINE_OF = { postgres: "postgres", mariadb: "mysql", sqlite: "sqlite" } as const;

interface Counts {
  action: string;
  matched: number;
  touched: number;
  signalled: number;
  inWork: number;
  notFound: number;
}

describe.each(ENGINES)("sqlinbox jobs cancel, delete, retry and reschedule on %s", (name, open) => {
  let t: TestDatabase;
  const tables: string[] = [];
  beforeAll(async () => {
    t = await open();
    // The control table cancel requests go in, from `sqlinbox ddl --control` as a migration would run it.
    const ddl = await sqlinbox(["ddl", "--control", "--engine", ENGINE_OF[name]]);
    expect(ddl.code).toBe(0);
    await sql
      .raw(
        ddl.stdout
          .replace(/^--.*$/gm, "")
          .trim()
          .replace(/;$/, ""),
      )
      .execute(t.db);
  });
  afterAll(async () => {
    await dropTables(t, ...tables);
    await t.close();
  });

  const time = (value: unknown): number => (value instanceof Date ? value.getTime() : Date.parse(`${String(value).replace(" ", "T").replace(/Z?$/, "Z")}`));

  test.each(["lease", "rowLock"] as const)(
    "%s form: cancel 100 waiting rows, a claimed row left alone or signalled, reschedule 10, retry them, retry 100 dead letters",
    async (form) => {
      const q = await jobsTables(t, form, false);
      tables.push(q.table, q.dead);
      // A claim holds row 101: a live lease, or (row lock) a transaction's FOR UPDATE; SQLite has no row locks to hold.
      const holds = form === "lease" || name !== "sqlite";
      await insertRows(t, q.table, [
        ...Array.from({ length: 100 }, (_, i) => ({ payload: JSON.stringify({ n: i + 1 }), customer_id: "c1" })),
        { payload: '{"n":101}', customer_id: "c1", ...(form === "lease" ? { locked_until: t.types.now(60_000) } : {}) },
        { payload: '{"n":102}', customer_id: "c2" },
      ]);
      const release = form === "rowLock" && holds ? await holdRows(t.db, `select id from ${q.table} where id = 101 for update skip locked`) : async () => undefined;
      const left = async () => (await t.db.selectFrom(q.table).select("id").orderBy("id").execute()).map((r) => Number(r.id));
      const run = async (args: string[], code = 0) => q.json<Counts>(["jobs", ...args], code);
      try {
        const refused = await q.run(["jobs", "cancel", q.table, "--state", "waiting", "--where", "customer_id=c1"]);
        expect([refused.code, refused.stdout, refused.stderr]).toEqual([
          ExitCode.notConfirmed,
          "",
          "sqlinbox: jobs cancel changes rows: pass --allow-writes to run it, or --dry-run to count what it would take\n",
        ]);
        expect(await run(["cancel", q.table, "--state", "waiting", "--where", "customer_id=c1", "--dry-run"])).toEqual({
          action: "cancel",
          dryRun: true,
          matched: holds ? 100 : 101,
        });
        expect((await left()).length).toBe(102);

        const cancelled = await run(["cancel", q.table, "--state", "waiting", "--where", "customer_id=c1", "--allow-writes"]);
        expect(cancelled).toEqual({ action: "cancel", matched: holds ? 100 : 101, touched: holds ? 100 : 101, signalled: 0, inWork: 0, notFound: 0 });
        // All gone and none started: the held row and the other customer's row are as they were, and no cancel request is left behind.
        expect(await left()).toEqual(holds ? [101, 102] : [102]);
        expect((await t.db.selectFrom("sqlinbox_control").select("target").where("route", "=", q.table).execute()).length).toBe(0);

        if (holds) {
          const deleted = await q.run(["jobs", "delete", q.table, "--ids", "101,102,999", "--allow-writes", "--json"]);
          expect([deleted.code, JSON.parse(deleted.stdout)]).toEqual([ExitCode.partly, { action: "delete", matched: 3, touched: 1, signalled: 0, inWork: 1, notFound: 1 }]);
          expect(deleted.stderr).toBe("sqlinbox: done in part: 1 rows left alone because a claim holds them, 1 not found (or done)\n");
          expect(await left()).toEqual([101]);
          const text = await q.run(["jobs", "cancel", q.table, "--ids", "101", "--allow-writes"]);
          expect([text.code, text.stdout]).toEqual([0, `jobs cancel on ${q.table}: 0 removed, 1 in work signalled, 0 left alone (in work), 0 not found\n`]);
          expect(await left()).toEqual([101]);
          const request = await t.db.selectFrom("sqlinbox_control").select(["kind", "target"]).where("route", "=", q.table).execute();
          expect(request).toEqual([{ kind: "cancel", target: "101" }]);
          await t.db.deleteFrom("sqlinbox_control").where("route", "=", q.table).execute();
        }

        await insertRows(
          t,
          q.table,
          Array.from({ length: 10 }, (_, i) => ({ payload: JSON.stringify({ later: i }), customer_id: "c3" })),
        );
        const later = async () => (await t.db.selectFrom(q.table).select(["retry_after"]).where("customer_id", "=", "c3").execute()).map((r) => time(r.retry_after));
        expect(await run(["reschedule", q.table, "--state", "waiting", "--where", "customer_id=c3", "--in", "3600000", "--allow-writes"])).toMatchObject({
          touched: 10,
          inWork: 0,
        });
        for (const at of await later()) expect(Math.abs(at - Date.now() - 3_600_000)).toBeLessThan(60_000);
        const retried = await run(["retry", q.table, "--state", "scheduled", "--allow-writes"]);
        expect(retried).toMatchObject({ matched: 10, touched: 10, inWork: 0, notFound: 0 });
        for (const at of await later()) expect(Math.abs(at - Date.now())).toBeLessThan(60_000);

        await insertRows(
          t,
          q.dead,
          Array.from({ length: 100 }, (_, i) => ({ payload: JSON.stringify({ dead: i + 1 }), attempts: 5, last_error: `boom ${i + 1}` })),
        );
        expect(await run(["retry", q.table, "--state", "deadLettered", "--dry-run"])).toEqual({ action: "retry", dryRun: true, matched: 100 });
        expect(await run(["retry", q.table, "--state", "deadLettered", "--allow-writes"])).toEqual({
          action: "retry",
          matched: 100,
          touched: 100,
          signalled: 0,
          inWork: 0,
          notFound: 0,
        });
        expect((await t.db.selectFrom(q.dead).select("id").execute()).length).toBe(0);
        const back = await t.db.selectFrom(q.table).select("payload").where("payload", "like", '{"dead":%').execute();
        expect(back.length).toBe(100);
      } finally {
        await release();
      }
    },
  );

  // SQLite keeps advisory keys in the application's process, where no other process can see them.
  test.runIf(name !== "sqlite")("advisory form: a row whose key a session holds lists as running, and a bulk action leaves it alone or signals it", async () => {
    const q = await jobsTables(t, "advisory", false);
    tables.push(q.table, q.dead);
    await insertRows(t, q.table, [
      { payload: '{"n":1}', customer_id: "c1" },
      { payload: '{"n":2}', customer_id: "c1" },
      { payload: '{"n":3}', customer_id: "c3" },
      { payload: '{"n":4}', customer_id: "c2" },
    ]);
    // The key a claim takes: the template filled in, under the table's name.
    const release = await holdKey(t, `${q.table}:job-c2`);
    try {
      const [waiting, running] = await Promise.all([
        q.json<{ rows: { id: string }[] }>(["jobs", "list", q.table, "--state", "waiting"]),
        q.json<{ rows: { id: string }[] }>(["jobs", "list", q.table, "--state", "running"]),
      ]);
      expect([waiting.rows.map((r) => r.id), running.rows.map((r) => r.id)]).toEqual([["1", "2", "3"], ["4"]]);
      const retried = await q.run(["jobs", "retry", q.table, "--ids", "1,2,3,4", "--allow-writes", "--json"]);
      expect([retried.code, JSON.parse(retried.stdout)]).toEqual([ExitCode.partly, { action: "retry", matched: 4, touched: 3, signalled: 0, inWork: 1, notFound: 0 }]);
      const untouched = await t.db.selectFrom(q.table).select(["id", "retry_after"]).orderBy("id").execute();
      expect(untouched.map((r) => [Number(r.id), r.retry_after === null])).toEqual([
        [1, false],
        [2, false],
        [3, false],
        [4, true],
      ]);
      expect(await q.json(["jobs", "cancel", q.table, "--state", "running", "--allow-writes"])).toEqual({
        action: "cancel",
        matched: 1,
        touched: 0,
        signalled: 1,
        inWork: 0,
        notFound: 0,
      });
      expect((await t.db.selectFrom(q.table).select("id").execute()).length).toBe(4);
      await t.db.deleteFrom("sqlinbox_control").where("route", "=", q.table).execute();
    } finally {
      await release();
    }
  });

  test("usage: no selection, --ids with --state, reschedule without a time, an action dead letters do not take; nothing matched is exit 3", async () => {
    const q = await jobsTables(t, "lease", false);
    tables.push(q.table, q.dead);
    const results = await Promise.all([
      q.run(["jobs", "retry", q.table, "--allow-writes"]),
      q.run(["jobs", "delete", q.table, "--ids", "1", "--state", "waiting", "--allow-writes"]),
      q.run(["jobs", "reschedule", q.table, "--ids", "1", "--allow-writes"]),
      q.run(["jobs", "cancel", q.table, "--state", "deadLettered", "--allow-writes"]),
      q.run(["jobs", "cancel", q.table, "--state", "waiting", "--dry-run"]),
    ]);
    expect(results.map((r) => [r.code, r.stderr])).toEqual([
      [ExitCode.usage, "sqlinbox: say which rows: --ids 1,2,3 or --state <state>\n"],
      [ExitCode.usage, "sqlinbox: say which rows with --ids or with --state, not both (--state deadLettered --ids names dead letters)\n"],
      [ExitCode.usage, "sqlinbox: jobs reschedule takes the time to run at: --at <ISO time> or --in <ms> (one of them)\n"],
      [ExitCode.usage, "sqlinbox: jobs cancel does not take dead letters: retry moves them back, delete removes them\n"],
      [ExitCode.nothingMatched, `sqlinbox: no rows match in ${q.table}: nothing would change\n`],
    ]);
  });
});
