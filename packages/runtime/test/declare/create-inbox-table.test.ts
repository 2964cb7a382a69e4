/**
 * `createInboxTable` live, on every engine × form: a description with every role creates a table
 * that passes the startup check, and a drain over it works. The advisory key names a column the
 * description leaves untyped and the callback adds (with a default, as publishes write no data
 * columns yet).
 */
import { defineInbox, field, type AnyInboxSpec, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { App, createInboxTable, InboxQueue, isSqlInboxError, keys, SqlBroker, silentLogger, subscriber, type ExtendTable } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { engines, unique } from "../support/engines.js";

const ROWS = 40;
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/** Every role a source table can have in `form` (lease: the lease column; advisory: a key; row lock: neither). */
function everyRole(table: string, form: ClaimForm) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    payload: field.payload<{ n: number }>(),
    retryAfter: field.retryAfter("retry_after"),
    processedAt: field.processedAt("processed_at"),
    grp: field.group(),
    priority: field.priority(),
    headers: field.headers(),
    customerId: field.data("customer_id").holds<number>().type("bigint"),
    tenant: field.data<string>(),
    jobKey: field.key("job_key"),
  };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{tenant}-{id}" });
  return defineInbox({ table, columns });
}

/** The column the description leaves untyped, added with Kysely's own builder. */
const addTenant: ExtendTable = (t) => t.addColumn("tenant", "varchar(64)", (c) => c.notNull().defaultTo("acme"));

describe.each(matrix)("createInboxTable on $engine.name × $form", ({ engine, form }) => {
  test("the table passes the startup check and drains; a second call finds it and does nothing", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`ddl_${form}`);
    try {
      const spec = everyRole(table, form);
      expect(await createInboxTable(db, spec, addTenant)).toBe(true);
      expect(await createInboxTable(db, spec, addTenant)).toBe(false);

      const handled: number[] = [];
      const traceparents = new Set<string | undefined>();
      const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } }).route(spec as never, "jobs");
      const sub = subscriber(
        InboxQueue.of(spec as never, "jobs")
          .pollInterval(50)
          .workers(4)
          .batch(4),
        async (job: unknown, ctx: unknown) => {
          handled.push((job as { n: number }).n);
          traceparents.add((ctx as { get(k: typeof keys.headers): Readonly<Record<string, string>> }).get(keys.headers)["traceparent"]);
        },
      );
      const running = await new App({ name: "ddl", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      try {
        await (broker as unknown as SqlBroker<Record<string, never>>).publishMany(
          "jobs",
          Array.from({ length: ROWS }, (_, n) => ({ n })),
          { headers: { traceparent: TRACEPARENT } } as never,
        );
        await until(() => handled.length >= ROWS, 15_000, "every row handled");
      } finally {
        await running.stop();
      }
      expect([...handled].sort((a, b) => a - b)).toEqual(Array.from({ length: ROWS }, (_, n) => n));
      // The headers column (JSONB on Postgres, text elsewhere) carries them to keys.headers.
      expect([...traceparents]).toEqual([TRACEPARENT]);
      // Acks mark processed_at (the rows stay); each row was claimed once; the callback's default filled the key column.
      const { rows } = await sql<Record<string, unknown>>`SELECT attempt, processed_at, tenant, grp FROM ${sql.id(table)}`.execute(db);
      expect(rows).toHaveLength(ROWS);
      for (const row of rows) {
        expect(row["processed_at"]).not.toBeNull();
        expect(Number(row["attempt"])).toBe(2);
        expect(row["tenant"]).toBe("acme");
        expect(row["grp"]).toBe("jobs");
      }
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});

describe.each(engines)("createInboxTable refusals on $name", (engine) => {
  test("a data column with no type and no callback is refused before anything runs, naming the column", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("ddl_untyped");
    try {
      const error = await createInboxTable(db, everyRole(table, "lease")).catch((e: unknown) => e);
      expect(isSqlInboxError(error) && error.code).toBe("Declaration");
      expect((error as Error).message).toContain('the data column "tenant" has no type');
      const { rows } = await db
        .executeQuery(
          // The table was not created.
          sql`SELECT 1 FROM ${sql.id(table)}`.compile(db),
        )
        .catch(() => ({ rows: [] }));
      expect(rows).toEqual([]);
    } finally {
      await db.destroy();
    }
  });
});

describe.each(engines.filter((e) => e.engine !== "mysql"))("createInboxTable inside the caller's transaction on $name", (engine) => {
  test("the statements join it: a rollback leaves no table, a commit keeps it", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("ddl_tx");
    const spec = everyRole(table, "lease");
    const exists = async () =>
      await db.executeQuery(sql`SELECT count(*) AS n FROM ${sql.id(table)}`.compile(db)).then(
        () => true,
        () => false,
      );
    try {
      const rolledBack = await db
        .transaction()
        .execute(async (trx) => {
          expect(await createInboxTable(trx, spec, addTenant)).toBe(true);
          throw new Error("roll back");
        })
        .catch((e: unknown) => e);
      expect((rolledBack as Error).message).toBe("roll back");
      expect(await exists()).toBe(false);
      await db.transaction().execute((trx) => createInboxTable(trx, spec, addTenant));
      expect(await exists()).toBe(true);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});

// Only Postgres has per-table storage settings; the matrix above creates the MariaDB and SQLite tables as before.
describe.each(engines.filter((e) => e.name === "postgres"))("createInboxTable's storage settings on $name", (engine) => {
  const created = async (
    options: Parameters<typeof createInboxTable>[3],
    spec: (table: string) => AnyInboxSpec = (table) => everyRole(table, "lease"),
    extend = addTenant,
  ): Promise<string[] | null> => {
    const db = await engine.connect(engine.url());
    const table = unique("storage_ddl");
    try {
      expect(await createInboxTable(db, spec(table), extend, options)).toBe(true);
      const { rows } = await sql<{ reloptions: string[] | null }>`select reloptions from pg_class where relname = ${table}`.execute(db);
      expect(rows).toHaveLength(1);
      return rows[0]?.reloptions ?? null;
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  };

  test("by default the queue table gets the settings of a table that churns", async () => {
    expect(await created({})).toEqual(["fillfactor=70", "autovacuum_vacuum_scale_factor=0.01", "autovacuum_vacuum_threshold=1000", "autovacuum_vacuum_cost_delay=0"]);
  });

  test("queueStorage: false leaves the server's own; a record replaces the defaults", async () => {
    expect(await created({ queueStorage: false })).toBeNull();
    expect(await created({ queueStorage: { fillfactor: 85, autovacuum_enabled: true } })).toEqual(["fillfactor=85", "autovacuum_enabled=true"]);
  });

  test("a dead-letter destination gets none", async () => {
    const dead = (table: string) =>
      defineInbox({
        table,
        columns: { id: field.id().generated(), payload: field.payload<{ n: number }>(), tenant: field.data<string>(), lastError: field.lastError("last_error") },
      });
    expect(await created({}, dead)).toBeNull();
  });

  test("a callback that ends the statement itself owns its end: a partitioned table, which Postgres refuses settings on, gets none", async () => {
    const leased = (table: string) =>
      defineInbox({ table, columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<{ n: number }>() } });
    expect(await created({}, leased, (t) => t.modifyEnd(sql`partition by range ("id")`))).toBeNull();
  });
});
