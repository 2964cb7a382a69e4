/**
 * The hot path's size: how many of sqlinbox's own functions a delivery calls, and in how many files, per acked row.
 * An in-memory SQLite app (`SqlBroker.fromKysely` on better-sqlite3 `:memory:`) drains `warm + rows` pre-inserted
 * rows under V8's precise coverage (`Profiler.startPreciseCoverage({ callCount: true, detailed: true })`).
 * Coverage is taken (which resets V8's counters) when the handler sees row `warm` — everything before it, the
 * app's start-up and the first claims included, is discarded — and again at row `warm + rows`: that window's
 * calls into functions of `packages/<package>/dist/`, divided by `rows`, are the calls per acked row. Rows in
 * flight at each end (a claim's worth) cancel out in a steady drain. Only sqlinbox's built JavaScript counts
 * (`dist/`, what an app installs and `npm run bench` measures; `npm run bench:hot-path` builds it first), never
 * Kysely, the driver or the bench's own handler.
 *
 *   npm run bench:hot-path                                     # every form, 2,000 rows warm-up, 5,000 measured
 *   npm run bench:hot-path -- --forms=lease --top=25           # with the 25 functions called most per row
 *   npm run bench:hot-path -- --forms=lease --files            # with every file entered and its calls per row
 *   npx tsx scripts/bench/hot-path.ts --warm=100 --rows=200 --json   # small, machine-readable (its test)
 *
 * Forms (SQLite runs lease and advisory): `lease`, `advisory`, `lease-batch` (the lease form with a batch handler).
 */
import { Session } from "node:inspector";
import { readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import type { AnyDb } from "./db.js";
import { fileURLToPath } from "node:url";

interface FunctionCoverage {
  readonly functionName: string;
  readonly ranges: readonly { readonly startOffset: number; readonly endOffset: number; readonly count: number }[];
}
interface ScriptCoverage {
  readonly url: string;
  readonly functions: readonly FunctionCoverage[];
}

const FORMS = ["lease", "advisory", "lease-batch"] as const;
type HotPathForm = (typeof FORMS)[number];

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v = "true"] = a.replace(/^--/, "").split("=");
    return [k as string, v];
  }),
);
const known = new Set(["forms", "warm", "rows", "batch", "workers", "top", "files", "json"]);
for (const k of args.keys()) if (!known.has(k)) throw new Error(`unknown flag --${k} (flags: ${[...known].map((f) => `--${f}`).join(", ")})`);
const forms = (args.get("forms") ?? FORMS.join(",")).split(",") as HotPathForm[];
for (const f of forms) if (!FORMS.includes(f)) throw new Error(`--forms: ${f} is none of ${FORMS.join(", ")}`);
const warm = Number(args.get("warm") ?? 2_000);
const rows = Number(args.get("rows") ?? 5_000);
const batch = Number(args.get("batch") ?? 64);
const workers = Number(args.get("workers") ?? 8);
const top = Number(args.get("top") ?? 0);
const json = args.get("json") === "true";
/** Lists every file entered with its calls per row (a file entered once in the window counts as much as one entered each row). */
const listFiles = args.get("files") === "true";
for (const [name, value] of Object.entries({ warm, rows, batch, workers })) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number ≥ 1, got ${value}`);
}

// Optimized code may run a getter inlined without counting its call (a drain's count moved by 20% from run to run):
// the interpreter and the baseline compiler count every call, so the optimizing tiers are off (set before any code of
// the drain is compiled). Counts do not depend on speed.
setFlagsFromString("--no-opt");
setFlagsFromString("--no-maglev");
// Coverage starts before any sqlinbox module loads, so every function of theirs counts from its first call.
const session = new Session();
session.connect();
/** `post` on the inspector of this thread answers synchronously: a handler can take coverage between two rows. */
function post<T>(method: string, params?: object): T {
  let answer: { error: Error | null; result: T } | undefined;
  session.post(method, params ?? {}, (error, result) => (answer = { error, result: result as T }));
  if (answer === undefined) throw new Error(`the inspector did not answer ${method} synchronously`);
  if (answer.error !== null) throw answer.error;
  return answer.result;
}
post("Profiler.enable");
post("Profiler.startPreciseCoverage", { callCount: true, detailed: true });

const db = await import("./db.js");
const { buildApp, loadRuntime, startApp } = await import("./systems/sqlinbox.js");
const { JobTracker, waitUntilEmpty } = await import("./jobs.js");
const { Kysely, SqliteDialect } = await import("kysely");
const { default: BetterSqlite3 } = await import("better-sqlite3");

/** Which of sqlinbox's code the window ran: its built JavaScript, or its TypeScript sources (`--conditions=@sqlinbox/source`). */
const codeSeen = new Set<"dist" | "src">();

/** A sqlinbox source file's place in the repository (`packages/runtime/dist/consume/subscription.js`), or `undefined`. */
function ownFile(url: string): string | undefined {
  const match = /\/(packages\/[^/]+\/(?:dist\/.+\.js|src\/.+\.ts))$/.exec(url);
  return match === null || url.includes("/node_modules/.") ? undefined : match[1];
}

/** The 1-based line of `offset` in `url`'s text (read once per file). */
const lineStarts = new Map<string, number[]>();
function lineOf(url: string, offset: number): number {
  let starts = lineStarts.get(url);
  if (starts === undefined) {
    const text = readFileSync(fileURLToPath(url), "utf8");
    starts = [0];
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
    lineStarts.set(url, starts);
  }
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] as number) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

export interface HotPathResult {
  readonly form: HotPathForm;
  readonly rows: number;
  /** sqlinbox files with at least one function called in the window. */
  readonly files: number;
  /** Calls into sqlinbox functions in the window, divided by its rows. */
  readonly callsPerRow: number;
  readonly byFile: readonly { readonly file: string; readonly callsPerRow: number }[];
  readonly byFunction: readonly { readonly fn: string; readonly callsPerRow: number }[];
}

/** What one coverage window holds of sqlinbox's own functions. */
function summarize(form: HotPathForm, coverage: readonly ScriptCoverage[], measured: number): HotPathResult {
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let calls = 0;
  for (const script of coverage) {
    const file = ownFile(script.url);
    if (file === undefined) continue;
    codeSeen.add(file.includes("/dist/") ? "dist" : "src");
    for (const fn of script.functions) {
      const whole = fn.ranges[0];
      // The module's own top level is not a call of the hot path.
      if (whole === undefined || whole.count === 0 || (fn.functionName === "" && whole.startOffset === 0)) continue;
      calls += whole.count;
      byFile.set(file, (byFile.get(file) ?? 0) + whole.count);
      const key = `${file.replace(/^packages\//, "")}:${lineOf(script.url, whole.startOffset)} ${fn.functionName || "(anonymous)"}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + whole.count);
    }
  }
  const perRow = (entries: Map<string, number>) => [...entries].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, v / measured] as const);
  return {
    form,
    rows: measured,
    files: byFile.size,
    callsPerRow: calls / measured,
    byFile: perRow(byFile).map(([file, callsPerRow]) => ({ file, callsPerRow })),
    byFunction: perRow(byFunction).map(([fn, callsPerRow]) => ({ fn, callsPerRow })),
  };
}

/** Drains `warm + rows` rows of one form on a fresh in-memory database; the window is the last `rows` handler calls. */
async function measure(form: HotPathForm): Promise<HotPathResult> {
  const rt = await loadRuntime();
  if (typeof rt === "string") throw new Error(rt);
  const tableForm = form === "lease-batch" ? "lease" : form;
  const kysely: AnyDb = new Kysely({ dialect: new SqliteDialect({ database: new BetterSqlite3(":memory:") }) });
  await db.recreateTable(kysely, "sqlite", tableForm);
  await db.insertJobs(kysely, tableForm, warm + rows);
  await db.analyzeTable(kysely, "sqlite", db.tableOf(tableForm));
  const total = warm + rows;
  const tracker = new JobTracker(total);
  let window: readonly ScriptCoverage[] | undefined;
  const handler = (payload: unknown) => {
    tracker.handle(payload);
    // The first take discards start-up and the warm-up; the second is the window.
    if (tracker.count === warm) post("Profiler.takePreciseCoverage");
    else if (tracker.count === total) window = post<{ result: ScriptCoverage[] }>("Profiler.takePreciseCoverage").result;
  };
  const { app } = buildApp(rt, {
    engine: "sqlite",
    form: tableForm,
    batch,
    workers,
    kysely,
    handler,
    handlerShape: form === "lease-batch" ? "batch" : "row",
    // Work done once per interval, not per row (the control table's read each poll interval, the lease keeper's
    // extensions at half the 30 s lease): a 60 s poll interval keeps all of it out of a window of a few seconds.
    // The drain never waits for a poll: a claim that comes back full claims again at once.
    pollMs: 60_000,
  });
  const running = await startApp(app);
  try {
    await tracker.done;
    await waitUntilEmpty(() => db.countRows(kysely, tableForm), 60_000, 1);
  } finally {
    await running.stop();
    await kysely.destroy();
  }
  if (window === undefined) throw new Error(`${form}: the window's coverage was never taken`);
  if (tracker.duplicates > 0) throw new Error(`${form}: ${tracker.duplicates} rows delivered twice`);
  return summarize(form, window, rows);
}

const results: HotPathResult[] = [];
for (const form of forms) results.push(await measure(form));
post("Profiler.stopPreciseCoverage");
session.disconnect();

if (json) {
  console.log(JSON.stringify({ warm, rows, batch, workers, code: [...codeSeen].join("+"), results: results.map((r) => ({ ...r, byFunction: r.byFunction.slice(0, top || 20) })) }));
} else {
  const code = [...codeSeen].map((c) => (c === "dist" ? "packages/*/dist (built JavaScript)" : "packages/*/src (TypeScript sources)")).join(" and ");
  console.log(`sqlinbox hot path on in-memory SQLite: b${batch}-w${workers}, ${warm} rows warm-up, ${rows} rows measured; ${code}`);
  console.log("form          files  calls/row");
  for (const r of results) console.log(`${r.form.padEnd(12)}  ${String(r.files).padStart(5)}  ${r.callsPerRow.toFixed(1).padStart(9)}`);
  for (const r of results) {
    if (top > 0) {
      console.log(`\n${r.form}: the ${top} functions called most per row`);
      for (const f of r.byFunction.slice(0, top)) console.log(`${f.callsPerRow.toFixed(2).padStart(7)}  ${f.fn}`);
    }
    if (top > 0 || listFiles) {
      console.log(`\n${r.form}: the ${r.files} files entered, calls per row (0.00: entered fewer than once per 200 rows)`);
      for (const f of r.byFile) console.log(`${f.callsPerRow.toFixed(2).padStart(7)}  ${f.file}`);
    }
  }
}
