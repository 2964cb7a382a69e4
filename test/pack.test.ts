import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readmeBlock, readmeInstallLines } from "./readme.js";

// `npm run pack`'s tarballs (scripts/pack.mjs, from `dist/`, built by `npm test` before vitest runs) install
// and work in projects that are not this one: each package on its own, all six together as the README's
// install line puts them, and the README's quick start compiled there with TypeScript 5.9 and 7 under a
// strict tsconfig with `skipLibCheck` off, then run on SQLite. Packed once, for every case.
const root = resolve(import.meta.dirname, "..");
const work = mkdtempSync(join(tmpdir(), "sqlinbox-pack-"));
const packs = join(work, "packs");
afterAll(() => rmSync(work, { recursive: true, force: true }), 120_000);

beforeAll(() => {
  execFileSync(process.execPath, [join(root, "scripts/pack.mjs"), "--out", packs], { cwd: root, stdio: "pipe" });
}, 120_000);

/** The tarball `npm run pack` wrote for `packages/<name>`. */
function pack(dir: string): string {
  const name = `sqlinbox-${dir.replace(/^packages\//, "")}-`;
  const file = readdirSync(packs).find((f) => f.startsWith(name) && /^\d/.test(f.slice(name.length)));
  if (file === undefined) throw new Error(`no tarball for ${dir} in ${packs}: ${readdirSync(packs).join(", ")}`);
  return join(packs, file);
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
  test("core + kysely-dialects + database + runtime tarballs install together outside the monorepo and run an app on SQLite", () => {
    const tarballs = ["packages/core", "packages/kysely-dialects", "packages/database", "packages/runtime"].map(pack);
    const [core, dialects, database, runtime] = tarballs;
    const dir = consumer("uses-runtime", {
      "@sqlinbox/core": `file:${core}`,
      "@sqlinbox/kysely-dialects": `file:${dialects}`,
      "@sqlinbox/database": `file:${database}`,
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
    for (const name of ["core", "kysely-dialects", "database", "runtime"]) {
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
    const [core, dialects, database, dashboard, cli] = ["packages/core", "packages/kysely-dialects", "packages/database", "packages/dashboard", "packages/cli"].map(pack);
    const dir = consumer("uses-cli", {
      "@sqlinbox/core": `file:${core}`,
      "@sqlinbox/kysely-dialects": `file:${dialects}`,
      "@sqlinbox/database": `file:${database}`,
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

// The README's install, done as a user does it in an app of their own: the tarballs and what the install line
// names, then the type-checking line; its quick start's files, verbatim; a tsconfig as `tsc --init` (5.9)
// writes it, with `"types": ["node"]` and `skipLibCheck` off, so that every shipped declaration the app
// reaches is checked. Two swaps only: the folder of tarballs is this run's, and better-sqlite3 is the build
// this machine already made (linked, not compiled again). TypeScript itself is installed once per version
// into node_modules/.cache and reused by later runs.
describe("the README's install and quick start, in a fresh app outside the workspace", () => {
  const app = join(work, "app");
  const TYPESCRIPT = ["5.9.3", "7.0.2"] as const;
  const tsc: Record<string, string> = {};

  /** `npm install …` as the README writes it, with the two swaps; returns the arguments after `install`. */
  function installArgs(line: string): string[] {
    const words = line.split(/\s+/).slice(2);
    const tarballs = readdirSync(packs)
      .filter((f) => f.endsWith(".tgz"))
      .map((f) => join(packs, f));
    return words.flatMap((word) => {
      if (word.endsWith("packs/*.tgz")) return tarballs;
      if (word.startsWith("better-sqlite3@")) return [`file:${join(root, "node_modules/better-sqlite3")}`];
      return [word];
    });
  }

  /** Installs `typescript@version` into a cache folder of its own, unless a previous run did; its tsc binary. */
  function typescript(version: string): string {
    const dir = join(root, "node_modules/.cache/sqlinbox-typescript", version);
    const manifest = join(dir, "node_modules/typescript/package.json");
    if (!existsSync(manifest) || (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version !== version) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "package.json"), JSON.stringify({ private: true }));
      execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts", `typescript@${version}`], { cwd: dir, stdio: "pipe" });
    }
    return join(dir, "node_modules/.bin/tsc");
  }

  beforeAll(() => {
    const lines = readmeInstallLines();
    const sqlite = lines.find((line) => line.includes("packs/*.tgz") && line.includes("better-sqlite3@"));
    const types = lines.find((line) => line.startsWith("npm install --save-dev typescript "));
    expect(sqlite, `README install lines: ${lines.join(" | ")}`).toBeDefined();
    expect(types, `README install lines: ${lines.join(" | ")}`).toBeDefined();
    // The line has what the quick start's run line uses, and the registry line is there for later.
    expect(sqlite).toMatch(/\bkysely\b.*\btsx\b/);
    expect(lines.some((line) => line.startsWith("npm install @sqlinbox/core @sqlinbox/runtime kysely"))).toBe(true);

    mkdirSync(app, { recursive: true });
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "signup", private: true, type: "module" }));
    const npm = (args: string[]) => execFileSync("npm", [...args, "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts"], { cwd: app, stdio: "pipe" });
    npm(["install", ...installArgs(sqlite ?? "")]);
    // The type-checking line less typescript, which each case brings in the version it checks with.
    npm(["install", ...installArgs(types ?? "").filter((word) => word !== "typescript")]);
    for (const version of TYPESCRIPT) tsc[version] = typescript(version);

    writeFileSync(join(app, "inbox.ts"), readmeBlock("ts inbox.ts"));
    writeFileSync(join(app, "db.ts"), readmeBlock("ts db.ts (sqlite)"));
    writeFileSync(join(app, "app.ts"), readmeBlock("ts app.ts"));
    // Every public entry point, so that the declarations the quick start does not reach are checked too.
    writeFileSync(
      join(app, "entries.ts"),
      ["@sqlinbox/core", "@sqlinbox/runtime", "@sqlinbox/runtime/testing", "@sqlinbox/kysely-dialects", "@sqlinbox/cli", "@sqlinbox/dashboard"]
        .map((name, i) => `import * as entry${i} from "${name}";\nexport { entry${i} };\n`)
        .join(""),
    );
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify(
        {
          compilerOptions: {
            module: "nodenext",
            target: "esnext",
            types: ["node"],
            noEmit: true,
            noUncheckedIndexedAccess: true,
            exactOptionalPropertyTypes: true,
            strict: true,
            jsx: "react-jsx",
            verbatimModuleSyntax: true,
            isolatedModules: true,
            noUncheckedSideEffectImports: true,
            moduleDetection: "force",
            skipLibCheck: false,
          },
        },
        null,
        2,
      ),
    );
  }, 600_000);

  test.each(TYPESCRIPT)(
    "TypeScript %s compiles the quick start and every entry point with skipLibCheck off",
    (version) => {
      const run = () => execFileSync(tsc[version] ?? "", ["-p", ".", "--listFiles"], { cwd: app, encoding: "utf8", stdio: "pipe" });
      let listed = "";
      try {
        listed = run();
      } catch (error) {
        const { stdout, stderr } = error as { stdout?: string; stderr?: string };
        expect.fail(`tsc ${version} failed:\n${stdout ?? ""}${stderr ?? ""}`);
      }
      expect(execFileSync(tsc[version] ?? "", ["--version"], { encoding: "utf8" })).toContain(version);
      // The shipped declarations were part of the program, so skipLibCheck off did check them.
      const files = listed.split("\n");
      for (const shipped of ["@sqlinbox/core/dist/spec.d.ts", "@sqlinbox/runtime/dist/index.d.ts", "@sqlinbox/cli/dist/index.d.ts"]) {
        expect(
          files.some((file) => file.endsWith(`node_modules/${shipped}`)),
          shipped,
        ).toBe(true);
      }
      for (const own of ["app.ts", "inbox.ts", "db.ts"]) expect(files.some((file) => file.endsWith(`/app/${own}`))).toBe(true);
    },
    180_000,
  );

  test("sqlinbox ddl --module ./inbox.ts prints the table, starting nothing", () => {
    const out = execFileSync(join(app, "node_modules/.bin/sqlinbox"), ["ddl", "--module", "./inbox.ts", "--engine", "sqlite"], { cwd: app, encoding: "utf8", stdio: "pipe" });
    expect(out).toMatch(/^-- EmailJobs: email_jobs\ncreate table "email_jobs"/);
  }, 60_000);

  test("tsx app.ts runs it on SQLite: the table made, the email sent once, SIGTERM ends it", async () => {
    rmSync(join(app, "app.db"), { force: true });
    // `node --import tsx` runs the README's `tsx app.ts` in one process. The `tsx` command relays a SIGTERM to a child
    // process and, when the child does not report it within 30 ms (a loaded machine), kills it and exits 143: that
    // would test tsx's relay, not the app's own shutdown.
    const child = spawn(process.execPath, ["--import", "tsx", "app.ts"], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    try {
      await new Promise<void>((done, fail) => {
        const timer = setTimeout(() => fail(new Error(`no welcome email after 60 s:\n${output}`)), 60_000);
        child.stdout.on("data", () => {
          if (output.includes("sending the welcome email to ada@example.com")) {
            clearTimeout(timer);
            done();
          }
        });
        child.once("exit", (code) => {
          clearTimeout(timer);
          fail(new Error(`the app exited (${code}) first:\n${output}`));
        });
      });
      child.kill("SIGTERM");
      expect(await exited, output).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    expect(output.split("sending the welcome email").length - 1).toBe(1);
    const db = new Database(join(app, "app.db"), { readonly: true });
    try {
      expect(db.prepare("select count(*) as n from email_jobs").get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  }, 120_000);
});

/** The version of a NATS client package this repository installed. */
const natsVersion = (name: string): string => (JSON.parse(readFileSync(join(root, "node_modules/@nats-io", name, "package.json"), "utf8")) as { version: string }).version;

describe("npm pack of a broker package", () => {
  test("the nats tarball (packs/brokers/) installs beside the runtime's and relays a row from SQLite to JetStream", () => {
    const [core, dialects, database, runtime] = ["packages/core", "packages/kysely-dialects", "packages/database", "packages/runtime"].map(pack);
    const nats = join(packs, "brokers", readdirSync(join(packs, "brokers")).find((f) => /^sqlinbox-nats-\d/.test(f)) ?? "missing");
    expect(readdirSync(join(packs, "brokers")).sort()).toEqual(["amqp", "mqtt", "nats", "redis"].map((name) => `sqlinbox-${name}-0.1.0.tgz`));
    const dir = consumer("uses-nats", {
      "@sqlinbox/core": `file:${core}`,
      "@sqlinbox/kysely-dialects": `file:${dialects}`,
      "@sqlinbox/database": `file:${database}`,
      "@sqlinbox/runtime": `file:${runtime}`,
      "@sqlinbox/nats": `file:${nats}`,
      // The client, the app's own choice (a peer dependency): the version this repository tests with, from npm's cache.
      "@nats-io/jetstream": natsVersion("jetstream"),
      "@nats-io/transport-node": natsVersion("transport-node"),
      kysely: "0.28.19",
      "better-sqlite3": `file:${join(root, "node_modules/better-sqlite3")}`,
    });
    const stream = `PACK_${process.pid}_${Date.now() % 100_000}`;
    const script = `
      import { jetstream, jetstreamManager } from "@nats-io/jetstream";
      import { connect } from "@nats-io/transport-node";
      import { defineInbox, field } from "@sqlinbox/core";
      import { natsOutbox } from "@sqlinbox/nats";
      import { inboxTableSql } from "@sqlinbox/kysely-dialects";
      import { App, InboxQueue, SqlBroker, silentLogger } from "@sqlinbox/runtime";
      import Database from "better-sqlite3";
      const Outbox = defineInbox({ table: "outbox", columns: { id: field.id().generated(), attempt: field.attempt().generated(), locked_until: field.lease(), payload: field.payload() } });
      const nc = await connect({ servers: process.env.SQLINBOX_NATS_URL ?? "127.0.0.1:4222" });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "${stream}", subjects: ["${stream}.>"] });
      const file = new Database(process.argv[1]);
      for (const statement of inboxTableSql(Outbox, "sqlite")) file.exec(statement);
      file.close();
      const broker = SqlBroker.fromUrl("sqlite:" + process.argv[1]).route(Outbox, "${stream}.placed");
      await broker.publish("${stream}.placed", { order: 7 });
      const relay = natsOutbox(InboxQueue.of(Outbox, "${stream}.placed").pollInterval(50), { js: jetstream(nc) });
      const running = await new App({ name: "pack-nats", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      let info = await jsm.streams.info("${stream}");
      for (let i = 0; i < 100 && info.state.messages === 0; i++) { await new Promise((r) => setTimeout(r, 50)); info = await jsm.streams.info("${stream}"); }
      const stored = await jsm.streams.getMessage("${stream}", { seq: 1 });
      await running.stop();
      await jsm.streams.delete("${stream}");
      await nc.close();
      console.log(JSON.stringify({ messages: info.state.messages, subject: stored.subject, body: stored.json(), msgId: stored.header.get("Nats-Msg-Id") }));
    `;
    const out = execFileSync("node", ["--input-type=module", "-e", script, join(dir, "outbox.db")], { cwd: dir, encoding: "utf8" });
    expect(JSON.parse(out.trim().split("\n").pop() ?? "{}")).toEqual({ messages: 1, subject: `${stream}.placed`, body: { order: 7 }, msgId: "outbox:1" });
  }, 180_000);
});
