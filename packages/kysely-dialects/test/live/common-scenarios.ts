import { column, InboxSpec, isSqlInboxError } from "@sqlinbox/core";
import { sql } from "kysely";
import { expect, test } from "vitest";
import { advisoryKeyOf, checkSchema } from "../../src/internal.js";
import { affected, run, uniqueTable, type LiveEngine } from "../support/servers.js";
import { jobsTable, publish, readRows, seedSpec } from "./helpers.js";

/** Startup checks and publish on a live engine. `tooOld`: version strings the engine must refuse. */
export function commonScenarios(get: () => LiveEngine, tooOld: readonly string[]): void {
  test("schema check: a real table missing a described column fails, naming table and column", async () => {
    const engine = get();
    const table = await jobsTable(engine, "schema_check");
    const { schema, readFoundColumns, capabilities } = engine.dialect;
    const found = readFoundColumns((await run(engine.db, schema.describeTable(table))).rows);
    expect(found.map((c) => c.name)).toContain("locked_until");
    expect(checkSchema(seedSpec(table), found, capabilities.engine)).toEqual({ precision: engine.precision });

    const missing = InboxSpec.table(table, column("id")).lease(column("locked_until")).data(column("tenant")).description;
    let error: unknown;
    try {
      checkSchema(missing, found, capabilities.engine);
    } catch (e) {
      error = e;
    }
    expect(isSqlInboxError(error, "Schema")).toBe(true);
    expect((error as Error).message).toContain(`"${table}"`);
    expect((error as Error).message).toContain(`"tenant"`);

    const absent = uniqueTable("no_such_table");
    const none = readFoundColumns((await run(engine.db, schema.describeTable(absent))).rows);
    // The table named once (in the place), and how to create it.
    expect(() => checkSchema(seedSpec(absent), none, capabilities.engine)).toThrow(
      new RegExp(`^Schema: the table does not exist .*: create it with createInboxTable\\(db, spec\\) .*sqlinbox ddl prints them\\) \\(table "${absent}"\\)$`),
    );

    // A lease column that cannot hold the codec's time is refused too.
    const wrong = uniqueTable("schema_wrong");
    await sql`create table ${sql.id(wrong)} (id integer primary key, attempt integer, locked_until integer, payload text)`.execute(engine.db);
    try {
      const cols = readFoundColumns((await run(engine.db, schema.describeTable(wrong))).rows);
      expect(() => checkSchema(seedSpec(wrong), cols, capabilities.engine)).toThrow(/locked_until/);
    } finally {
      await sql`drop table ${sql.id(wrong)}`.execute(engine.db);
    }
  });

  test("schema check: result and progress columns hold JSON or text and allow NULL; the generated DDL passes", async () => {
    const engine = get();
    const { schema, readFoundColumns, capabilities, table: ddl } = engine.dialect;
    const made = uniqueTable("result_ok");
    const spec = InboxSpec.table(made, column("id").generated())
      .payload(column("payload"))
      .processedAt(column("processed_at"))
      .result(column("result"))
      .progress(column("progress")).description;
    for (const statement of ddl.create(spec)) await engine.db.executeQuery(statement);
    const wrong = uniqueTable("result_wrong");
    await sql`create table ${sql.id(wrong)} (id integer primary key, payload text, processed_at text, result integer, progress text not null)`.execute(engine.db);
    try {
      const found = readFoundColumns((await run(engine.db, schema.describeTable(made))).rows);
      expect(checkSchema(spec, found, capabilities.engine)).toBeNull();
      const bad = readFoundColumns((await run(engine.db, schema.describeTable(wrong))).rows);
      const wrongSpec = { ...spec, table: wrong, columns: spec.columns };
      expect(() => checkSchema(wrongSpec, bad, capabilities.engine)).toThrow(/column "result" .* a result column holds JSON/);
      const onlyProgress = InboxSpec.table(wrong, column("id")).payload(column("payload")).progress(column("progress")).description;
      expect(() => checkSchema(onlyProgress, bad, capabilities.engine)).toThrow(/column "progress" .* is NOT NULL: a progress column is empty until a handler writes it/);
    } finally {
      await sql`drop table ${sql.id(made)}`.execute(engine.db);
      await sql`drop table ${sql.id(wrong)}`.execute(engine.db);
    }
  });

  test("server time: epoch milliseconds of the server's clock, whatever the session's time zone", async () => {
    const engine = get();
    // Each engine's session time zone set far from UTC, then back (SQLite has none).
    const zones: Record<string, readonly [string, string] | undefined> = {
      postgres: ["SET TIME ZONE 'Asia/Kolkata'", "RESET TIME ZONE"],
      mysql: ["SET time_zone = '+05:30'", "SET time_zone = DEFAULT"],
    };
    const zone = zones[engine.dialect.capabilities.engine];
    const read = await engine.db.connection().execute(async (session) => {
      if (zone !== undefined) await sql.raw(zone[0]).execute(session);
      const before = Date.now();
      const row = (await run(session, engine.dialect.schema.serverTime())).rows[0];
      const after = Date.now();
      if (zone !== undefined) await sql.raw(zone[1]).execute(session);
      return { before, after, serverMs: Number(row?.now_ms) };
    });
    // The server runs on this machine: its clock is the host's, to a few ms.
    expect(read.serverMs).toBeGreaterThan(read.before - 2_000);
    expect(read.serverMs).toBeLessThan(read.after + 2_000);
  });

  test("server version: the live server is accepted; older versions are refused naming both", async () => {
    const engine = get();
    const version = (await run(engine.db, engine.dialect.schema.serverVersion())).rows[0]?.version;
    expect(typeof version).toBe("string");
    const label = engine.dialect.checkServerVersion(String(version));
    expect(label).toMatch(/^(PostgreSQL|MariaDB|MySQL|SQLite) \d+\.\d+/);
    for (const old of tooOld) {
      let error: unknown;
      try {
        engine.dialect.checkServerVersion(old);
      } catch (e) {
        error = e;
      }
      expect(isSqlInboxError(error, "ServerTooOld")).toBe(true);
      const message = (error as Error).message;
      expect(message).toContain(old);
      expect(message).toMatch(/older than (11|8\.0\.1|10\.6|3\.35)/);
    }
  });

  test("publish: the insert produces the new ids, generated columns left to the database", async () => {
    const engine = get();
    const table = await jobsTable(engine, "publish");
    const spec = seedSpec(table);
    const ids = await publish(engine, spec, [{ payload: "one", attempt: 99, id: 1000 }, { payload: "two" }]);
    expect(ids).toHaveLength(2);
    const rows = await readRows(engine.db, table);
    expect(rows.map((r) => Number(r.id))).toEqual(ids);
    expect(rows.map((r) => [r.payload, Number(r.attempt)])).toEqual([
      ["one", 1],
      ["two", 1],
    ]);
  });

  test("advisory take: a row moved to another group since its candidates were read is not taken (take, takeMany and its read back)", async () => {
    const engine = get();
    const table = await jobsTable(engine, "adv_group");
    const spec = InboxSpec.table(table, column("id").generated())
      .attempt(column("attempt").generated())
      .payload(column("payload"))
      .group(column("grp"))
      .advisoryLock("job-{id}").description;
    const { advisory } = engine.dialect;
    const [moved, stays, alsoMoved] = await publish(engine, spec, [
      { payload: "m", grp: "jobs" },
      { payload: "s", grp: "jobs" },
      { payload: "a", grp: "jobs" },
    ]);
    const now = new Date();
    const candidates = (await run(engine.db, advisory.selectCandidates(spec, { limit: 10, now, group: "jobs" }))).rows;
    expect(candidates.map((r) => Number(r.id))).toEqual([moved, stays, alsoMoved]);
    // Dead-lettered into a group of the table by the session that held them, after the read.
    await sql`update ${sql.id(table)} set grp = 'jobs.dead' where id in (${moved}, ${alsoMoved})`.execute(engine.db);
    // Keys are not locked here: the take's own condition is what this checks (the group's rows only).
    // Counted: the rows returned where the take returns them (SQLite reports no count beside RETURNING), else the rows it changed.
    const counted = (result: Awaited<ReturnType<typeof run>>) => (advisory.takeReturnsRow ? result.rows.length : affected(result));
    expect(counted(await run(engine.db, advisory.take(spec, moved, now, "jobs")))).toBe(0);
    const many = await run(engine.db, advisory.takeMany(spec, [moved, stays, alsoMoved], now, "jobs"));
    expect(counted(many)).toBe(1);
    const rows = advisory.takeReturnsRow ? many.rows : (await run(engine.db, advisory.readTakenMany(spec, [moved, stays, alsoMoved], now, "jobs"))).rows;
    expect(rows.map((r) => [Number(r.id), Number(r.attempt)])).toEqual([[stays, 2]]);
    const after = await readRows(engine.db, table);
    expect(after.map((r) => [Number(r.id), Number(r.attempt), r.grp])).toEqual([
      [moved, 1, "jobs.dead"],
      [stays, 2, "jobs"],
      [alsoMoved, 1, "jobs.dead"],
    ]);
  });
}

/** SQLite's advisory statements: candidates and take (keys live in the process). */
export function processAdvisoryScenarios(get: () => LiveEngine): void {
  test("advisory (keys in the process): candidates carry their key columns; take counts while claimable and returns the row as counted", async () => {
    const engine = get();
    const table = await jobsTable(engine, "adv_process");
    const spec = InboxSpec.table(table, column("id").generated())
      .attempt(column("attempt").generated())
      .payload(column("payload"))
      .processedAt(column("processed_at"))
      .data(column("customer_id"))
      .advisoryLock("report-{customer_id}").description;
    const { advisory } = engine.dialect;
    expect(engine.dialect.capabilities.advisoryLocks).toBe("process");
    expect(() => advisory.tryLock("k", "main")).toThrow(/no advisory.tryLock statement on sqlite: keys live in the process's registry/);
    expect(() => advisory.unlock("k", "main")).toThrow(/no advisory.unlock statement on sqlite/);
    const [a, b] = await publish(engine, spec, [
      { payload: "a", customer_id: "acme" },
      { payload: "b", customer_id: "beta" },
    ]);
    const now = new Date();
    const candidates = (await run(engine.db, advisory.selectCandidates(spec, { limit: 10, now }))).rows;
    expect(candidates.map((r) => advisoryKeyOf(spec, r))).toEqual([`${table}:report-acme`, `${table}:report-beta`]);
    // The take returns the row as it counted it (`RETURNING`): nothing to read back.
    expect(advisory.takeReturnsRow).toBe(true);
    expect(() => advisory.readTaken(spec, a)).toThrow(/no advisory.readTaken statement on sqlite: the take returns the row itself/);
    const taken = (await run(engine.db, advisory.take(spec, a, now))).rows;
    expect(taken.map((r) => [Number(r.id), Number(r.attempt), r.customer_id])).toEqual([[a, 2, "acme"]]);
    expect(affected(await run(engine.db, advisory.settleAck(spec, a, now)))).toBe(1);
    expect((await run(engine.db, advisory.take(spec, a, now))).rows).toEqual([]);
    const left = (await run(engine.db, advisory.selectCandidates(spec, { limit: 10, now }))).rows;
    expect(left.map((r) => Number(r.id))).toEqual([b]);
    expect(Number((await readRows(engine.db, table)).find((r) => Number(r.id) === a)?.attempt)).toBe(2);
  });
}
