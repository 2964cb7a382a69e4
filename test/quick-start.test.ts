import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { createConnection } from "mysql2/promise";
import pg from "pg";
import { describe, expect, test } from "vitest";

// The README's quick start, followed as written on each engine: its table's DDL, its `db.ts` for the
// engine and its `app.ts`, copied out of README.md into a folder of their own and run in a fresh
// process. The test waits for the handler's line, stops the app with SIGTERM as a user would with
// Ctrl-C, and expects a clean exit and the row gone.
const root = resolve(import.meta.dirname, "..");
const readme = readFileSync(join(root, "README.md"), "utf8");
const PG_URL = process.env["SQLINBOX_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_URL = process.env["SQLINBOX_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306/test";

/** The body of the README's fenced block whose info string is exactly `info`. */
function block(info: string): string {
  const lines = readme.split("\n");
  const start = lines.indexOf(`\`\`\`${info}`);
  if (start < 0) throw new Error(`README.md has no \`\`\`${info} block`);
  const end = lines.findIndex((line, i) => i > start && line === "```");
  return `${lines.slice(start + 1, end).join("\n")}\n`;
}

interface Engine {
  readonly name: "postgres" | "mysql" | "sqlite";
  readonly url: string | undefined;
  /** Drops the quick start's table and runs the README's DDL as written. */
  readonly createTable: (dir: string, ddl: string) => Promise<void>;
  readonly rowsLeft: (dir: string) => Promise<number>;
}

const engines: Engine[] = [
  {
    name: "postgres",
    url: PG_URL,
    createTable: async (_dir, ddl) => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        await client.query("DROP TABLE IF EXISTS email_jobs");
        await client.query(ddl);
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
    createTable: async (_dir, ddl) => {
      const connection = await createConnection(MYSQL_URL.replace(/^mariadb:/, "mysql:"));
      try {
        await connection.query("DROP TABLE IF EXISTS email_jobs");
        await connection.query(ddl);
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
    createTable: async (dir, ddl) => {
      const db = new Database(join(dir, "app.db"));
      db.exec(ddl);
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
    for (const info of ["sql postgres", "sql mysql", "sql sqlite", "ts db.ts (postgres)", "ts db.ts (mysql)", "ts db.ts (sqlite)", "ts app.ts"]) {
      expect(block(info).length).toBeGreaterThan(50);
    }
  });

  test.each(engines)(
    "on $name: the handler runs once, SIGTERM stops the app cleanly, the row is gone",
    async (engine) => {
      const dir = join(root, "test/.quick-start", engine.name);
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "db.ts"), block(`ts db.ts (${engine.name})`));
      writeFileSync(join(dir, "app.ts"), block("ts app.ts"));
      await engine.createTable(dir, block(`sql ${engine.name}`));

      const env = { ...process.env, ...(engine.url === undefined ? {} : { DATABASE_URL: engine.url }) };
      const child = spawn(join(root, "node_modules/.bin/tsx"), ["--conditions=@sqlinbox/source", "app.ts"], { cwd: dir, env, stdio: "pipe" });
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
