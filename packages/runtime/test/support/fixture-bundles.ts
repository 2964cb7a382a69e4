/**
 * The fixture processes of the runtime and the broker bridges (`test/support/fixtures/*.ts` of packages/runtime,
 * nats, redis, amqp and mqtt: workers, producers, readers, relays that crash tests SIGKILL), each bundled with the
 * sources it imports into one `.mjs` before the tests start (the global setup of those packages' projects). A process started with `node --import tsx` spent about 0.8 s
 * of wall time and 1.1 s of CPU loading tsx and transforming the sources before its first statement, and the
 * tests start several hundred; a bundle starts in about a third of that. The bundle is made from `src/` (the
 * `@sqlinbox/source` condition, as the tests themselves load it) at every run, so it is never older than the
 * sources; packages from npm stay imports, resolved from the repository's node_modules.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const runtimeRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");
const fixtureDirs = ["runtime", "nats", "redis", "amqp", "mqtt"].map((pkg) => join(runtimeRoot, "..", pkg, "test/support/fixtures"));

/**
 * The bundle of a fixture script: its path from the runtime package (as the runtime's tests give it) or an
 * absolute one. Beside the fixture, in `.bundled/` (git ignores it), so that its npm imports resolve as the fixture's do.
 */
export function fixtureBundle(script: string): string {
  const path = resolve(runtimeRoot, script);
  if (!fixtureDirs.includes(dirname(path)) || !path.endsWith(".ts"))
    throw new Error(`${script} is not a fixture this setup bundles (the .ts files of ${fixtureDirs.map((d) => relative(process.cwd(), d)).join(", ")})`);
  const bundle = join(dirname(path), ".bundled", `${basename(path, ".ts")}.mjs`);
  if (!existsSync(bundle)) throw new Error(`${bundle} does not exist: the test project runs without the global setup packages/runtime/test/support/fixture-bundles.ts`);
  return bundle;
}

/** Where the run's one build waits: on `globalThis`, which every project's copy of this module shares in vitest's process. */
const built = Symbol.for("sqlinbox.fixtureBundles");

/**
 * Vitest's global setup: bundles every fixture, once per vitest process. Seven projects name this setup and vitest
 * runs it for each (a copy of this module each), so the first starts the build and the others wait for it.
 */
export default async function setup(): Promise<void> {
  const shared = globalThis as { [built]?: Promise<void> };
  shared[built] ??= Promise.all(fixtureDirs.map((dir) => bundleAll(dir))).then(() => undefined);
  await shared[built];
}

async function bundleAll(fixtures: string): Promise<void> {
  const bundles = join(fixtures, ".bundled");
  const scripts = readdirSync(fixtures).filter((file) => file.endsWith(".ts"));
  const staging = join(bundles, `.staging-${process.pid}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(staging, { recursive: true });
  try {
    await build({
      entryPoints: scripts.map((file) => join(fixtures, file)),
      outdir: staging,
      outExtension: { ".js": ".mjs" },
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      conditions: ["@sqlinbox/source"],
      logLevel: "error",
      // A CommonJS package imported by a bundled module is loaded through `require`, which ESM lacks.
      banner: { js: 'import { createRequire as __sqlinboxRequire } from "node:module"; const require = __sqlinboxRequire(import.meta.url);' },
      plugins: [
        {
          name: "npm-packages-stay-imports",
          setup(b) {
            b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@sqlinbox/") ? undefined : { external: true }));
          },
        },
      ],
    });
    for (const file of readdirSync(staging)) renameSync(join(staging, file), join(bundles, file));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
