import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { createConnection } from "mysql2/promise";
import pg from "pg";
import { describe, expect, test } from "vitest";
import { readmeBlock as block, root } from "./readme.js";
import { selects } from "./support/engine-selection.js";

// The README's quick start, followed as written on each engine: its `inbox.ts`, its `db.ts` for the
// engine and its `app.ts`, copied out of README.md into a folder of their own and run in a fresh process
// on a database without the table (the app creates it). The test waits for the handler's line, stops the
// app with SIGTERM as a user would with Ctrl-C, and expects a clean exit and the row gone. `sqlinbox ddl
// --module ./inbox.ts` reads the same `inbox.ts`, starting nothing, and prints statements the engine runs.
const PG_URL = process.env["SQLINBOX_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_URL = process.env["SQLINBOX_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306/test";
const BIN = join(root, "packages/cli/dist/bin.js");

interface Engine {
  readonly name: "postgres" | "mysql" | "sqlite";
  readonly url: string | undefined;
  /** Drops the quick start's table, then runs `ddl` (statements a line each) when given. */
  readonly resetTable: (dir: string, ddl?: string) => Promise<void>;
  readonly rowsLeft: (dir: string) => Promise<number>;
}

const engines: Engine[] = [
  {
    name: "postgres",
    url: PG_URL,
    resetTable: async (_dir, ddl) => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        await client.query("DROP TABLE IF EXISTS email_jobs");
        for (const statement of statements(ddl)) await client.query(statement);
      } finally {
        await client.end();
      }
    },
    rowsLeft: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        return Number((await client.query("SELECT count(*) AS n FROM email_jobs")).rows[0].n);
      } finally {
        await client.end();
      }
    },
  },
  {
    name: "mysql",
    url: MYSQL_URL,
    resetTable: async (_dir, ddl) => {
      const connection = await createConnection(MYSQL_URL.replace(/^mariadb:/, "mysql:"));
      try {
        await connection.query("DROP TABLE IF EXISTS email_jobs");
        for (const statement of statements(ddl)) await connection.query(statement);
      } finally {
        await connection.end();
      }
    },
    rowsLeft: async () => {
      const connection = await createConnection(MYSQL_URL.replace(/^mariadb:/, "mysql:"));
      try {
        const [rows] = await connection.query("SELECT count(*) AS n FROM email_jobs");
        return Number((rows as { n: number }[])[0]?.n);
      } finally {
        await connection.end();
      }
    },
  },
  {
    name: "sqlite",
    url: undefined,
    resetTable: async (dir, ddl) => {
      const db = new Database(join(dir, "app.db"));
      db.exec("DROP TABLE IF EXISTS email_jobs");
      for (const statement of statements(ddl)) db.exec(statement);
      db.close();
    },
    rowsLeft: async (dir) => {
      const db = new Database(join(dir, "app.db"), { readonly: true });
      try {
        return (db.prepare("SELECT count(*) AS n FROM email_jobs").get() as { n: number }).n;
      } finally {
        db.close();
      }
    },
  },
];

/** The engines `SQLINBOX_ENGINES` selects (MySQL's scheme runs on the MariaDB server). */
const selected = engines.filter((engine) => selects(engine.name === "mysql" ? "mariadb" : engine.name));

/** `sqlinbox ddl` output as statements: one a line, comments and blank lines left out. */
const statements = (ddl: string | undefined): string[] =>
  (ddl ?? "")
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("--"))
    .map((line) => line.replace(/;$/, ""));

/** The README's three files for `engine`, in a fresh folder of the repository (so `@sqlinbox/*` resolve to the workspace). */
function quickStartFolder(engine: Engine["name"]): string {
  const dir = join(root, "test/.quick-start", engine);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "inbox.ts"), block("ts inbox.ts"));
  writeFileSync(join(dir, "db.ts"), block(`ts db.ts (${engine})`));
  writeFileSync(join(dir, "app.ts"), block("ts app.ts"));
  return dir;
}

/** Resolves with the child's output once `line` appears in it; rejects when it exits first. */
function waitForLine(child: ChildProcess, line: string, output: { text: string }, timeoutMs: number): Promise<void> {
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no "${line}" after ${timeoutMs} ms:\n${output.text}`)), timeoutMs);
    const check = () => {
      if (output.text.includes(line)) {
        clearTimeout(timer);
        done();
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`the app exited (${code}) before "${line}":\n${output.text}`));
    });
  });
}

describe("the README's quick start, as written", () => {
  test("its blocks are in the README", () => {
    for (const info of ["ts inbox.ts", "ts db.ts (postgres)", "ts db.ts (mysql)", "ts db.ts (sqlite)", "ts app.ts"]) {
      expect(block(info).length).toBeGreaterThan(50);
    }
    // The app creates its table (guarded: it skips a table that exists) and takes the description from inbox.ts.
    expect(block("ts app.ts")).toContain("await createInboxTable(db, EmailJobs);");
    expect(block("ts app.ts")).toContain('import { EmailJobs } from "./inbox.js";');
  });

  test.each(selected)(
    "on $name: sqlinbox ddl --module ./inbox.ts prints the table's statements, starting nothing, and the engine runs them",
    async (engine) => {
      const dir = quickStartFolder(engine.name);
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, "ddl", "--module", "./inbox.ts", "--engine", engine.name], { cwd: dir, timeout: 60_000 });
      expect(stderr).toBe("");
      expect(stdout).toMatch(/^-- EmailJobs: email_jobs\ncreate table [`"]email_jobs[`"]/);
      await engine.resetTable(dir, stdout);
      expect(await engine.rowsLeft(dir)).toBe(0);
    },
    90_000,
  );

  test.each(selected)(
    "on $name, with no table yet: the app creates it, the handler runs once, SIGTERM stops the app cleanly, the row is gone",
    async (engine) => {
      const dir = quickStartFolder(engine.name);
      await engine.resetTable(dir);
      const env = { ...process.env, ...(engine.url === undefined ? {} : { DATABASE_URL: engine.url }) };
      // `node --import tsx` runs the README's `tsx app.ts` in one process. The `tsx` command relays a SIGTERM to a child
      // and, when the child has not reported it within 30 ms (busy on a loaded machine), SIGKILLs it and exits 143: that
      // would test tsx's relay, not the app's own shutdown.
      const child = spawn(process.execPath, ["--conditions=@sqlinbox/source", "--import", "tsx", "app.ts"], { cwd: dir, env, stdio: "pipe" });
      const output = { text: "" };
      child.stdout.on("data", (chunk: Buffer) => (output.text += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (output.text += chunk.toString()));
      const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
      try {
        await waitForLine(child, "sending the welcome email to ada@example.com", output, 60_000);
        child.kill("SIGTERM");
        const code = await Promise.race([exited, new Promise<string>((done) => setTimeout(() => done("still running 20 s after SIGTERM"), 20_000))]);
        expect(code, output.text).toBe(0);
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      expect(output.text.split("sending the welcome email").length - 1).toBe(1);
      expect(await engine.rowsLeft(dir)).toBe(0);
    },
    120_000,
  );
});
