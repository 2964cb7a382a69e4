import type { KnipConfig } from "knip";

// Unused files, dependencies and exports, run by `npm run lint` twice:
// - `knip`: tests count as users. An export nothing imports, or that only its own file uses, fails the lint:
//   drop the `export` (or the code).
// - `knip --production`: only the packages' sources (the `!` patterns) and their package entries (`exports`,
//   `bin`) count. What is left is exported for tests alone; each file allowed to do that is listed below
//   with its reason. Public API is whatever a package's `exports` map names (root, `./internal`,
//   `./operator`, `./testing`): knip reads those entries from each package.json.
const production = process.argv.includes("--production");

/** Files whose exports only their tests import, and why the tests import them directly. */
const exportedForTests: Record<string, string> = {
  // Pure policy, table-tested without a database (how many claims ahead, the backoff ceiling, a route's
  // prefix, the due-time cap, which subscription a control row names, a batch's outcomes per row).
  "packages/runtime/src/consume/claim-pacer.ts": "the pacer's bounds and claimsToCover, table-tested",
  "packages/runtime/src/consume/due-times.ts": "MAX_DUE_TIMES, the cap a test fills",
  "packages/runtime/src/consume/batch-delivery.ts": "batchOutcomes, table-tested",
  "packages/runtime/src/declare/failure-policy.ts": "backoffCeiling, table-tested",
  "packages/runtime/src/publish/route-match.ts": "isPrefixRoute, table-tested",
  "packages/runtime/src/control/control-watch.ts": "namesSubscription, table-tested",
  "packages/runtime/src/publish/after-commit.ts": "transactionState, read by the wake-after-commit test",
  // The outcome-to-step table: its compile-time tests (settlement.test-d.ts) name the table's types.
  "packages/runtime/src/claim/settlement.ts": "OUTCOME_STEPS, stepOf and the step types, for the exhaustiveness tests",
  // Each engine's statement set, compared side by side in statement-shapes.test.ts.
  "packages/kysely-dialects/src/postgres/engine.ts": "the engine value, for the statement-shape test",
  "packages/kysely-dialects/src/mysql/engine.ts": "the engine value, for the statement-shape test",
  "packages/kysely-dialects/src/sqlite/engine.ts": "the engine value, for the statement-shape test",
  "packages/kysely-dialects/src/statements/held-leases.ts": "tokenGroups, table-tested",
  "packages/kysely-dialects/src/shared/no-statement.ts": "isNoStatement, how the snapshot renderers tell a refused statement from a failure",
  "packages/runtime/src/claim/held/candidate-window.ts": "CANDIDATE_WINDOW_MS, the freshness a unit test steps across",
  "packages/runtime/src/schedule/pruner.ts": "pruneInterval, the interval the retention test counts its deadlines in",
};

const config: KnipConfig = {
  workspaces: {
    ".": {
      entry: ["scripts/*.ts", "test/**/*.test.ts"],
      project: ["scripts/*.ts", "test/**/*.ts"],
    },
    "scripts/bench": {
      entry: ["*.ts"],
      project: ["**/*.{ts,mjs}"],
      // The OpenTelemetry SDK the otel workload registers: the runtime's devDependencies, from the root install.
      // @nats-io/*, amqplib, mqtt: the broker clients relay-throughput.ts drives, the broker packages' peers from the root install.
      ignoreDependencies: ["@opentelemetry/sdk-trace-base", "@opentelemetry/sdk-metrics", "@nats-io/jetstream", "@nats-io/transport-node", "amqplib", "mqtt"],
    },
    "packages/*": {
      // Fixtures are scripts the tests start as child processes, by path.
      entry: ["test/**/*.test.ts", "test/support/fixtures/**/*.{ts,mjs}"],
      project: ["src/**/*.ts!", "test/**/*.{ts,mjs}"],
    },
    "packages/dashboard": {
      entry: ["test/**/*.test.ts", "assets/app.js!", "assets/jobs.js!", "assets/jobs-bulk.js!"],
      project: ["src/**/*.ts!", "test/**/*.ts", "assets/*.js!"],
      // Served as files: src/assets.ts resolves `uplot/dist/…` by path, which no import names.
      ignoreDependencies: ["uplot"],
    },
    "examples/*": {
      entry: ["test/**/*.test.ts"],
      project: ["src/**/*.ts", "test/**/*.ts"],
    },
  },
  // The fixtures bundled for a test run (packages/runtime/test/support/fixture-bundles.ts): generated, not sources.
  ignore: ["packages/*/test/support/fixtures/.bundled/**"],
  // The drivers are optional peers, imported only when a URL of their scheme starts: that is the design.
  rules: { optionalPeerDependencies: "off" },
  ...(production ? { ignoreIssues: Object.fromEntries(Object.keys(exportedForTests).map((file) => [file, ["exports", "types"]])) } : {}),
};

export default config;
