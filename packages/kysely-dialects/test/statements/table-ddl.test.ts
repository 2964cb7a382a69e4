import { column, defineInbox, field, InboxSpec, isSqlInboxError } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { inboxTableSql, mysqlDialect, postgresDialect, sqliteDialect, type Engine } from "../../src/index.js";
import { fifoRowLock, resultLease, richLease, seedByHand } from "../support/specs.js";

const ENGINES: readonly Engine[] = ["postgres", "mysql", "sqlite"];
const perEngine = (spec: Parameters<typeof inboxTableSql>[0]) => Object.fromEntries(ENGINES.map((e) => [e, inboxTableSql(spec, e)]));

/** Every role a source table can have, the lease form: with headers, a typed data column and a dedup key. */
const everyRole = InboxSpec.table("jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .payload(column("payload"))
  .retryAfter(column("retry_after"))
  .processedAt(column("processed_at"))
  .group(column("grp"))
  .priority(column("priority"))
  .headers(column("headers"))
  .data(column("customer_id").type("bigint"))
  .key(column("job_key"));

describe("inboxTableSql: the table of a description, per engine", () => {
  test("result and progress columns: the engine's JSON type (jsonb, json, text), nullable", () => {
    expect(perEngine(resultLease)).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`report_jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`locked_until\` datetime(3), \`payload\` longblob not null, \`processed_at\` datetime(3), \`result\` json, \`progress\` json)",
          "create index \`report_jobs_claim\` on \`report_jobs\` (\`processed_at\`, \`id\`)",
        ],
        "postgres": [
          "create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null, "processed_at" timestamptz, "result" jsonb, "progress" jsonb) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
          "create index "report_jobs_claim" on "report_jobs" ("id") where "processed_at" is null",
          "create index "report_jobs_processed" on "report_jobs" ("processed_at") where "processed_at" is not null",
        ],
        "sqlite": [
          "create table "report_jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "locked_until" text, "payload" blob not null, "processed_at" text, "result" text, "progress" text)",
          "create index "report_jobs_claim" on "report_jobs" ("id") where "processed_at" is null",
          "create index "report_jobs_processed" on "report_jobs" ("processed_at") where "processed_at" is not null",
        ],
      }
    `);
  });

  test("the seed's lease table: the primary key is the only index its claims need", () => {
    expect(perEngine(seedByHand)).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`report_jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`locked_until\` datetime(3), \`payload\` longblob not null)",
        ],
        "postgres": [
          "create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
        ],
        "sqlite": [
          "create table "report_jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "locked_until" text, "payload" blob not null)",
        ],
      }
    `);
  });

  test("every role: the claim index (group, processedAt, priority, retryAfter, id) and the dedup key's unique index", () => {
    expect(perEngine(everyRole)).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`locked_until\` datetime(3), \`payload\` longblob not null, \`retry_after\` datetime(3), \`processed_at\` datetime(3), \`grp\` varchar(255) not null, \`priority\` int default 0 not null, \`headers\` text, \`customer_id\` bigint, \`job_key\` varchar(255))",
          "create index \`jobs_claim\` on \`jobs\` (\`grp\`, \`processed_at\`, \`priority\`, \`retry_after\`, \`id\`)",
          "create unique index \`jobs_dedup_key\` on \`jobs\` (\`job_key\`)",
        ],
        "postgres": [
          "create table "jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null, "retry_after" timestamptz, "processed_at" timestamptz, "grp" text not null, "priority" integer default 0 not null, "headers" jsonb, "customer_id" bigint, "job_key" text) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
          "create index "jobs_claim" on "jobs" ("grp", "priority", "retry_after" nulls first, "id") where "processed_at" is null",
          "create index "jobs_processed" on "jobs" ("grp", "processed_at") where "processed_at" is not null",
          "create unique index "jobs_dedup_key" on "jobs" ("job_key")",
        ],
        "sqlite": [
          "create table "jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "locked_until" text, "payload" blob not null, "retry_after" text, "processed_at" text, "grp" text not null, "priority" integer default 0 not null, "headers" text, "customer_id" integer, "job_key" text)",
          "create index "jobs_claim" on "jobs" ("grp", "priority", "retry_after", "id") where "processed_at" is null",
          "create index "jobs_processed" on "jobs" ("grp", "processed_at") where "processed_at" is not null",
          "create unique index "jobs_dedup_key" on "jobs" ("job_key")",
        ],
      }
    `);
  });

  test("the declared form gives the same statements", () => {
    const declared = defineInbox({
      table: "jobs",
      columns: {
        id: field.id().generated(),
        attempt: field.attempt().generated(),
        lockedUntil: field.lease("locked_until"),
        payload: field.payload(),
        retryAfter: field.retryAfter("retry_after"),
        processedAt: field.processedAt("processed_at"),
        grp: field.group(),
        priority: field.priority(),
        headers: field.headers(),
        customerId: field.data("customer_id").holds<number>().type("bigint"),
        jobKey: field.key("job_key"),
      },
    });
    for (const engine of ENGINES) expect(inboxTableSql(declared, engine)).toEqual(inboxTableSql(everyRole, engine));
  });

  test("a processedAt table alone: a partial index of the unprocessed ids where the engine has one, processedAt then id elsewhere; the processed rows by processedAt for retention, where partial indexes exist", () => {
    expect(perEngine(InboxSpec.table("done_jobs", column("id").generated()).processedAt(column("done_at")).payload(column("payload")))).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`done_jobs\` (\`id\` bigint primary key auto_increment, \`done_at\` datetime(3), \`payload\` longblob not null)",
          "create index \`done_jobs_claim\` on \`done_jobs\` (\`done_at\`, \`id\`)",
        ],
        "postgres": [
          "create table "done_jobs" ("id" bigserial primary key, "done_at" timestamptz, "payload" bytea not null) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
          "create index "done_jobs_claim" on "done_jobs" ("id") where "done_at" is null",
          "create index "done_jobs_processed" on "done_jobs" ("done_at") where "done_at" is not null",
        ],
        "sqlite": [
          "create table "done_jobs" ("id" integer primary key autoincrement, "done_at" text, "payload" blob not null)",
          "create index "done_jobs_claim" on "done_jobs" ("id") where "done_at" is null",
          "create index "done_jobs_processed" on "done_jobs" ("done_at") where "done_at" is not null",
        ],
      }
    `);
  });

  test("every portable type of a data column, and an id the application fills", () => {
    const spec = InboxSpec.table("typed", column("id").type("text"))
      .data(column("t").type("text"))
      .data(column("b").type("bigint"))
      .data(column("i").type("integer"))
      .data(column("d").type("double"))
      .data(column("f").type("boolean"))
      .data(column("ts").type("timestamp"))
      .data(column("j").type("json"))
      .data(column("by").type("bytes"));
    expect(perEngine(spec)).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`typed\` (\`id\` varchar(255) primary key, \`t\` text, \`b\` bigint, \`i\` int, \`d\` double, \`f\` boolean, \`ts\` datetime(3), \`j\` json, \`by\` longblob)",
        ],
        "postgres": [
          "create table "typed" ("id" text primary key, "t" text, "b" bigint, "i" integer, "d" double precision, "f" boolean, "ts" timestamptz, "j" jsonb, "by" bytea) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
        ],
        "sqlite": [
          "create table "typed" ("id" text primary key, "t" text, "b" integer, "i" integer, "d" real, "f" integer, "ts" text, "j" text, "by" blob)",
        ],
      }
    `);
  });

  test("a dead-letter table: lastError and failedAttempts", () => {
    const dead = InboxSpec.table("dead_jobs", column("id").generated()).payload(column("payload")).lastError(column("last_error")).failedAttempts(column("failed_attempts"));
    expect(perEngine(dead)).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`dead_jobs\` (\`id\` bigint primary key auto_increment, \`payload\` longblob not null, \`last_error\` text, \`failed_attempts\` int)",
        ],
        "postgres": [
          "create table "dead_jobs" ("id" bigserial primary key, "payload" bytea not null, "last_error" text, "failed_attempts" integer)",
        ],
        "sqlite": [
          "create table "dead_jobs" ("id" integer primary key autoincrement, "payload" blob not null, "last_error" text, "failed_attempts" integer)",
        ],
      }
    `);
  });

  test("an advisory table: the key's columns are read by the candidate select, never filtered on, so they get no index", () => {
    const advisory = InboxSpec.table("adv_jobs", column("id").generated())
      .attempt(column("attempt").generated())
      .data(column("customer_id").type("bigint"))
      .advisoryLock("r-{customer_id}")
      .payload(column("payload"));
    expect(perEngine(advisory)).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table \`adv_jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`customer_id\` bigint, \`payload\` longblob not null)",
        ],
        "postgres": [
          "create table "adv_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "customer_id" bigint, "payload" bytea not null) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
        ],
        "sqlite": [
          "create table "adv_jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "customer_id" integer, "payload" blob not null)",
        ],
      }
    `);
  });

  test("a fifo row-lock table: the group leads its index", () => {
    expect(inboxTableSql(fifoRowLock(), "postgres")[1]).toBe(inboxTableSql(richLease("fifo_jobs"), "postgres")[1]);
  });

  test("a schema-qualified table, and a long name cut to 63 characters with a hash", () => {
    expect(inboxTableSql({ ...richLease(), schema: "queues" }, "postgres")).toMatchInlineSnapshot(`
      [
        "create table "queues"."jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null, "retry_after" timestamptz, "processed_at" timestamptz, "grp" text not null, "priority" integer default 0 not null) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
        "create index "jobs_claim" on "queues"."jobs" ("grp", "priority", "retry_after" nulls first, "id") where "processed_at" is null",
        "create index "jobs_processed" on "queues"."jobs" ("grp", "processed_at") where "processed_at" is not null",
      ]
    `);
    const long = "t".repeat(60);
    const names = inboxTableSql(richLease(long), "mysql")
      .slice(1)
      .map((s) => /index `([^`]+)`/.exec(s)?.[1] ?? "");
    expect(names.map((n) => n.length)).toEqual([63]);
    expect(names[0]).toMatch(/^t+_[0-9a-f]{8}_claim$/);
  });

  test("no statement carries a parameter: each is text a migration can run as is", () => {
    for (const dialect of [postgresDialect, mysqlDialect, sqliteDialect]) {
      for (const q of dialect.table.create(everyRole.description)) expect(q.parameters).toEqual([]);
    }
  });
});

describe("data columns without a type", () => {
  const untyped = InboxSpec.table("adv_jobs", column("id").generated()).data(column("customer_id")).advisoryLock("r-{customer_id}").payload(column("payload"));

  const refusal = (build: () => unknown): string => {
    try {
      build();
    } catch (error) {
      if (isSqlInboxError(error)) return error.message;
      throw error;
    }
    return "not refused";
  };

  test("a data column with no type is refused, naming the column", () => {
    expect(refusal(() => inboxTableSql(untyped, "postgres"))).toMatchInlineSnapshot(
      `"Declaration: the data column "customer_id" has no type: give it one (.type("bigint"), .type("text") …), or add it in createInboxTable's callback (table "adv_jobs", column "customer_id")"`,
    );
  });

  test("an id that is not generated and has no type is refused, naming the column", () => {
    expect(refusal(() => inboxTableSql(InboxSpec.table("t", column("uid")), "sqlite"))).toMatchInlineSnapshot(
      `"Declaration: the id column "uid" is not generated and has no type: mark it .generated(), give it a type (.type("bigint"), .type("text") …), or add it with its primary key in createInboxTable's callback (table "t", column "uid")"`,
    );
  });

  test("the callback may add it with Kysely's own builder, and add columns of its own", () => {
    const [table] = postgresDialect.table.create(untyped.description, (t) => t.addColumn("customer_id", "uuid", (c) => c.notNull()).addColumn("tenant", sql`citext`));
    expect(table?.sql).toMatchInlineSnapshot(
      `"create table "adv_jobs" ("id" bigserial primary key, "payload" bytea not null, "customer_id" uuid not null, "tenant" citext) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)"`,
    );
  });

  test("a column the description types, added again by the callback, is refused", () => {
    expect(refusal(() => sqliteDialect.table.create(seedByHand, (t) => t.addColumn("payload", "text")))).toMatchInlineSnapshot(
      `"Declaration: column "payload" is created twice: the description already types it, so leave it out of createInboxTable's callback (table "report_jobs", column "payload")"`,
    );
  });
});

describe("the queue table's storage settings", () => {
  const created = (engine: Engine, options: Parameters<typeof inboxTableSql>[2], spec: Parameters<typeof inboxTableSql>[0] = seedByHand) => inboxTableSql(spec, engine, options)[0];

  test("per engine: Postgres gets the settings of a table that churns; MySQL/MariaDB and SQLite have none, whatever is asked", () => {
    const asked = { fillfactor: 80 };
    expect(
      Object.fromEntries(ENGINES.map((e) => [e, { defaults: created(e, {}), record: created(e, { queueStorage: asked }), none: created(e, { queueStorage: false }) }])),
    ).toMatchInlineSnapshot(`
        {
          "mysql": {
            "defaults": "create table \`report_jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`locked_until\` datetime(3), \`payload\` longblob not null)",
            "none": "create table \`report_jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`locked_until\` datetime(3), \`payload\` longblob not null)",
            "record": "create table \`report_jobs\` (\`id\` bigint primary key auto_increment, \`attempt\` int default 1 not null, \`locked_until\` datetime(3), \`payload\` longblob not null)",
          },
          "postgres": {
            "defaults": "create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)",
            "none": "create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null)",
            "record": "create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null) with (fillfactor = 80)",
          },
          "sqlite": {
            "defaults": "create table "report_jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "locked_until" text, "payload" blob not null)",
            "none": "create table "report_jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "locked_until" text, "payload" blob not null)",
            "record": "create table "report_jobs" ("id" integer primary key autoincrement, "attempt" integer default 1 not null, "locked_until" text, "payload" blob not null)",
          },
        }
      `);
  });

  test("a record replaces the defaults: every setting given, booleans and dotted names included; an empty one is none", () => {
    expect(created("postgres", { queueStorage: { fillfactor: 90, autovacuum_enabled: true, "toast.autovacuum_vacuum_scale_factor": 0.05 } })).toMatchInlineSnapshot(
      `"create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null) with (fillfactor = 90, autovacuum_enabled = true, toast.autovacuum_vacuum_scale_factor = 0.05)"`,
    );
    expect(created("postgres", { queueStorage: {} })).toBe(created("postgres", { queueStorage: false }));
  });

  test("a dead-letter destination (lastError or failedAttempts) gets none unless a record is given", () => {
    const dead = InboxSpec.table("dead_jobs", column("id").generated()).payload(column("payload")).lastError(column("last_error"));
    expect(created("postgres", {}, dead)).not.toContain(" with (");
    expect(created("postgres", { queueStorage: { fillfactor: 90 } }, dead)).toMatch(/\) with \(fillfactor = 90\)$/);
  });

  test("a callback that ends the statement itself (modifyEnd) owns its end: the settings are left out", () => {
    const [partitioned] = postgresDialect.table.create(seedByHand, (t) => t.modifyEnd(sql`partition by range ("id")`));
    expect(partitioned?.sql).toMatch(/"payload" bytea not null\) partition by range \("id"\)$/);
  });

  test("a name or a value that is not a storage parameter's shape is refused: both go into the statement's text", () => {
    const refused = (queueStorage: Record<string, number | boolean>): string => {
      try {
        created("postgres", { queueStorage });
      } catch (error) {
        if (isSqlInboxError(error)) return error.message;
        throw error;
      }
      return "not refused";
    };
    expect(refused({ "fillfactor = 10) tablespace x; --": 1 })).toMatch(/^Declaration: the storage setting .* is not a storage parameter/);
    expect(refused({ fillfactor: Number.NaN })).toMatch(/^Declaration: the storage setting "fillfactor" = NaN/);
    // On an engine without settings, nothing is read, so nothing is refused.
    expect(created("sqlite", { queueStorage: { "not a name": 1 } })).not.toContain(" with (");
  });
});
