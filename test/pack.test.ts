import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, test } from "vitest";

// `npm pack` of each package must give a tarball that installs and imports on its own,
// from `dist/` (built by `npm test` before vitest runs), in a project that is not this one.
const root = resolve(import.meta.dirname, "..");
const work = mkdtempSync(join(tmpdir(), "sqlinbox-pack-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function pack(dir: string): string {
  const out = execFileSync("npm", ["pack", "--silent", "--pack-destination", work], { cwd: join(root, dir), encoding: "utf8" });
  const name = out.trim().split("\n").pop() ?? "";
  return join(work, name);
}

function consumer(name: string, deps: Record<string, string>): string {
  const dir = join(work, name);
  execFileSync("mkdir", ["-p", dir]);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module", dependencies: deps }));
  // Offline first: kysely comes from npm's cache where this machine already fetched it.
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts"], { cwd: dir, stdio: "pipe" });
  return dir;
}

describe("npm pack", () => {
  test("@sqlinbox/core installs alone and describes a table", () => {
    const core = pack("packages/core");
    const dir = consumer("uses-core", { "@sqlinbox/core": `file:${core}` });
    const out = execFileSync(
      "node",
      [
        "--input-type=module",
        "-e",
        `import { InboxSpec, column } from "@sqlinbox/core";
       const s = InboxSpec.table("report_jobs", column("id").generated()).lease(column("locked_until"));
       console.log(s.form, s.description.lease.name);`,
      ],
      { cwd: dir, encoding: "utf8" },
    );
    expect(out.trim()).toBe("lease locked_until");
    expect(readdirSync(join(dir, "node_modules/@sqlinbox/core/dist"))).toContain("index.d.ts");
  }, 120_000);
});

describe("npm pack of the whole set", () => {
  test("core + kysely-dialects + runtime tarballs install together outside the monorepo and run an app on SQLite", () => {
    const tarballs = ["packages/core", "packages/kysely-dialects", "packages/runtime"].map(pack);
    const [core, dialects, runtime] = tarballs;
    const dir = consumer("uses-runtime", {
      "@sqlinbox/core": `file:${core}`,
      "@sqlinbox/kysely-dialects": `file:${dialects}`,
      "@sqlinbox/runtime": `file:${runtime}`,
      kysely: "0.28.19",
      // The native driver this machine already built, linked rather than rebuilt.
      "better-sqlite3": `file:${join(root, "node_modules/better-sqlite3")}`,
    });
    const script = `
      import { defineInbox, field } from "@sqlinbox/core";
      import { dialectFor } from "@sqlinbox/kysely-dialects";
      import { App, InboxQueue, SqlBroker, subscriber, silentLogger } from "@sqlinbox/runtime";
      import Database from "better-sqlite3";
      const file = process.argv[1];
      const db = new Database(file);
      db.exec("CREATE TABLE jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload TEXT NOT NULL)");
      db.close();
      const Jobs = defineInbox({ table: "jobs", columns: { id: field.id().generated(), attempt: field.attempt().generated(), locked_until: field.lease(), payload: field.payload() } });
      const sqlText = dialectFor("sqlite").lease.claim(Jobs.description, { limit: 1, now: new Date(0), until: new Date(1000), precision: 3 }).sql;
      const broker = SqlBroker.fromUrl("sqlite:" + file);
      let done;
      const finished = new Promise((r) => (done = r));
      const sub = subscriber(InboxQueue.of(Jobs, "jobs").pollInterval(50), async (payload, ctx) => { done([payload, ctx.id]); });
      const app = new App({ name: "pack", version: "0", logger: silentLogger }).withBroker(broker.route(Jobs, "jobs"), (b) => b.include(sub));
      const running = await app.start();
      await broker.publish("jobs", { hello: "world" });
      const [payload, id] = await finished;
      await running.stop();
      console.log(JSON.stringify({ payload, id: Number(id), claim: sqlText.startsWith("update") }));
    `;
    const out = execFileSync("node", ["--input-type=module", "-e", script, join(dir, "jobs.db")], { cwd: dir, encoding: "utf8" });
    expect(JSON.parse(out.trim().split("\n").pop() ?? "{}")).toEqual({ payload: { hello: "world" }, id: 1, claim: true });

    // Source maps resolve: every map's sources are files the tarball ships (src/ beside dist/), and a stack
    // trace under --enable-source-maps names .ts files that exist in node_modules.
    for (const name of ["core", "kysely-dialects", "runtime"]) {
      const dist = join(dir, "node_modules/@sqlinbox", name, "dist");
      const maps = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".map"));
      expect(maps.length, name).toBeGreaterThan(5);
      const missing = maps.flatMap((map) => {
        const { sources, sourceRoot } = JSON.parse(readFileSync(join(dist, map), "utf8")) as { sources: string[]; sourceRoot?: string };
        return sources.map((source) => resolve(dirname(join(dist, map)), sourceRoot ?? "", source)).filter((file) => !existsSync(file));
      });
      expect(missing, `@sqlinbox/${name}: map sources not in the tarball`).toEqual([]);
    }
    const thrower = `
      import { InboxSpec, column } from "@sqlinbox/core";
      import { SqlBroker } from "@sqlinbox/runtime";
      const stacks = [];
      try { InboxSpec.table("", column("id")); } catch (error) { stacks.push(error.stack); }
      await SqlBroker.fromUrl("sqlite::memory:").publish("nowhere", {}).catch((error) => stacks.push(error.stack));
      console.log(JSON.stringify(stacks));
    `;
    const stacks = JSON.parse(execFileSync("node", ["--enable-source-maps", "--input-type=module", "-e", thrower], { cwd: dir, encoding: "utf8" }).trim()) as string[];
    expect(stacks).toHaveLength(2);
    for (const [stack, name] of [
      [stacks[0], "core"],
      [stacks[1], "runtime"],
    ] as const) {
      const files = [...(stack ?? "").matchAll(/(\/[^\s()]*node_modules\/@sqlinbox\/([\w-]+)\/[^\s():]+\.ts):\d+:\d+/g)];
      expect(
        files.map((m) => m[2]),
        stack,
      ).toContain(name);
      for (const [, file] of files) expect(existsSync(file as string), `${file} in:\n${stack}`).toBe(true);
    }
  }, 180_000);
});

describe("npm pack of the operator tools", () => {
  test("the cli and dashboard tarballs install outside the monorepo: ddl loads a TypeScript module, status reads a table, the dashboard serves its page and status", async () => {
    const [core, dialects, dashboard, cli] = ["packages/core", "packages/kysely-dialects", "packages/dashboard", "packages/cli"].map(pack);
    const dir = consumer("uses-cli", {
      "@sqlinbox/core": `file:${core}`,
      "@sqlinbox/kysely-dialects": `file:${dialects}`,
      "@sqlinbox/dashboard": `file:${dashboard}`,
      "@sqlinbox/cli": `file:${cli}`,
      kysely: "0.28.19",
      "better-sqlite3": `file:${join(root, "node_modules/better-sqlite3")}`,
    });
    const bin = join(dir, "node_modules/.bin/sqlinbox");
    expect(existsSync(bin), "the sqlinbox bin is linked").toBe(true);

    // ddl: a TypeScript module of the user's, loaded by the installed CLI.
    writeFileSync(
      join(dir, "inbox.ts"),
      `import { defineInbox, field } from "@sqlinbox/core";
export const Jobs = defineInbox({ table: "jobs", columns: { id: field.id().generated(), attempt: field.attempt().generated(), locked_until: field.lease(), payload: field.payload<{ n: number }>() } });
`,
    );
    const ddl = execFileSync(bin, ["ddl", "--module", "./inbox.ts", "--engine", "sqlite"], { cwd: dir, encoding: "utf8" });
    expect(ddl).toMatch(/^-- Jobs: jobs\ncreate table/i);

    // status: the table the printed DDL creates, with two rows.
    const file = join(dir, "jobs.db");
    writeFileSync(join(dir, "schema.sql"), ddl);
    writeFileSync(
      join(dir, "seed.mjs"),
      `import Database from "better-sqlite3";
import { readFileSync } from "node:fs";
const db = new Database(process.argv[2]);
db.exec(readFileSync("schema.sql", "utf8"));
db.prepare("insert into jobs (payload) values (?), (?)").run('{"n":1}', '{"n":2}');
db.close();
`,
    );
    execFileSync("node", ["seed.mjs", file], { cwd: dir });
    const status = JSON.parse(execFileSync(bin, ["status", "--url", `sqlite:${file}`, "--module", "./inbox.ts", "--json"], { cwd: dir, encoding: "utf8" })) as {
      tables: { table: string; form: string; totals: { ready: number } }[];
    };
    expect(status.tables.map((t) => [t.table, t.form, t.totals.ready])).toEqual([["jobs", "lease", 2]]);

    // dashboard: served from the installed package's assets, stopped by its pid.
    const server = spawn(bin, ["dashboard", "--url", `sqlite:${file}`, "--module", "./inbox.ts", "--port", "0"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    try {
      const url = await new Promise<string>((resolvePromise, reject) => {
        let out = "";
        let err = "";
        server.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const found = /on (http:\/\/\S+)/.exec(out);
          if (found?.[1] !== undefined) resolvePromise(found[1]);
        });
        server.stderr.on("data", (chunk: Buffer) => {
          err += chunk.toString();
        });
        server.once("exit", (code) => reject(new Error(`the dashboard exited with ${code}: ${out}${err}`)));
      });
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("<script");
      const live = (await (await fetch(new URL("/api/status", url))).json()) as { tables: { table: string; totals: { ready: number } }[] };
      expect(live.tables.map((t) => [t.table, t.totals.ready])).toEqual([["jobs", 2]]);
    } finally {
      const exited = new Promise((r) => server.once("exit", r));
      if (server.exitCode === null) server.kill("SIGTERM");
      await exited;
    }
  }, 240_000);
});
