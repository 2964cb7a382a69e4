import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
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
    const out = execFileSync("node", ["--input-type=module", "-e",
      `import { InboxSpec, column } from "@sqlinbox/core";
       const s = InboxSpec.table("report_jobs", column("id").generated()).lease(column("locked_until"));
       console.log(s.form, s.description.lease.name);`], { cwd: dir, encoding: "utf8" });
    expect(out.trim()).toBe("lease locked_until");
    expect(readdirSync(join(dir, "node_modules/@sqlinbox/core/dist"))).toContain("index.d.ts");
  }, 120_000);
});
