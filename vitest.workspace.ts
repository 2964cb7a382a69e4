import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { leftOutEngines, selects } from "./test/support/engine-selection.js";

// The one file that defines the test projects: `npm test` runs `vitest run --config vitest.workspace.ts`.
// Each package and example is a project; sources are resolved through the `@sqlinbox/source`
// export condition, so tests run on `src/` while `npm pack` ships `dist/`.
const conditions = ["@sqlinbox/source"];

// `SQLINBOX_ENGINES` (a comma list of sqlite, postgres, mariadb; all when unset) selects the engines a run
// covers; a name that is not an engine stops the run here (importing the module checks it). A run
// that selects no server (`npm run test:quick`) leaves out every file named *.live.test.ts: each
// needs Postgres or MariaDB for all its tests.
const serverless = !selects("postgres") && !selects("mariadb");
const live = serverless ? ["**/*.live.test.ts"] : [];
// `npm run test:quick` (SQLINBOX_QUICK=1) leaves out the files that pack the packages and install them in fresh
// projects (`pack.test.ts`: npm runs, no engine), which `npm test` runs.
const quick = process.env["SQLINBOX_QUICK"] === "1";
const packing = quick ? ["**/pack.test.ts"] : [];
// The faults and topologies projects restart, fail over and kill servers of both kinds: they run
// only when the run covers every engine.
const everyEngine = leftOutEngines.length === 0;
if (!everyEngine) console.warn(`SQLINBOX_ENGINES=${process.env["SQLINBOX_ENGINES"]}: the faults and topologies projects are left out`);
// Every project's first setup file: a run that leaves engines out says so in each test file.
const engineSelection = fileURLToPath(new URL("./test/support/engine-selection-setup.ts", import.meta.url));
// The runtime's setup file (its projects: runtime, faults, topologies): after each test file, the SQLite files its engines made are removed.
const runtimeSetup = fileURLToPath(new URL("./packages/runtime/test/support/setup.ts", import.meta.url));
// The global setup of the runtime's projects and the broker bridges': their fixture processes bundled with the sources, once per run.
const fixtureBundles = fileURLToPath(new URL("./packages/runtime/test/support/fixture-bundles.ts", import.meta.url));

// The dashboard's tests run on databases of their own (`<database>_dashboard`, made by scripts/services.sh): its
// pages read every paused route and every table of the shared control table, which the runtime's and the CLI's
// tests write while they run. So its files run beside the others.
const ownDatabase = (url: string): string => {
  const own = new URL(url);
  own.pathname = `${own.pathname}_dashboard`;
  return own.toString();
};
const dashboardEnv = {
  SQLINBOX_PG_URL: ownDatabase(process.env["SQLINBOX_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"),
  SQLINBOX_MYSQL_URL: ownDatabase(process.env["SQLINBOX_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306/test"),
};

const project = (
  name: string,
  root: string,
  extra: { testTimeout?: number; fileParallelism?: boolean; exclude?: string[]; setupFiles?: string[]; globalSetup?: string[]; env?: Record<string, string> } = {},
) => ({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    name,
    root,
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    exclude: ["**/node_modules/**", ...live, ...packing, ...(extra.exclude ?? [])],
    testTimeout: extra.testTimeout ?? 30_000,
    hookTimeout: 60_000,
    setupFiles: [engineSelection, ...(extra.setupFiles ?? [])],
    ...(extra.globalSetup === undefined ? {} : { globalSetup: extra.globalSetup }),
    fileParallelism: extra.fileParallelism ?? true,
    ...(extra.env === undefined ? {} : { env: extra.env }),
    // The type tests (`*.test-d.ts`) are not run by vitest's typecheck, which checks one project after another
    // once every other file has run (about two minutes of a whole run): test/type-tests.test.ts checks them all
    // with one `tsc` (scripts/type-tests.mjs), beside the other files.
  },
});

// The benchmark harness, seconds long, for correctness only: every system drains every job. One file,
// run beside the others (its peers keep to schemas and a Redis key prefix of their own).
const benchSmoke = {
  test: { name: "bench-smoke", root: ".", include: ["scripts/bench/smoke.live.test.ts"], setupFiles: [engineSelection], testTimeout: 180_000 },
};

// Outages: sessions killed and the Postgres server restarted, which would break every other
// test's connections, so these run after all other projects, one file at a time.
const faults = {
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    name: "faults",
    root: "packages/runtime",
    include: ["test/faults/**/*.test.ts"],
    setupFiles: [engineSelection, runtimeSetup],
    globalSetup: [fixtureBundles],
    testTimeout: 90_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    sequence: { groupOrder: 1 },
  },
};

// Production topologies (`scripts/services.sh pgbouncer pg-ha galera`): a pooler, a failover, a
// cluster. A failover and a node taken down cut sessions, so these run last, one file at a time.
const topologies = {
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    name: "topologies",
    root: "packages/runtime",
    include: ["test/topologies/**/*.test.ts"],
    setupFiles: [engineSelection, runtimeSetup],
    globalSetup: [fixtureBundles],
    testTimeout: 90_000,
    hookTimeout: 240_000,
    fileParallelism: false,
    sequence: { groupOrder: 2 },
  },
};

// Vitest's own order runs one project's files after another's, by project name, so the runtime's long
// files (last by name) started last and the whole run waited on them. This order keeps each file's
// group (faults, then topologies), and within it runs the files that failed last time first, then the
// others by how long they took last time, longest first, whatever their project. A file vitest has no
// time for (a fresh clone has no cache) takes the time recorded in test/support/file-durations.json,
// written from a whole run by `node scripts/test-durations.mjs`; one not recorded there (under a second,
// or new) counts as taking no time.
const recorded: Readonly<Record<string, number>> = JSON.parse(readFileSync(new URL("./test/support/file-durations.json", import.meta.url), "utf8"));

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const timed = (spec: TestSpecification): { readonly duration: number; readonly failed: boolean } => {
      const key = `${spec.project.name}:${relative(config.root, spec.moduleId)}`;
      return cache.getFileTestResults(key) ?? { duration: recorded[key] ?? 0, failed: false };
    };
    return [...files].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      if (group !== 0) return group;
      const [last, other] = [timed(a), timed(b)];
      if (last.failed !== other.failed) return last.failed ? -1 : 1;
      return other.duration - last.duration;
    });
  }
}

export default defineConfig({
  test: {
    // Test files run side by side: most of their time is spent waiting (on timers, child processes,
    // the servers). On a quiet 2-core machine three at a time took the runtime, dialects, CLI,
    // dashboard, example and repo projects from 10 min 47 s (two at a time) to 7 min 34 s, all
    // passing; four at a time on a machine loaded by other work starved the files that start worker
    // processes until their timings failed. Four at a time on a quiet 2-core machine took a whole run
    // from 1,168 s to 1,082 s; the one failure then, a lock wait bounded to 15 s in a dialect test, was
    // Postgres handing a freed row lock to a claim that skips locked rows before its waiter, which that
    // test now allows. But on a slower 2-core machine (a whole run of 2,207 s at four) four at a time failed
    // four timing-bound tests that three at a time had passed on a quiet machine: three, one more than the cores.
    // `--maxWorkers=1` runs one file at a time (use it, or 2, on a busy machine). The faults and topologies
    // projects (fileParallelism: false) still run alone, after the others.
    maxWorkers: Math.min(4, availableParallelism() + 1),
    sequence: { sequencer: LongestFirst },
    // Beside the usual output, each file's start and end (test/.last-run.json), for where a whole run's time goes
    // (`node scripts/test-durations.mjs --timeline` prints it).
    reporters: ["default", ["json", { outputFile: "test/.last-run.json" }]],
    projects: [
      project("core", "packages/core"),
      project("kysely-dialects", "packages/kysely-dialects"),
      project("database", "packages/database"),
      project("runtime", "packages/runtime", { testTimeout: 60_000, exclude: ["test/faults/**", "test/topologies/**"], setupFiles: [runtimeSetup], globalSetup: [fixtureBundles] }),
      project("cli", "packages/cli", { testTimeout: 120_000 }),
      // The broker bridges run against the local JetStream, Redis, RabbitMQ and Mosquitto (`bash scripts/services.sh` starts them) on every engine.
      project("nats", "packages/nats", { testTimeout: 90_000, setupFiles: [runtimeSetup], globalSetup: [fixtureBundles] }),
      project("redis", "packages/redis", { testTimeout: 90_000, setupFiles: [runtimeSetup], globalSetup: [fixtureBundles] }),
      project("amqp", "packages/amqp", { testTimeout: 90_000, setupFiles: [runtimeSetup], globalSetup: [fixtureBundles] }),
      project("mqtt", "packages/mqtt", { testTimeout: 90_000, setupFiles: [runtimeSetup], globalSetup: [fixtureBundles] }),
      project("dashboard", "packages/dashboard", { testTimeout: 120_000, env: dashboardEnv }),
      project("example-reports", "examples/reports", { testTimeout: 120_000 }),
      {
        test: {
          name: "repo",
          root: ".",
          include: ["test/**/*.test.ts"],
          exclude: ["**/node_modules/**", ...live, ...packing],
          setupFiles: [engineSelection],
          testTimeout: 180_000,
        },
      },
      ...(serverless ? [] : [benchSmoke]),
      ...(everyEngine ? [faults, topologies] : []),
    ],
  },
});
