import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { connect, urlOf } from "./db.js";
import { cpuTicksOf, DbSampler, isLocalUrl } from "./db-sampler.js";
import { IdLedger } from "./jobs.js";
import { leftOutEngines, selects } from "../../test/support/engine-selection.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The bench harness's smoke, for correctness only: tiny N, one round, every workload and system.
 * It fails when any system does not process all its jobs (the harness exits non-zero). No timing is asserted.
 */
describe("bench harness smoke", () => {
  it("the peers come from the bench's own package, installed by `npm run bench:install`", () => {
    const require = createRequire(import.meta.url);
    for (const peer of ["graphile-worker", "pg-boss", "bullmq", "ioredis"]) {
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

  it("the scale-out ledger counts a second report of an id as a duplicate and completes only when every id was seen", async () => {
    const ledger = new IdLedger(3);
    let complete = false;
    void ledger.complete.then(() => (complete = true));
    for (const i of [0, 2, 2, 7, -1, 1.5]) ledger.record(i);
    await Promise.resolve();
    expect({ unique: ledger.unique, duplicates: ledger.duplicates, foreign: ledger.foreign, complete }).toEqual({ unique: 2, duplicates: 1, foreign: 3, complete: false });
    ledger.record(1);
    await ledger.complete;
    expect([ledger.timesSeen(0), ledger.timesSeen(1), ledger.timesSeen(2)]).toEqual([1, 1, 2]);
  });

  it("the database sampler reads CPU from /proc only for a server on this host", () => {
    expect(
      ["postgres://postgres@127.0.0.1:5432/x", "mariadb://root@localhost/x", "postgres://u@[::1]:5432/x", "postgres://u@/db?host=/var/run/postgresql"].map(isLocalUrl),
    ).toEqual([true, true, true, true]);
    expect(["postgres://u:p@db.example.com:5432/x", "mysql://root@10.0.0.7:3306/x"].map(isLocalUrl)).toEqual([false, false]);
    const before = cpuTicksOf(process.pid)!;
    const until = performance.now() + 100;
    while (performance.now() < until) Math.sqrt(Math.random());
    expect(cpuTicksOf(process.pid)! - before).toBeGreaterThan(0);
    expect(cpuTicksOf(2 ** 22 + 1)).toBeUndefined();
  });

  it.runIf(selects("postgres"))("each sampling window starts from zero: a second drain's sample holds none of the first's", async () => {
    const db = connect("postgres", 1);
    try {
      const sampler = new DbSampler(db, "postgres", isLocalUrl(urlOf("postgres")), 20);
      const windowOf = async (ms: number) => {
        await sampler.start();
        await new Promise((resolve) => setTimeout(resolve, ms));
        await sampler.end();
        return sampler.result();
      };
      const first = await windowOf(400);
      const second = await windowOf(100);
      expect(first.samples).toBeGreaterThan(second.samples);
      expect(second.samples).toBeLessThan(10);
      expect(second.seconds).toBeLessThan(first.seconds);
      expect(second.counters.xact_commit).toBeGreaterThanOrEqual(0);
    } finally {
      await db.destroy();
    }
  });

  it("hot-path.ts counts, per form, the files and calls of sqlinbox's built code per acked row", () => {
    interface HotPathRun {
      form: string;
      rows: number;
      files: number;
      callsPerRow: number;
      byFile: { file: string; callsPerRow: number }[];
      byFunction: { fn: string; callsPerRow: number }[];
    }
    const printed = execFileSync(process.execPath, ["--import", "tsx", "scripts/bench/hot-path.ts", "--warm=100", "--rows=200", "--json"], {
      cwd: root,
      encoding: "utf8",
      timeout: 120_000,
    });
    const report = JSON.parse(printed.trim().split("\n").at(-1) ?? "") as { code: string; rows: number; results: HotPathRun[] };
    expect(report.code).toBe("dist");
    expect(report.results.map((r) => r.form)).toEqual(["lease", "advisory", "lease-batch"]);
    for (const r of report.results) {
      expect(r.rows).toBe(200);
      expect(r.files).toBeGreaterThan(0);
      expect(r.callsPerRow).toBeGreaterThan(0);
      // The files are sqlinbox's own, each counted once, and their calls add up to the total.
      expect(r.byFile).toHaveLength(r.files);
      for (const f of r.byFile) expect(f.file).toMatch(/^packages\/[\w-]+\/dist\/.+\.js$/);
      expect(r.byFile.reduce((sum, f) => sum + f.callsPerRow, 0)).toBeCloseTo(r.callsPerRow, 6);
      expect(r.byFunction[0]?.callsPerRow).toBeGreaterThan(0);
    }
  }, 130_000);

  const out = mkdtempSync(join(tmpdir(), "sqlinbox-bench-smoke-"));

  it("every system processes all its jobs", (ctx) => {
    // Skipped only in a run that leaves an engine out (SQLINBOX_ENGINES): the harness drains every engine, so a partial run cannot check it.
    ctx.skip(leftOutEngines.length > 0, "the harness drains on every engine, and SQLINBOX_ENGINES leaves some out");
    try {
      execFileSync(process.execPath, ["--import", "tsx", "--conditions=@sqlinbox/source", "scripts/bench/main.ts", "--smoke", `--out=${out}`], {
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

  it.runIf(leftOutEngines.length === 0)(
    "server-limit.ts: the stored procedures claim and delete every row on Postgres and MariaDB, in one and two sessions",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "sqlinbox-server-limit-"));
      // The script throws (exit non-zero) when a procedure leaves a row behind.
      execFileSync(
        process.execPath,
        ["--import", "tsx", "--conditions=@sqlinbox/source", "scripts/bench/server-limit.ts", "--n=3000", "--batches=64,500", "--sessions=1,2", `--out=${dir}`],
        {
          cwd: root,
          stdio: "pipe",
          timeout: 110_000,
        },
      );
      const file = JSON.parse(readFileSync(join(dir, "server-limit.json"), "utf8")) as {
        runs: { engine: string; batch: number; sessions: number; n: number; jobsPerSec: number }[];
      };
      expect(file.runs.map((r) => `${r.engine} b${r.batch} s${r.sessions}`)).toEqual([
        "postgres b64 s1",
        "postgres b64 s2",
        "postgres b500 s1",
        "postgres b500 s2",
        "mariadb b64 s1",
        "mariadb b64 s2",
        "mariadb b500 s1",
        "mariadb b500 s2",
      ]);
      for (const r of file.runs) expect(r.jobsPerSec).toBeGreaterThan(0);
    },
    120_000,
  );

  it.runIf(leftOutEngines.length === 0)("no case of any workload is reported unavailable or failed (a statement the dialect refuses shows up here)", () => {
    const file = JSON.parse(readFileSync(join(out, "latest.json"), "utf8")) as { results: Record<string, unknown> };
    const bad: string[] = [];
    for (const [workload, rows] of Object.entries(file.results))
      if (Array.isArray(rows))
        for (const r of rows as { id: string; notAvailable?: string; error?: string }[])
          if (r.notAvailable || r.error) bad.push(`${workload} ${r.id}: ${r.notAvailable ?? r.error}`);
    expect(bad).toEqual([]);
    const drained = (file.results.drain as { system: string }[]).map((r) => r.system);
    expect(new Set(drained)).toEqual(new Set(["sqlinbox", "raw-sql", "graphile-worker", "pg-boss", "bullmq"]));
  });

  it.runIf(leftOutEngines.length === 0)("scale-out: 1 and 2 worker processes drained one table on every engine and form, each id exactly once", () => {
    interface ScaleRun {
      processes: number;
      n: number;
      duplicates: number;
      perProcess: number[];
      jobsPerSec: { median: number };
      db: { samples: number; counters: Record<string, number> };
    }
    const file = JSON.parse(readFileSync(join(out, "latest.json"), "utf8")) as {
      results: { scale?: { id: string; error?: string; notAvailable?: string; runs?: ScaleRun[] }[] };
    };
    const scale = file.results.scale ?? [];
    expect(scale.map((r) => r.id).sort()).toEqual(["scale/mariadb/lease/b64-w8", "scale/mariadb/rowLock/b64-w8", "scale/postgres/lease/b64-w8", "scale/postgres/rowLock/b64-w8"]);
    for (const r of scale) {
      expect({ id: r.id, error: r.error, notAvailable: r.notAvailable }).toEqual({ id: r.id });
      expect(r.runs?.map((run) => run.processes)).toEqual([1, 2]);
      for (const run of r.runs ?? []) {
        expect(run.duplicates).toBe(0);
        expect(run.perProcess).toHaveLength(run.processes);
        expect(run.perProcess.reduce((a, b) => a + b, 0)).toBe(run.n);
        expect(run.jobsPerSec.median).toBeGreaterThan(0);
        // the database side was read: its counters came back (commits on Postgres, fsyncs on MariaDB)
        expect(Object.keys(run.db.counters).length).toBeGreaterThan(3);
      }
    }
  });
});
