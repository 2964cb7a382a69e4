import type { StatusReport } from "@sqlinbox/dashboard";
import type { PeekedRow } from "@sqlinbox/dashboard";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { createQueue, ENGINES, insertRows, uniqueName, type TestDatabase, holdRows, useTestDatabase } from "./support/databases.js";
import { sqlinbox, sqlinboxJson } from "./support/run-bin.js";

describe.each(ENGINES)("sqlinbox status on %s", (_name, open) => {
  let t!: TestDatabase;
  const { tables } = useTestDatabase(open, (opened) => {
    t = opened;
  });
  const table = async (prefix: string, extra: Parameters<typeof createQueue>[2]) => {
    const n = await createQueue(t, uniqueName(prefix), extra);
    tables.push(n);
    return n;
  };

  test("lease form: ready, in work (live leases), delayed, done, oldest, attempts and expiring leases per group", async () => {
    const jobs = await table("st_lease", { lease: true, delay: true, done: true });
    const { now } = t.types;
    await insertRows(t, jobs, [
      { payload: '{"n":1}', grp: "a", created_at: now(-300_000) },
      { payload: '{"n":2}', grp: "a" },
      { payload: '{"n":3}', grp: "a" },
      { payload: '{"n":4}', grp: "a", locked_until: now(30_000), attempt: 2 },
      { payload: '{"n":5}', grp: "a", locked_until: now(-10_000), attempt: 2 },
      { payload: '{"n":6}', grp: "b", retry_after: now(600_000) },
      { payload: '{"n":7}', grp: "b", processed_at: now(-5000) },
    ]);
    const report = await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", jobs]);
    const status = report.tables[0]!;
    expect(status.form).toBe("lease");
    // The mysql dialect runs MariaDB: the report names the server, and the text says mariadb.
    expect(report.server).toMatch({ postgres: /^PostgreSQL \d/, mariadb: /^MariaDB \d/, sqlite: /^SQLite \d/ }[t.name]);
    expect(status.groups.map((g) => [g.group, g.ready, g.inWork, g.delayed, g.done])).toEqual([
      ["a", 4, 1, 0, 0],
      ["b", 0, 0, 1, 1],
    ]);
    // Attempts made: three rows never delivered (the column's 1), one in its first delivery and one
    // whose first lease ran out (the column's 2).
    expect(status.groups[0]!.attempts).toEqual([
      { attempt: 0, rows: 3 },
      { attempt: 1, rows: 2 },
    ]);
    expect(status.groups[0]!.oldestAgeMs).toBeGreaterThanOrEqual(299_000);
    expect(status.groups[0]!.oldestAgeMs).toBeLessThan(400_000);
    // The column holds 2 while the first delivery runs (its claim counted it up from 1): attempt 1.
    expect(status.expiringLeases.map((l) => [l.group, l.attempt])).toEqual([["a", 1]]);
    expect(status.expiringLeases[0]!.expiresInMs).toBeGreaterThan(0);
    expect(status.totals).toMatchObject({ ready: 4, inWork: 1, delayed: 1, done: 1, dead: null });

    const human = await sqlinbox(["status", "--url", t.url, "--table", jobs]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`${jobs}  (lease on ${t.name}`);
    expect(human.stdout).toMatch(/GROUP\s+READY\s+IN WORK\s+DELAYED\s+DEAD\s+DONE\s+OLDEST/);
    expect(human.stdout).toMatch(/\ba\s+4\s+1\s+0\s+—\s+0\s+5m/);
    expect(human.stdout).toContain("Leases running out in the next 1m 00s:");
  });

  test("fifo groups (--fifo): ready is each group's head; the due rows behind it are waiting, and peek and purge select them", async () => {
    const jobs = await table("st_fifo", { lease: true, delay: true });
    const { now } = t.types;
    await insertRows(t, jobs, [
      // a: the head is in work, two rows wait behind it.
      { payload: '{"n":1}', grp: "a", locked_until: now(30_000), retry_after: null },
      { payload: '{"n":2}', grp: "a", locked_until: null, retry_after: null },
      { payload: '{"n":3}', grp: "a", locked_until: null, retry_after: null },
      // b: a head ready, two rows behind it, one delayed.
      { payload: '{"n":4}', grp: "b", locked_until: null, retry_after: null },
      { payload: '{"n":5}', grp: "b", locked_until: null, retry_after: null },
      { payload: '{"n":6}', grp: "b", locked_until: null, retry_after: now(-30_000) },
      { payload: '{"n":7}', grp: "b", locked_until: null, retry_after: now(600_000) },
    ]);
    const args = ["--url", t.url, "--table", jobs, "--fifo"];
    const status = (await sqlinboxJson<StatusReport>(["status", ...args])).tables[0]!;
    expect(status.groups.map((g) => [g.group, g.ready, g.waiting, g.inWork, g.delayed])).toEqual([
      ["a", 0, 2, 1, 0],
      ["b", 1, 2, 0, 1],
    ]);
    expect(status.totals).toMatchObject({ ready: 1, waiting: 4, inWork: 1, delayed: 1 });
    // Without --fifo the same table counts every due row as ready, and has no waiting column.
    const plain = (await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", jobs])).tables[0]!;
    expect(plain.totals).toMatchObject({ ready: 5, waiting: null });

    const human = await sqlinbox(["status", ...args]);
    expect(human.stdout).toMatch(/GROUP\s+READY\s+WAITING\s+IN WORK\s+DELAYED/);
    expect(human.stdout).toMatch(/\bb\s+1\s+2\s+0\s+1\b/);
    expect((await sqlinbox(["status", "--url", t.url, "--table", jobs])).stdout).not.toContain("WAITING");

    const payloads = async (state: string) => (await sqlinboxJson<PeekedRow[]>(["peek", ...args, "--state", state])).map((r) => r.payload);
    expect(await payloads("ready")).toEqual([{ n: 4 }]);
    expect(await payloads("waiting")).toEqual([{ n: 2 }, { n: 3 }, { n: 5 }, { n: 6 }]);
    const purged = await sqlinbox(["purge", ...args, "--state", "waiting", "--group", "a", "--yes"]);
    expect([purged.code, purged.stderr]).toEqual([0, ""]);
    expect(await payloads("waiting")).toEqual([{ n: 5 }, { n: 6 }]);
  });

  test("fifo row lock (--fifo): a head another transaction holds is in work, not ready; the rows behind it still wait, and a delayed row is no head", async () => {
    const jobs = await table("st_fifo_rl", { delay: true });
    const { now } = t.types;
    await insertRows(t, jobs, [
      // g: its head is held the way a fifo row-lock claim holds its group, two rows wait behind it.
      { payload: '{"n":1}', grp: "g", retry_after: null },
      { payload: '{"n":2}', grp: "g", retry_after: null },
      { payload: '{"n":3}', grp: "g", retry_after: now(-30_000) },
      // h: the first row is delayed, so the head is the next one; one row waits behind it.
      { payload: '{"n":4}', grp: "h", retry_after: now(600_000) },
      { payload: '{"n":5}', grp: "h", retry_after: null },
      { payload: '{"n":6}', grp: "h", retry_after: null },
      // k: only delayed rows: nothing ready, nothing waiting.
      { payload: '{"n":7}', grp: "k", retry_after: now(600_000) },
    ]);
    const read = async () => (await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", jobs, "--fifo"])).tables[0]!;
    const rows = (status: StatusReport["tables"][number]) => status.groups.map((g) => [g.group, g.ready, g.waiting, g.inWork, g.delayed]);
    // No answer: the prompt names how many rows a purge would delete, and nothing goes.
    const purgePrompt = async () => {
      const asked = await sqlinbox(["purge", "--url", t.url, "--table", jobs, "--fifo", "--state", "waiting"]);
      expect(asked.code).toBe(4);
      return asked.stderr;
    };
    if (t.name === "sqlite") {
      const status = await read();
      expect(status.form).toBe("rowLock");
      expect(rows(status)).toEqual([
        ["g", 1, 2, null, 0],
        ["h", 1, 1, null, 1],
        ["k", 0, 0, null, 1],
      ]);
      expect(status.totals).toMatchObject({ ready: 2, waiting: 3, inWork: null, delayed: 2 });
      expect(await purgePrompt()).toContain(`Delete 3 waiting rows from ${jobs}? [y/N]`);
      return;
    }
    const release = await holdRows(t.db, `select id from ${jobs} where grp = 'g' for update skip locked`);
    try {
      const status = await read();
      expect(status.form).toBe("rowLock");
      expect(rows(status)).toEqual([
        ["g", 0, 2, 1, 0],
        ["h", 1, 1, 0, 1],
        ["k", 0, 0, 0, 1],
      ]);
      expect(status.totals).toMatchObject({ ready: 1, waiting: 3, inWork: 1, delayed: 2 });
      expect(await purgePrompt()).toContain(`Delete 3 waiting rows from ${jobs}? [y/N]`);
    } finally {
      await release();
    }
    expect(rows(await read())).toEqual([
      ["g", 1, 2, 0, 0],
      ["h", 1, 1, 0, 1],
      ["k", 0, 0, 0, 1],
    ]);
  });

  test("--fifo on a table without a group column is a usage error", async () => {
    const jobs = await table("st_fifo_nogrp", {});
    await sql.raw(`alter table ${jobs} drop column grp`).execute(t.db);
    const result = await sqlinbox(["status", "--url", t.url, "--table", jobs, "--fifo"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("fifo needs a group column");
  });

  test("row lock form: rows another transaction holds FOR UPDATE are in work", async () => {
    const jobs = await table("st_rowlock", {});
    await insertRows(
      t,
      jobs,
      [1, 2, 3, 4].map((n) => ({ payload: `{"n":${n}}`, grp: "g" })),
    );
    const read = async () => (await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", jobs])).tables[0]!;
    if (t.name === "sqlite") {
      const status = await read();
      expect(status.totals.inWork).toBeNull();
      expect(status.notes).toContain("in work: SQLite has no row locks");
      return;
    }
    const release = await holdRows(t.db, `select id from ${jobs} order by id limit 2 for update skip locked`);
    try {
      const status = await read();
      expect(status.form).toBe("rowLock");
      expect(status.groups.map((g) => [g.group, g.ready, g.inWork])).toEqual([["g", 2, 2]]);
    } finally {
      await release();
    }
    expect((await read()).groups.map((g) => [g.ready, g.inWork])).toEqual([[4, 0]]);
  });

  test("advisory form: keys another session holds are in work (SQLite: unknown from outside)", async () => {
    const jobs = await table("st_adv", { customer: true });
    await insertRows(t, jobs, [
      { payload: "{}", grp: "g", customer_id: "acme" },
      { payload: "{}", grp: "g", customer_id: "acme" },
      { payload: "{}", grp: "g", customer_id: "beta" },
    ]);
    const args = ["status", "--url", t.url, "--table", jobs, "--advisory-key", "c-{customer_id}"];
    if (t.name === "sqlite") {
      const status = (await sqlinboxJson<StatusReport>(args)).tables[0]!;
      expect(status.form).toBe("advisory");
      expect(status.totals.inWork).toBeNull();
      expect(status.notes.join("\n")).toContain("unknown from outside");
      return;
    }
    const dialect = dialectFor(t.name === "postgres" ? "postgres" : "mysql");
    const database = String((await t.db.executeQuery(dialect.schema.currentDatabase())).rows[0]!.name);
    const key = `${jobs}:c-acme`;
    await t.db.connection().execute(async (session) => {
      const locked = (await session.executeQuery(dialect.advisory.tryLock(key, database)!)).rows[0]!;
      expect(Number(locked.locked === true ? 1 : locked.locked)).toBe(1);
      try {
        const status = (await sqlinboxJson<StatusReport>(args)).tables[0]!;
        expect(status.groups.map((g) => [g.group, g.ready, g.inWork])).toEqual([["g", 2, 1]]);
      } finally {
        await session.executeQuery(dialect.advisory.unlock(key, database)!);
      }
    });
    const after = (await sqlinboxJson<StatusReport>(args)).tables[0]!;
    expect(after.groups.map((g) => [g.ready, g.inWork])).toEqual([[3, 0]]);
  });
});
