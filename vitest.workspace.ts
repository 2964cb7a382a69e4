import { defineConfig } from "vitest/config";

// The one file that defines the test projects: `npm test` runs `vitest run --config vitest.workspace.ts`.
// Each package and example is a project; sources are resolved through the `@sqlinbox/source`
// export condition, so tests run on `src/` while `npm pack` ships `dist/`.
const conditions = ["@sqlinbox/source"];

const project = (name: string, root: string, extra: { testTimeout?: number; fileParallelism?: boolean; exclude?: string[] } = {}) => ({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    name,
    root,
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    exclude: ["**/node_modules/**", ...(extra.exclude ?? [])],
    testTimeout: extra.testTimeout ?? 30_000,
    hookTimeout: 60_000,
    fileParallelism: extra.fileParallelism ?? true,
    typecheck: {
      enabled: true,
      include: ["src/**/*.test-d.ts", "test/**/*.test-d.ts"],
      tsconfig: "tsconfig.test.json",
    },
  },
});

export default defineConfig({
  test: {
    projects: [
      project("core", "packages/core"),
      project("kysely-dialects", "packages/kysely-dialects"),
      project("runtime", "packages/runtime", { testTimeout: 60_000, exclude: ["test/faults/**", "test/topologies/**"] }),
      project("cli", "packages/cli", { testTimeout: 120_000 }),
      project("dashboard", "packages/dashboard", { testTimeout: 120_000, fileParallelism: false }),
      project("example-reports", "examples/reports", { testTimeout: 120_000 }),
      { test: { name: "repo", root: ".", include: ["test/**/*.test.ts"], testTimeout: 180_000 } },
      // The benchmark harness, seconds long, for correctness only: every system drains every job.
      { test: { name: "bench-smoke", root: ".", include: ["scripts/bench/smoke.test.ts"], testTimeout: 180_000, fileParallelism: false } },
      // Outages: sessions killed and the Postgres server restarted, which would break every other
      // test's connections, so these run after all other projects, one file at a time.
      {
        resolve: { conditions },
        ssr: { resolve: { conditions } },
        test: {
          name: "faults",
          root: "packages/runtime",
          include: ["test/faults/**/*.test.ts"],
          testTimeout: 90_000,
          hookTimeout: 60_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      // Production topologies (`scripts/services.sh pgbouncer pg-ha galera`): a pooler, a failover, a
      // cluster. A failover and a node taken down cut sessions, so these run last, one file at a time.
      {
        resolve: { conditions },
        ssr: { resolve: { conditions } },
        test: {
          name: "topologies",
          root: "packages/runtime",
          include: ["test/topologies/**/*.test.ts"],
          testTimeout: 90_000,
          hookTimeout: 240_000,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
