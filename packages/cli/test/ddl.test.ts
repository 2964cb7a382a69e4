import { fileURLToPath } from "node:url";
import { inboxTableSql, workflowTableSql } from "@sqlinbox/kysely-dialects";
import { describe, expect, test } from "vitest";
import { ExitCode } from "../src/exit-codes.js";
import { RenderReport, SendReceipt } from "./support/fixtures/ddl-inbox.js";
import { sqlinbox } from "./support/run-bin.js";

const fixture = (name: string) => fileURLToPath(new URL(`./support/fixtures/${name}`, import.meta.url));

describe("sqlinbox ddl", () => {
  test.each(["postgres", "mysql", "sqlite"] as const)("prints every described table's statements for %s, as inboxTableSql gives them", async (engine) => {
    const result = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts"), "--engine", engine]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(ExitCode.ok);
    // In the module namespace's order: export names sorted.
    const expected = [
      `-- RenderReport: report_jobs\n${inboxTableSql(RenderReport, engine)
        .map((s) => `${s};\n`)
        .join("")}`,
      `-- SendReceipt: receipts\n${inboxTableSql(SendReceipt, engine)
        .map((s) => `${s};\n`)
        .join("")}`,
    ].join("\n");
    expect(result.stdout).toBe(expected);
  });

  test.each(["postgres", "mysql", "sqlite"] as const)("--workflows prints the workflow table's statements for %s, alone or after the tables", async (engine) => {
    const alone = await sqlinbox(["ddl", "--workflows", "--engine", engine]);
    expect(alone.code).toBe(ExitCode.ok);
    const table = `-- the workflow table (workflow runs and their steps)\n${workflowTableSql(engine)
      .map((s) => `${s};\n`)
      .join("")}`;
    expect(alone.stdout).toBe(table);
    expect(alone.stdout).toContain("sqlinbox_workflows");
    const both = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts"), "--table", "receipts", "--workflows", "--engine", engine]);
    expect(both.stdout.endsWith(`\n${table}`)).toBe(true);
  });

  test("the Postgres output", async () => {
    const result = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts"), "--engine", "postgres"]);
    expect(result.stdout).toMatchInlineSnapshot(`
      "-- RenderReport: report_jobs
      create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null, "customer_id" bigint, "payload" bytea not null) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);

      -- SendReceipt: receipts
      create table "receipts" ("id" bigserial primary key, "attempt" integer default 1 not null, "locked_until" timestamptz, "payload" bytea not null, "queue" text not null, "processed_at" timestamptz, "job_key" text) with (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
      create index "receipts_claim" on "receipts" ("queue", "id") where "processed_at" is null;
      create index "receipts_processed" on "receipts" ("queue", "processed_at") where "processed_at" is not null;
      create unique index "receipts_dedup_key" on "receipts" ("job_key");
      "
    `);
  });

  test("--no-queue-storage leaves out the storage settings of a queue table (Postgres: the server's own apply)", async () => {
    const result = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts"), "--engine", "postgres", "--table", "report_jobs", "--no-queue-storage"]);
    expect(result.code).toBe(ExitCode.ok);
    expect(result.stdout).toBe(
      `-- RenderReport: report_jobs\n${inboxTableSql(RenderReport, "postgres", { queueStorage: false })
        .map((s) => `${s};\n`)
        .join("")}`,
    );
    expect(result.stdout).not.toContain(" with (");
  });

  test("--slot-table adds sqlinbox_slots once, after the tables", async () => {
    const result = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts"), "--engine", "mysql", "--table", "receipts", "--slot-table"]);
    expect(result.code).toBe(ExitCode.ok);
    expect(result.stdout.split("\n").slice(-3)).toMatchInlineSnapshot(`
      [
        "-- sqlinbox_slots: where maxInWork (row lock) and rateLimit count",
        "create table if not exists \`sqlinbox_slots\` (\`name\` varchar(255) not null, \`slot\` int not null, \`started_ms\` bigint default 0 not null, constraint \`sqlinbox_slots_pkey\` primary key (\`name\`, \`slot\`));",
        "",
      ]
    `);
  });

  test("--table picks one table; a table the module does not describe is a usage error", async () => {
    const one = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts"), "--engine", "sqlite", "--table", "report_jobs"]);
    expect(one.stdout).toBe(
      `-- RenderReport: report_jobs\n${inboxTableSql(RenderReport, "sqlite")
        .map((s) => `${s};\n`)
        .join("")}`,
    );
    const none = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts"), "--engine", "sqlite", "--table", "orders"]);
    expect(none.code).toBe(ExitCode.usage);
    expect(none.stderr).toContain('describes no table "orders": it describes "report_jobs", "receipts"');
  });

  test("a data column with no type is a usage error naming the export and the column", async () => {
    const result = await sqlinbox(["ddl", "--module", fixture("ddl-untyped.ts"), "--engine", "mysql"]);
    expect(result.code).toBe(ExitCode.usage);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain('Untyped: Declaration: the data column "customer_id" has no type');
  });

  test("--engine is required and takes the three engines only", async () => {
    const missing = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts")]);
    expect(missing.code).toBe(ExitCode.usage);
    expect(missing.stderr).toContain("--engine");
    const wrong = await sqlinbox(["ddl", "--module", fixture("ddl-inbox.ts"), "--engine", "oracle"]);
    expect(wrong.code).toBe(ExitCode.usage);
    expect(wrong.stderr).toContain("Allowed choices are postgres, mysql, sqlite");
  });

  // A module that starts something on import (an app, a pool, a timer) would keep the command running
  // for ever once its statements are printed: it says so, names the module, and exits.
  test("a module whose import starts a server and a timer: the statements, a warning naming it, and an exit within seconds", async () => {
    const started = Date.now();
    const result = await sqlinbox(["ddl", "--module", fixture("starts-on-import.ts"), "--engine", "sqlite"], { timeoutMs: 30_000 });
    expect(result.stdout).toMatch(/^-- Jobs: jobs\ncreate table "jobs"/);
    expect(result.stderr).toContain("warning: importing");
    expect(result.stderr).toContain("starts-on-import.ts started something that is still running (1 Timeout)");
    expect(result.stderr).toMatch(/the command is done, but the process is still running 1000 ms later \(.*TCPServerWrap.*\), kept alive by what .*starts-on-import\.ts started/);
    expect(result.stderr).toContain("Give --module a module that only describes the tables");
    expect(result.code).toBe(ExitCode.usage);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  test("an app's entry module (it exports no description and keeps running): the usage error says it looks like an app, and the command exits", async () => {
    const result = await sqlinbox(["ddl", "--module", fixture("app-on-import.ts"), "--engine", "postgres"], { timeoutMs: 30_000 });
    expect(result.code).toBe(ExitCode.usage);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      "exports no table description (an InboxSpec or a defineInbox value). Importing it started something that is still running (1 Timeout): it looks like an app",
    );
    expect(result.stderr).toContain("kept alive by what");
  });
});
