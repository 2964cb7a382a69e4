import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, test } from "vitest";

// `npm pack` of the operator packages gives tarballs that install outside the monorepo: the bin
// runs from node_modules/.bin and the dashboard serves its page and chart library offline.
const root = resolve(import.meta.dirname, "../../..");
const work = mkdtempSync(join(tmpdir(), "sqlinbox-cli-pack-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function pack(dir: string): string {
  const out = execFileSync("npm", ["pack", "--silent", "--pack-destination", work], { cwd: join(root, dir), encoding: "utf8" });
  return join(work, out.trim().split("\n").pop() ?? "");
}

describe("npm pack of @sqlinbox/cli and @sqlinbox/dashboard", () => {
  test("the tarballs install together with core, kysely-dialects and database, and `sqlinbox` runs status and serves the dashboard", async () => {
    const [core, dialects, database, dashboard, cli] = ["packages/core", "packages/kysely-dialects", "packages/database", "packages/dashboard", "packages/cli"].map(pack);
    const dir = join(work, "ops");
    execFileSync("mkdir", ["-p", dir]);
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({
        name: "ops",
        private: true,
        type: "module",
        dependencies: {
          "@sqlinbox/core": `file:${core}`,
          "@sqlinbox/kysely-dialects": `file:${dialects}`,
          "@sqlinbox/database": `file:${database}`,
          "@sqlinbox/dashboard": `file:${dashboard}`,
          "@sqlinbox/cli": `file:${cli}`,
          kysely: "0.28.19",
          "better-sqlite3": `file:${join(root, "node_modules/better-sqlite3")}`,
        },
      }),
    );
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts"], { cwd: dir, stdio: "pipe" });

    const file = join(dir, "app.db");
    const db = new Database(file);
    db.exec("CREATE TABLE jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload TEXT)");
    db.exec(`INSERT INTO jobs (payload, locked_until) VALUES ('{"a":1}', NULL), ('{"a":2}', '${new Date(Date.now() + 60_000).toISOString()}')`);
    db.close();
    const bin = join(dir, "node_modules/.bin/sqlinbox");
    const out = execFileSync(bin, ["status", "--url", `sqlite:${file}`, "--table", "jobs", "--json"], { cwd: dir, encoding: "utf8" });
    expect(JSON.parse(out).tables[0].totals).toMatchObject({ ready: 1, inWork: 1 });

    const child = spawn(bin, ["dashboard", "--url", `sqlite:${file}`, "--table", "jobs", "--port", "0"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    try {
      const url = await new Promise<string>((ok, fail) => {
        let text = "";
        child.stdout.on("data", (d: Buffer) => {
          text += d.toString();
          const found = /on (http:\/\/\S+)/.exec(text)?.[1];
          if (found !== undefined) ok(found);
        });
        child.on("exit", (code) => fail(new Error(`the dashboard exited with ${code}`)));
      });
      for (const path of ["", "assets/app.js", "assets/uPlot.iife.min.js", "assets/uPlot.min.css"]) {
        expect((await fetch(`${url}${path}`)).status).toBe(200);
      }
      expect(((await (await fetch(`${url}api/status`)).json()) as { engine: string }).engine).toBe("sqlite");
    } finally {
      child.kill("SIGTERM");
    }
  }, 180_000);
});
