/**
 * A publish whose connection dies says what it knows, on Postgres and MariaDB: while producers
 * publish in four loops, every session of their broker is killed from the server again and again
 * (`pg_terminate_backend` by application name, MariaDB `KILL CONNECTION` by database: only this
 * test's sessions). Every publish then either resolved (its row is there, once), failed as not
 * written (no row), or failed with `OutcomeUnknown` (a row or none) — never "not written" with a
 * row. Keyed publishes to this table (it keeps handled rows) retry themselves once on an unknown
 * outcome, so a key is never published twice.
 */
import { column, InboxSpec, isSqlInboxError, payloadOf } from "@sqlinbox/core";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { createInboxTable, SqlBroker } from "../../src/index.js";
import { brokerParts } from "../../src/publish/sql-broker.js";
import { dropScope, scopedUrl, serverEngines } from "../support/claim-forms.js";
import { engineNamed, selects, unique } from "../support/engines.js";
import { sleep } from "../support/sleep.js";

const LOOPS = 4;
const PUBLISH_MS = 3000;

interface Job {
  readonly n: number;
}

type Fate = "resolved" | "unknown" | "not written";

const specOf = (table: string) =>
  InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .key(column("job_key"))
    .processedAt(column("processed_at"))
    .payload(column("payload"), payloadOf<Job>());

type JobsBroker = SqlBroker<{ jobs: ReturnType<typeof specOf> }>;

/** The same table without processedAt: an ack deletes the row, and its key is free again. */
const deletingSpecOf = (table: string) =>
  InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .key(column("job_key"))
    .payload(column("payload"), payloadOf<Job>());

/** Kills this test's sessions only: Postgres by application name, MariaDB by database (never the killing session). */
async function killSessions(engine: string, setup: AnyKysely, scope: string): Promise<number> {
  if (engine === "postgres") {
    const { rows } = await sql<{ pid: number }>`SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity WHERE application_name = ${scope}`.execute(setup);
    return rows.length;
  }
  const { rows } = await sql<{ id: number }>`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ${scope} AND ID <> CONNECTION_ID()`.execute(setup);
  for (const { id } of rows)
    await sql
      .raw(`KILL CONNECTION ${Number(id)}`)
      .execute(setup)
      .catch(() => {}); // gone already
  return rows.length;
}

describe.each(serverEngines)("publishes whose sessions are killed on $name", (engine) => {
  test(`${LOOPS} loops publish for ${PUBLISH_MS} ms while every session is killed every 15–40 ms: no publish reported not written left a row`, async () => {
    const base = await engine.connect(engine.url());
    const scope = unique("sqlinbox_pub").toLowerCase();
    const url = await scopedUrl(engine, base, scope);
    // MariaDB: the setup session is in the scope's database, left out of the kills by its own id.
    const setup = engine.engine === "postgres" ? base : (await parseDatabaseUrl(url).open({ max: 1 })).db;
    const table = unique("pub_outcome").toLowerCase();
    const broker = SqlBroker.fromUrl(url, { pool: { max: LOOPS } }).route(specOf(table), "jobs");
    try {
      await createInboxTable(setup, specOf(table));
      await broker.publish("jobs", { n: -1 }); // connected, the schema checked: the kills hit publishes only
      const fates = new Map<number, Fate>();
      const keyedFates = new Map<number, Fate>();
      const samples = new Map<string, string>();
      let next = 0;
      let kills = 0;
      const until = Date.now() + PUBLISH_MS;
      const record = (into: Map<number, Fate>, ns: readonly number[], error?: unknown): void => {
        const fate: Fate = error === undefined ? "resolved" : isSqlInboxError(error, "OutcomeUnknown") ? "unknown" : "not written";
        if (error !== undefined && !samples.has(fate)) samples.set(fate, (error as Error).message.slice(0, 300));
        for (const n of ns) into.set(n, fate);
      };
      const loop = async (i: number): Promise<void> => {
        for (let round = 0; Date.now() < until; round++) {
          const n = next++;
          if (i === 0) {
            // Keyed: on an unknown outcome the publish runs once more by itself.
            await broker.publish("jobs", { n }, { key: `k-${n}` }).then(
              () => record(keyedFates, [n]),
              (error: unknown) => record(keyedFates, [n], error),
            );
          } else if (round % 3 === 2) {
            const ns = [n, next++, next++];
            await broker
              .publishMany(
                "jobs",
                ns.map((m) => ({ n: m })),
              )
              .then(
                () => record(fates, ns),
                (error: unknown) => record(fates, ns, error),
              );
          } else {
            await broker.publish("jobs", { n }).then(
              () => record(fates, [n]),
              (error: unknown) => record(fates, [n], error),
            );
          }
        }
      };
      const killer = (async () => {
        while (Date.now() < until) {
          kills += await killSessions(engine.engine, setup, scope);
          await sleep(15 + Math.random() * 25);
        }
      })();
      await Promise.all([...Array.from({ length: LOOPS }, (_, i) => loop(i)), killer]);

      const rows = await setup.selectFrom(table).select(["payload", "job_key"]).execute();
      const present = new Map<number, number>();
      for (const row of rows) {
        const raw = row.payload as Uint8Array | string;
        const n = (JSON.parse(typeof raw === "string" ? raw : Buffer.from(raw).toString("utf8")) as Job).n;
        present.set(n, (present.get(n) ?? 0) + 1);
      }
      const count = (map: Map<number, Fate>, fate: Fate) => [...map.values()].filter((f) => f === fate).length;
      const all = new Map([...fates, ...keyedFates]);
      console.log(
        `${engine.name}: ${all.size} jobs, ${kills} sessions killed; resolved ${count(all, "resolved")}, not written ${count(all, "not written")}, unknown ${count(all, "unknown")} (` +
          `${[...all].filter(([n, f]) => f === "unknown" && present.has(n)).length} of them written); keyed: ${keyedFates.size} jobs, ${count(keyedFates, "unknown")} unknown\n` +
          [...samples].map(([fate, message]) => `  ${fate}: ${message}`).join("\n"),
      );
      const writtenButReportedNot = [...all].filter(([n, f]) => f === "not written" && present.has(n)).map(([n]) => n);
      expect(writtenButReportedNot).toEqual([]);
      expect([...all].filter(([n, f]) => f === "resolved" && present.get(n) !== 1).map(([n]) => n)).toEqual([]);
      expect([...present].filter(([, times]) => times > 1).map(([n]) => n)).toEqual([]);
      // The kills hit publishes in flight: some outcomes were unknown (a test that saw none could not fail).
      expect(kills).toBeGreaterThan(0);
      expect(count(all, "unknown")).toBeGreaterThan(0);
    } finally {
      await broker.close();
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(setup).catch(() => {});
      if (setup !== base) await setup.destroy();
      await dropScope(engine, base, scope).catch(() => {});
      await base.destroy();
    }
  });
});

describe.runIf(selects("postgres"))("what a publish makes of a failed statement (Postgres, the failure injected before the statement)", () => {
  const postgres = engineNamed("postgres");
  const lost = () => new Error("Connection terminated unexpectedly");
  const refused = () => Object.assign(new Error('new row for relation "x" violates check constraint "c"'), { severity: "ERROR", code: "23514" });

  /** A broker on a fresh table of `spec`, and a fault that fails the next `failures` publish statements with `error`. */
  async function withBroker(
    spec: ReturnType<typeof specOf> | ReturnType<typeof deletingSpecOf>,
    run: (broker: JobsBroker, fail: (failures: number, error: () => Error) => void) => Promise<void>,
  ) {
    const db = await postgres.connect(postgres.url());
    await createInboxTable(db, spec);
    const broker = SqlBroker.fromUrl(postgres.url(), { pool: { max: 2 } }).route(spec, "jobs");
    try {
      await broker.publish("jobs", { n: 0 }); // opened and checked
      const database = brokerParts(broker).connection.database!;
      const fail = (failures: number, error: () => Error) => {
        let left = failures;
        database.fault = (kind) => (kind === "publish" && left-- > 0 ? error() : undefined);
      };
      // Typed as the keeping table's broker: both tables take the same payloads and keys.
      await run(broker as unknown as JobsBroker, fail);
    } finally {
      await broker.close();
      await sql`DROP TABLE IF EXISTS ${sql.id(spec.table)}`.execute(db);
      await db.destroy();
    }
  }

  test("a lost connection is OutcomeUnknown (saying a key makes a retry safe); a server's refusal is thrown as it is", async () => {
    await withBroker(specOf(unique("pub_policy")), async (broker, fail) => {
      fail(1, lost);
      const unknown = await broker.publish("jobs", { n: 1 }).catch((e: unknown) => e);
      expect(isSqlInboxError(unknown, "OutcomeUnknown")).toBe(true);
      expect((unknown as Error).message).toMatch(
        /^OutcomeUnknown: the publish failed after it reached the database \(Connection terminated unexpectedly\): its row may or may not have been written; publishing again may make a second job: publish with a key to retry safely/,
      );
      fail(1, refused);
      const notWritten = await broker.publish("jobs", { n: 2 }).catch((e: unknown) => e);
      expect(isSqlInboxError(notWritten)).toBe(false);
      expect((notWritten as { code?: unknown }).code).toBe("23514");
    });
  });

  test("a keyed publish to a table that keeps handled rows retries once by itself; twice lost, it is OutcomeUnknown", async () => {
    await withBroker(specOf(unique("pub_retry")), async (broker, fail) => {
      fail(1, lost);
      expect(await broker.publish("jobs", { n: 1 }, { key: "a" })).toMatchObject({ created: true });
      fail(2, lost);
      const twice = await broker.publish("jobs", { n: 2 }, { key: "b" }).catch((e: unknown) => e);
      expect(isSqlInboxError(twice, "OutcomeUnknown")).toBe(true);
      expect((twice as Error).message).toContain("publishing again with the same keys is safe while a written row is still in the table");
    });
  });

  test("a keyed publish to a table whose ack deletes the row does not retry (its key may be free again): OutcomeUnknown", async () => {
    await withBroker(deletingSpecOf(unique("pub_noretry")), async (broker, fail) => {
      fail(1, lost);
      const error = await broker.publish("jobs", { n: 1 }, { key: "a" }).catch((e: unknown) => e);
      expect(isSqlInboxError(error, "OutcomeUnknown")).toBe(true);
    });
  });
});
