/**
 * Retention's cost to claims: the same drain of a processedAt table by several apps (each its own pool, as processes
 * would have), without a retention window and with `retain({ done })`, in interleaved rounds; the pruners delete the
 * handled rows while the claims run. Prints jobs/s for each, their ratio, the machine's load, and checks that with the
 * window every handled row is gone within two prune intervals of the last one leaving it. Not part of `npm test`.
 *
 *   npm run bench:retention -- [--engines=postgres,mariadb,sqlite] [--rows=20000] [--apps=3] [--window-ms=1000] [--rounds=3]
 *
 * Each app runs `workers(4).batch(64)` with a no-op handler on a lease table with a processedAt column (`createInboxTable`,
 * so the retention index is there in both modes). Writes bench-results/retention-<time>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { defineInbox, field } from "@sqlinbox/core";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, silentLogger, subscriber } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { connect, urlOf, type AnyDb } from "./db.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const engines = (flag("engines") ?? "postgres").split(",").filter(Boolean) as EngineName[];
const rows = Number(flag("rows") ?? 20_000);
const appCount = Number(flag("apps") ?? 3);
const windowMs = Number(flag("window-ms") ?? 1000);
const rounds = Number(flag("rounds") ?? 3);
const TABLE = "bench_retention";
const log = (m: string) => process.stderr.write(`${m}\n`);

const spec = defineInbox({
  table: TABLE,
  columns: {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    locked_until: field.lease(),
    processed_at: field.processedAt(),
    payload: field.payload<{ n: number }>(),
  },
});

async function countRows(db: AnyDb): Promise<number> {
  const { rows: r } = await sql<{ n: unknown }>`select count(*) as n from ${sql.table(TABLE)}`.execute(db);
  return Number(r[0]?.n);
}

interface Run {
  readonly engine: EngineName;
  readonly mode: "without" | "with";
  readonly round: number;
  readonly jobsPerSec: number;
  readonly seconds: number;
  readonly left: number;
  readonly load1: number;
  readonly emptyAfterMs?: number;
}

async function drain(engine: EngineName, mode: Run["mode"], round: number): Promise<Run> {
  const url = urlOf(engine);
  const db = connect(engine, 2);
  await sql`drop table if exists ${sql.table(TABLE)}`.execute(db);
  await createInboxTable(db, spec);
  const publisher = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(spec, "jobs");
  for (let i = 0; i < rows; i += 2000)
    await publisher.publishMany(
      "jobs",
      Array.from({ length: Math.min(2000, rows - i) }, (_, k) => ({ n: i + k })),
    );
  await publisher.close();
  if (engine === "postgres") await sql`analyze ${sql.table(TABLE)}`.execute(db);
  let handled = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const queue = InboxQueue.of(spec, "jobs").workers(4).batch(64).pollInterval(100);
  const sub = subscriber(mode === "with" ? queue.retain({ done: windowMs }) : queue, async () => {
    if (++handled === rows) done();
    return HandlerOutcome.ack();
  });
  const started = performance.now();
  const apps = [];
  for (let a = 0; a < appCount; a++) {
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs");
    apps.push(await new App({ name: `retention-${a}`, version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start());
  }
  await finished;
  const seconds = (performance.now() - started) / 1000;
  const load1 = loadavg()[0] ?? 0;
  const left = await countRows(db);
  let emptyAfterMs: number | undefined;
  if (mode === "with") {
    const since = performance.now();
    while ((await countRows(db)) > 0 && performance.now() - since < windowMs + 10_000) await new Promise((r) => setTimeout(r, 50));
    emptyAfterMs = Math.round(performance.now() - since);
  }
  for (const app of apps) await app.stop();
  await sql`drop table if exists ${sql.table(TABLE)}`.execute(db);
  await db.destroy();
  return {
    engine,
    mode,
    round,
    jobsPerSec: Math.round(rows / seconds),
    seconds: Number(seconds.toFixed(2)),
    left,
    load1: Number(load1.toFixed(2)),
    ...(emptyAfterMs !== undefined ? { emptyAfterMs } : {}),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return Math.round(s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2);
};

const runs: Run[] = [];
for (const engine of engines) {
  for (let round = 1; round <= rounds; round++) {
    // Interleaved, and the order swapped each round, so a drift of the machine's load falls on both modes.
    const order: Run["mode"][] = round % 2 === 1 ? ["without", "with"] : ["with", "without"];
    for (const mode of order) {
      const run = await drain(engine, mode, round);
      runs.push(run);
      log(JSON.stringify(run));
    }
  }
}
const lines = [
  "| engine | without (jobs/s, median) | with retain (jobs/s, median) | with / without | rows left at the drain's end (with) | empty after (ms, with) |",
  "|---|---|---|---|---|---|",
];
for (const engine of engines) {
  const of = (mode: Run["mode"]) => runs.filter((r) => r.engine === engine && r.mode === mode);
  const without = median(of("without").map((r) => r.jobsPerSec));
  const withRetain = median(of("with").map((r) => r.jobsPerSec));
  lines.push(
    `| ${engine} | ${without} | ${withRetain} | ${(withRetain / without).toFixed(3)} | ${of("with")
      .map((r) => r.left)
      .join(", ")} | ${of("with")
      .map((r) => r.emptyAfterMs)
      .join(", ")} |`,
  );
}
process.stdout.write(`${rows} rows, ${appCount} apps, window ${windowMs} ms, ${rounds} rounds, ${cpus().length} cores\n${lines.join("\n")}\n`);
mkdirSync("bench-results", { recursive: true });
writeFileSync(
  join("bench-results", `retention-${new Date().toISOString().replace(/[:.]/g, "-")}.json`),
  `${JSON.stringify({ rows, appCount, windowMs, rounds, runs }, null, 2)}\n`,
);
