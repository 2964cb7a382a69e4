import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ExitCode } from "../src/exit-codes.js";
import { createQueue, dropTables, sqlite, uniqueName, type TestDatabase } from "./support/databases.js";
import { sqlinbox } from "./support/run-bin.js";

// The documented exit codes, each produced by the real bin.
describe("exit codes", () => {
  let t: TestDatabase;
  let table: string;
  beforeAll(async () => {
    t = await sqlite();
    table = await createQueue(t, uniqueName("codes"), { lease: true });
  });
  afterAll(async () => {
    await dropTables(t, table);
    await t.close();
  });

  test("0: done, and for --help", async () => {
    expect((await sqlinbox(["status", "--url", t.url, "--table", table])).code).toBe(ExitCode.ok);
    const help = await sqlinbox(["--help"]);
    expect(help.code).toBe(ExitCode.ok);
    expect(help.stdout).toMatch(/status[\s\S]*peek[\s\S]*retry[\s\S]*purge[\s\S]*dashboard/);
    // --json only where a command prints a result: the dashboard prints none.
    const dashboard = await sqlinbox(["dashboard", "--help"]);
    expect(dashboard.code).toBe(ExitCode.ok);
    expect(dashboard.stdout).toContain("--allow-writes");
    expect(dashboard.stdout).not.toContain("--json");
    for (const command of ["status", "peek", "retry", "purge"]) expect((await sqlinbox([command, "--help"])).stdout).toContain("--json");
  });

  test("1: usage — an unknown option, no URL, retry with neither ids nor --all, writes without a token", async () => {
    const unknown = await sqlinbox(["status", "--no-such-option"]);
    expect(unknown.code).toBe(ExitCode.usage);
    expect(unknown.stderr).toContain("unknown option '--no-such-option'");
    const noUrl = await sqlinbox(["status", "--table", table], { env: { SQLINBOX_URL: "" } });
    expect([noUrl.code, noUrl.stderr]).toEqual([ExitCode.usage, "sqlinbox: no database URL: pass --url or set SQLINBOX_URL\n"]);
    expect((await sqlinbox(["retry", "--url", t.url, "--table", table])).code).toBe(ExitCode.usage);
    expect((await sqlinbox(["dashboard", "--url", t.url, "--table", table, "--allow-writes"])).code).toBe(ExitCode.usage);
  });

  test("the URL can come from SQLINBOX_URL", async () => {
    expect((await sqlinbox(["status", "--table", table], { env: { SQLINBOX_URL: t.url } })).code).toBe(ExitCode.ok);
  });

  test("2: cannot connect, no such table, or a description that does not match the table", async () => {
    const down = await sqlinbox(["status", "--url", "postgres://postgres@127.0.0.1:1/nowhere", "--table", "jobs"]);
    expect(down.code).toBe(ExitCode.cannotConnect);
    expect(down.stderr).toContain("cannot connect to postgres://postgres@127.0.0.1:1/nowhere");
    const secret = await sqlinbox(["status", "--url", "mysql://root:hunter2@127.0.0.1:1/nowhere", "--table", "jobs"]);
    expect(secret.code).toBe(ExitCode.cannotConnect);
    expect(secret.stderr).not.toContain("hunter2");
    const missing = await sqlinbox(["status", "--url", t.url, "--table", "no_such_table"]);
    expect(missing.code).toBe(ExitCode.cannotConnect);
    expect(missing.stderr).toMatch(/^sqlinbox: table "no_such_table" does not exist in SQLite 3\.\d+/);
    const broken = await sqlinbox(["status", "--url", t.url, "--module", fileURLToPath(new URL("./support/fixtures/wrong-column.ts", import.meta.url))], {
      env: { TEST_SOURCE_TABLE: table },
    });
    expect(broken.code).toBe(ExitCode.cannotConnect);
    expect(broken.stderr).toMatch(/^sqlinbox: schema mismatch: /);
    expect(broken.stderr).toContain(`table "${table}" has no column "no_such_column" (described with the payload role)`);
  });

  test("3: nothing matched", async () => {
    const peek = await sqlinbox(["peek", "--url", t.url, "--table", table, "--state", "ready"]);
    expect([peek.code, peek.stderr]).toEqual([ExitCode.nothingMatched, "sqlinbox: no rows match (state ready)\n"]);
    const retry = await sqlinbox(["retry", "--all", "--url", t.url, "--table", table, "--dead-letter-table", table]);
    // A failure is said once, on stderr: stdout has nothing.
    expect([retry.code, retry.stdout, retry.stderr]).toEqual([ExitCode.nothingMatched, "", "sqlinbox: there are no dead letters\n"]);
  });
});
