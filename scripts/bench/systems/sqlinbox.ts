import { analyzeTable, connect, countRows, insertJobs, recreateTable, tableOf, urlOf, type AnyDb, type FormName } from "../db.js";
import { sleep, waitUntilEmpty, type JobTracker } from "../jobs.js";
import type { DrainCase, EngineName } from "../types.js";
import { benchSpec } from "./raw-sql.js";

/**
 * The slice of @sqlinbox/runtime's public API the bench uses, loaded at run time so that the
 * harness runs (and says "not available") while the runtime is still being written.
 */
// biome-ignore lint/suspicious/noExplicitAny: loaded at run time and driven across every form and engine from one loop; the typed builders would need each as a literal type
export type Runtime = Record<string, any>;

let runtime: Runtime | string | undefined;

export async function loadRuntime(): Promise<Runtime | string> {
  if (runtime !== undefined) return runtime;
  try {
    const mod = (await import("@sqlinbox/runtime")) as Runtime;
    const missing = ["SqlBroker", "InboxQueue", "subscriber", "App"].filter((k) => mod[k] === undefined);
    runtime = missing.length ? `@sqlinbox/runtime does not export ${missing.join(", ")} yet` : mod;
  } catch (e) {
    runtime = `@sqlinbox/runtime does not load: ${(e as Error).message.split("\n")[0]}`;
  }
  return runtime;
}

export interface RunningApp {
  stop(): Promise<void>;
}

/** Starts an App (`app.start()` → a running app with `stop()`). */
export async function startApp(app: Runtime): Promise<RunningApp> {
  const running = await app.start();
  return { stop: () => running.stop() };
}

export interface SqlinboxAppOptions {
  readonly engine: EngineName;
  readonly form: FormName;
  readonly batch: number;
  readonly workers: number;
  readonly leaseMs?: number;
  readonly pollMs?: number;
  /** Without a handler the app only routes (publishes), it subscribes nothing. */
  readonly handler?: (payload: unknown) => unknown;
  readonly listenNotify?: boolean;
  /** Wrap an existing Kysely instance (to count statements) instead of `SqlBroker.fromUrl`. */
  readonly kysely?: AnyDb;
  /** `batch`: one batch handler (`subscriber.batch`); `shared`: per-row handlers whose claim shares one transaction (`.sharedTransaction()`). */
  readonly handlerShape?: HandlerShape;
  /** `false`: the app never loads `@opentelemetry/api` (the same no-op as when it is not installed). */
  readonly telemetry?: boolean;
}

/** How the bench's handler takes its rows: one at a time, a whole claim at once, or one at a time in a shared transaction. */
export type HandlerShape = "row" | "batch" | "shared";

/** Builds the bench's App: one subscription on the form's table, through the public API only. */
export function buildApp(rt: Runtime, o: SqlinboxAppOptions): { app: Runtime; broker: Runtime } {
  const spec = benchSpec(o.form);
  let broker = o.kysely ? rt.SqlBroker.fromKysely(o.kysely) : rt.SqlBroker.fromUrl(urlOf(o.engine), { pool: { max: o.workers + 4 } });
  if (o.listenNotify && typeof broker.listenNotify === "function") broker = broker.listenNotify();
  let queue = rt.InboxQueue.of(spec, "bench").workers(o.workers).batch(o.batch);
  if (o.form === "lease" && o.leaseMs !== undefined) queue = queue.lease(o.leaseMs);
  if (o.pollMs !== undefined) queue = queue.pollInterval(o.pollMs);
  if (o.handlerShape === "shared") queue = queue.sharedTransaction();
  const handler = o.handler;
  // Returns what the handler returns (a promise only when it is async), as the raw loop calls it directly.
  const sub =
    handler &&
    (o.handlerShape === "batch"
      ? rt.subscriber.batch(queue, async (payloads: readonly unknown[]) => {
          for (const payload of payloads) {
            const result = handler(payload);
            if (result instanceof Promise) await result;
          }
        })
      : rt.subscriber(queue, (payload: unknown) => {
          const result = handler(payload);
          return result instanceof Promise ? result.then(() => undefined) : undefined;
        }));
  const app = new rt.App({
    name: "sqlinbox-bench",
    version: "0.0.0",
    logger: rt.silentLogger,
    shutdownGrace: 5_000,
    ...(o.telemetry === false ? { telemetry: false } : {}),
  }).withBroker(broker.route(spec, "bench"), (b: Runtime) => (sub ? b.include(sub) : b));
  return { app, broker };
}

/** W1 drain with sqlinbox: an App with one subscription, `workers(w).batch(b)`, a handler that decodes and acks. */
export function sqlinboxDrainCase(
  engine: EngineName,
  form: FormName,
  batch: number,
  workers: number,
  handlerShape: HandlerShape = "row",
  app: { readonly telemetry?: boolean; readonly prepared?: boolean } = {},
): DrainCase {
  // As `SqlBroker.fromUrl` does by default on Postgres: named prepared statements; `prepared: false` for the comparison.
  // On MariaDB, `prepared: true` tries mysql2's `execute` (server-side prepared statements), which a broker does not use.
  const prepared = engine === "postgres" ? app.prepared !== false : app.prepared === true;
  const unnamed = engine === "postgres" && !prepared ? "-unnamed" : engine === "mariadb" && prepared ? "-executed" : "";
  let db: AnyDb | undefined;
  let rt: Runtime | undefined;
  return {
    id: `sqlinbox/${engine}/${form}/b${batch}-w${workers}${handlerShape === "row" ? "" : `-${handlerShape}`}${unnamed}`,
    system: "sqlinbox",
    engine,
    variant: form,
    settings: { batch, workers, leaseMs: form === "lease" ? 30_000 : undefined, ...(handlerShape === "row" ? {} : { handlerShape }) },
    async check() {
      if (engine === "sqlite" && form === "rowLock") return "SQLite has no row locks";
      const r = await loadRuntime();
      if (typeof r === "string") return r;
      rt = r;
      return null;
    },
    async setup() {
      db = connect(engine, 2);
    },
    async reset() {
      await recreateTable(db!, engine, form);
    },
    async insert(n) {
      await insertJobs(db!, form, n);
    },
    async analyze() {
      await analyzeTable(db!, engine, tableOf(form));
    },
    async drain(tracker: JobTracker) {
      // The broker runs on a Kysely of the same pool size as `fromUrl` would build, which counts its statements.
      let statements = 0;
      const kysely = connect(engine, workers + 4, () => void statements++, { prepared });
      const { app: built } = buildApp(rt!, {
        engine,
        form,
        batch,
        workers,
        kysely,
        handlerShape,
        handler: (p) => tracker.handle(p),
        ...(app.telemetry === undefined ? {} : { telemetry: app.telemetry }),
      });
      const running = await startApp(built);
      try {
        await tracker.done;
        await waitUntilEmpty(() => countRows(db!, form), 60_000, 1);
      } finally {
        await running.stop();
        await kysely.destroy();
      }
      return { processed: tracker.count, statements };
    },
    async teardown() {
      await sleep(0);
      await db?.destroy();
    },
  };
}
