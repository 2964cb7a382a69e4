/**
 * Enqueue from SQL on Postgres (docs/sql-enqueue.md): a row inserted by the real `psql` binary, with a
 * `NOTIFY` whose payload names its group, starts within 100 ms on a subscription that polls every
 * 30 s; a group's subscription ignores wakes for other groups; an empty payload wakes every group;
 * and the runtime's own publishes notify with the group as the payload.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { defineInbox, field } from "@sqlinbox/core";
import { channelOf } from "@sqlinbox/kysely-dialects/internal";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, createInboxTable, InboxQueue, SqlBroker, silentLogger, subscriber, type RunningApp } from "../../src/index.js";
import { engineNamed, PG_URL, selects, unique } from "../support/engines.js";
import { sleep, waitFor } from "../support/sleep.js";

const postgres = engineNamed("postgres");
const run = promisify(execFile);

interface Mail {
  readonly to: string;
}

/** The doc's table: a group column, a lease, the generated DDL's defaults. */
function mailSpec(table: string) {
  return defineInbox({
    table,
    columns: {
      id: field.id().generated(),
      attempt: field.attempt().generated(),
      lockedUntil: field.lease("locked_until"),
      grp: field.group(),
      payload: field.payload<Mail>(),
    },
  });
}

/** Runs `script` in the real `psql` (one session, stops at the first error); returns what it printed. */
async function psql(script: string): Promise<string> {
  const { stdout } = await run("psql", [PG_URL, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", script], { timeout: 10_000 });
  return stdout.trim();
}

/** The doc's insert: the payload as UTF-8 JSON bytes, the group, every other column left to its default. */
const insertRow = (table: string, group: string, to: string): string =>
  `INSERT INTO "${table}" (grp, payload) VALUES ('${group}', convert_to('${JSON.stringify({ to })}', 'UTF8'));`;

describe.runIf(selects("postgres"))("enqueue from SQL on postgres (psql)", () => {
  let db: AnyKysely;
  const tables: string[] = [];
  const apps: RunningApp[] = [];

  beforeAll(async () => {
    db = await postgres.connect(PG_URL);
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.stop();
    for (const t of tables.splice(0)) await postgres.dropTable(db, t);
  });
  afterAll(async () => {
    await db?.destroy();
  });

  /** A table and an app with a subscription per group ("emails", "sms"), each polling every 30 s, listening for NOTIFY. */
  async function mailApp() {
    const table = unique("sql_enqueue");
    const spec = mailSpec(table);
    await createInboxTable(db, spec);
    tables.push(table);
    const started: Record<string, Array<{ to: string; at: number }>> = { emails: [], sms: [] };
    const consume = (group: "emails" | "sms") =>
      subscriber(InboxQueue.of(spec, group).lease(5000).pollInterval(30_000), async (mail) => void started[group]?.push({ to: mail.to, at: Date.now() }));
    const broker = SqlBroker.fromUrl(PG_URL, { pool: { max: 6 } })
      .listenNotify()
      .route(spec, "emails")
      .route(spec, "sms");
    const app = await new App({ name: "sql-enqueue", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(consume("emails")).include(consume("sms"))).start();
    apps.push(app);
    await sleep(300); // the first claims (empty) are done: from now on only a wake or the 30 s poll claims
    return { table, channel: channelOf(table), started, broker };
  }

  /**
   * One notified row first, unmeasured (it must still start long before the poll): the app's first
   * claim after a wake runs its code paths cold, which a busy machine can stretch past 100 ms.
   */
  async function warmUp(table: string, channel: string, started: Record<string, Array<{ to: string; at: number }>>): Promise<void> {
    await psql(`BEGIN; ${insertRow(table, "emails", "warm-up")} NOTIFY "${channel}", 'emails'; COMMIT;`);
    expect(await waitFor(() => started["emails"]?.length === 1, 1000)).toBe(true);
  }

  test("a row inserted by psql with NOTIFY <channel>, '<group>' starts within 100 ms on a 30 s poll", async () => {
    const { table, channel, started } = await mailApp();
    await warmUp(table, channel, started);
    const delays: number[] = [];
    for (const to of ["a@example.com", "b@example.com", "c@example.com"]) {
      // The time is read after the COMMIT, which is when the notification goes out.
      const committedAt = Number(
        await psql(`BEGIN; ${insertRow(table, "emails", to)} NOTIFY "${channel}", 'emails'; COMMIT; SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint;`),
      );
      expect(await waitFor(() => started["emails"]?.some((s) => s.to === to) === true, 1000)).toBe(true);
      delays.push((started["emails"]?.find((s) => s.to === to)?.at ?? Number.POSITIVE_INFINITY) - committedAt);
    }
    console.log(`rows inserted by psql started ${delays.join(", ")} ms after their commit`);
    for (const delay of delays) expect(delay).toBeLessThanOrEqual(100);
    expect(started["emails"]).toHaveLength(4);
    expect(started["sms"]).toEqual([]);
  });

  test("a group's subscription ignores a wake for another group: the sms row waits for its poll", async () => {
    const { table, channel, started } = await mailApp();
    await psql(insertRow(table, "sms", "+15550100")); // no NOTIFY: nothing wakes the sms subscription
    await psql(`BEGIN; ${insertRow(table, "emails", "a@example.com")} NOTIFY "${channel}", 'emails'; COMMIT;`);
    expect(await waitFor(() => started["emails"]?.length === 1, 1000)).toBe(true);
    await sleep(500);
    // Woken by the emails notification, the sms subscription would have claimed its row by now.
    expect(started["sms"]).toEqual([]);
    await psql(`NOTIFY "${channel}", 'sms'`);
    expect(await waitFor(() => started["sms"]?.length === 1, 1000)).toBe(true);
  });

  test("the doc's trigger wakes the inserted row's group on every insert: a plain INSERT from psql starts within 100 ms", async () => {
    const { table, channel, started } = await mailApp();
    await warmUp(table, channel, started);
    const wake = `${table}_wake`;
    await psql(
      `create function "${wake}"() returns trigger language plpgsql as $$ begin perform pg_notify('${channel}', new.grp); return null; end $$; ` +
        `create trigger "${wake}" after insert on "${table}" for each row execute function "${wake}"();`,
    );
    try {
      const committedAt = Number(await psql(`${insertRow(table, "sms", "+15550100")} SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint;`));
      expect(await waitFor(() => started["sms"]?.length === 1, 1000)).toBe(true);
      expect((started["sms"]?.[0]?.at ?? Number.POSITIVE_INFINITY) - committedAt).toBeLessThanOrEqual(100);
      expect(started["emails"]).toEqual([{ to: "warm-up", at: expect.any(Number) }]);
    } finally {
      await psql(`drop function "${wake}"() cascade;`);
    }
  });

  test("an empty payload wakes every group of the table", async () => {
    const { table, channel, started } = await mailApp();
    await psql(`BEGIN; ${insertRow(table, "emails", "a@example.com")} ${insertRow(table, "sms", "+15550100")} NOTIFY "${channel}"; COMMIT;`);
    expect(await waitFor(() => started["emails"]?.length === 1 && started["sms"]?.length === 1, 1000)).toBe(true);
  });

  test("the runtime's publish notifies with the group as the payload; a table without a group column, with an empty one", async () => {
    const { channel, broker } = await mailApp();
    const plainTable = unique("sql_enqueue_plain");
    const plain = defineInbox({ table: plainTable, columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Mail>() } });
    await createInboxTable(db, plain);
    tables.push(plainTable);
    const listener = new pg.Client({ connectionString: PG_URL });
    await listener.connect();
    try {
      const heard: Array<{ channel: string; payload: string | undefined }> = [];
      listener.on("notification", (m) => heard.push({ channel: m.channel, payload: m.payload }));
      await listener.query(`LISTEN "${channel}"`);
      await listener.query(`LISTEN "${channelOf(plainTable)}"`);
      await broker.publish("sms", { to: "+15550100" });
      await broker.publishMany("emails", [{ to: "a@example.com" }, { to: "b@example.com" }]);
      const producer = SqlBroker.fromUrl(PG_URL, { pool: { max: 2 } })
        .listenNotify()
        .route(plain, "plain");
      await producer.publish("plain", { to: "c@example.com" });
      await producer.close();
      expect(await waitFor(() => heard.length === 3, 2000)).toBe(true);
      expect(heard).toEqual([
        { channel, payload: "sms" },
        { channel, payload: "emails" },
        { channel: channelOf(plainTable), payload: "" },
      ]);
    } finally {
      await listener.end();
    }
  });
});
