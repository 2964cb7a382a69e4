import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The bench harness's smoke, for correctness only: tiny N, one round, every workload and system.
 * It fails when any system does not process all its jobs (the harness exits non-zero). No timing is asserted.
 */
describe("bench harness smoke", () => {
  it("the peers come from the bench's own package, installed by `npm run bench:install`", () => {
    const require = createRequire(import.meta.url);
    for (const peer of ["graphile-worker", "pg-boss"]) {
      const found = (() => {
        try {
          return require.resolve(peer);
        } catch {
          return `${peer} is not installed: run npm run bench:install`;
        }
      })();
      expect(found).toContain("/scripts/bench/node_modules/");
    }
  });

  it("every system processes all its jobs", () => {
    try {
      execFileSync(process.execPath, ["--import", "tsx", "--conditions=@sqlinbox/source", "scripts/bench/main.ts", "--smoke"], {
        cwd: root,
        stdio: "pipe",
        encoding: "utf8",
        timeout: 170_000,
      });
    } catch (e) {
      const err = e as { status?: number; stdout?: string; stderr?: string };
      expect.fail(
        `bench:smoke exited with ${err.status}\n${err.stdout ?? ""}\n${(err.stderr ?? "")
          .split("\n")
          .filter((l) => /FAILED|Error/.test(l))
          .join("\n")}`,
      );
    }
  }, 180_000);
});
