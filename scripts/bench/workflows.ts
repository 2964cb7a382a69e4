/**
 * Workflows per second, in one process on one engine and form: `--chains` runs of a 3-step chain (a → b → c), then
 * `--fanouts` runs of a fan-out of 100 and its fan-in (split → 100 parts → merge). Each run is started
 * (`broker.startWorkflow`) before the app starts, so the time measured is the drain of the started runs: from the
 * app's start until the last step of every run has been acked. Handlers do no work but return a result. Statements are
 * counted by Kysely (every query the broker and the app send, the polls of idle subscriptions included) and
 * given per run started and per step run. Not part of `npm test`.
 *
 *   npx tsx scripts/bench/workflows.ts [--engines=postgres,mariadb,sqlite] [--form=lease|rowLock|advisory] [--chains=1000] [--fanouts=20] [--workers=8] [--by-statement]
 *
 * `--by-statement` also prints, per drain, each statement's first words and its count per step.
 */
import { loadavg } from "node:os";
import { column, InboxSpec, payloadOf, resultOf, workflow } from "@sqlinbox/core";
import { App, createInboxTable, createWorkflowTable, InboxQueue, SqlBroker, silentLogger, subscriber } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { connect } from "./db.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const engines = (flag("engines") ?? "postgres,mariadb,sqlite").split(",").filter(Boolean) as EngineName[];
const form = (flag("form") ?? "lease") as "lease" | "rowLock" | "advisory";
const chains = Number(flag("chains") ?? 1000);
const fanouts = Number(flag("fanouts") ?? 20);
const workers = Number(flag("workers") ?? 8);
const FAN = 100;

/** A step table in the form, with a processedAt and a result column. */
function stepTable<P, R>(table: string) {
  const base = InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .processedAt(column("processed_at"))
    .result(column("result"), resultOf<R>())
    .payload(column("payload"), payloadOf<P>());
  if (form === "lease") return base.lease(column("locked_until")) as unknown as typeof base;
  if (form === "advisory") return base.advisoryLock("wf-{id}") as unknown as typeof base;
  return base;
}

const A = stepTable<{ n: number }, number>("bench_wf_a");
const B = stepTable<{ n: number }, number>("bench_wf_b");
const C = stepTable<{ n: number }, number>("bench_wf_c");
const Split = stepTable<{ n: number }, number[]>("bench_wf_split");
const Part = stepTable<{ n: number }, number>("bench_wf_part");
const Merge = stepTable<{ parts: number }, number>("bench_wf_merge");
const Chain = workflow("bench_chain", payloadOf<{ n: number }>())
  .step("a", A, (input) => input)
  .step("b", B, { after: ["a"] }, (_, { a }) => ({ n: a ?? 0 }))
  .step("c", C, { after: ["b"] }, (_, { b }) => ({ n: b ?? 0 }));
const Fan = workflow("bench_fan", payloadOf<{ n: number }>())
  .step("split", Split, (input) => input)
  .each("part", Part, { over: "split" }, (_, n) => ({ n }))
  .step("merge", Merge, { after: ["part"] }, (_, { part }) => ({ parts: part.length }));
const TABLES = [A, B, C, Split, Part, Merge];

async function measure(engine: EngineName, which: "chain" | "fan"): Promise<{ runs: number; steps: number; seconds: number; startStatements: number; drainStatements: number }> {
  let statements = 0;
  const kinds = new Map<string, number>();
  const db = connect(engine, workers * 6 + 8, (event) => {
    statements++;
    if (!argv.includes("--by-statement")) return;
    const words = event.query.sql.replace(/\s+/g, " ").slice(0, 90);
    kinds.set(words, (kinds.get(words) ?? 0) + 1);
  });
  try {
    await sql`drop table if exists sqlinbox_workflows`.execute(db);
    await createWorkflowTable(db);
    for (const t of TABLES) {
      await sql`drop table if exists ${sql.id(t.table)}`.execute(db);
      await createInboxTable(db, t);
    }
    const broker = SqlBroker.fromKysely(db)
      .lease(30_000)
      .route(A, "a")
      .route(B, "b")
      .route(C, "c")
      .route(Split, "split")
      .route(Part, "part")
      .route(Merge, "merge")
      .workflow(Chain)
      .workflow(Fan);
    const runs = which === "chain" ? chains : fanouts;
    statements = 0;
    for (let n = 0; n < runs; n++) {
      if (which === "chain") await broker.startWorkflow(Chain, { n });
      else await broker.startWorkflow(Fan, { n });
    }
    const startStatements = statements;
    const queue = <S extends (typeof TABLES)[number]>(spec: S, route: string) => InboxQueue.of(spec, route).pollInterval(20).workers(workers).batch(8);
    const last = which === "chain" ? C : Merge;
    statements = 0;
    kinds.clear();
    const started = performance.now();
    const app = await new App({ name: "bench-workflows", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(subscriber(queue(A, "a"), async (job, ctx) => ctx.ack(job.n + 1)))
          .include(subscriber(queue(B, "b"), async (job, ctx) => ctx.ack(job.n + 1)))
          .include(subscriber(queue(C, "c"), async (job, ctx) => ctx.ack(job.n + 1)))
          .include(subscriber(queue(Split, "split"), async (job, ctx) => ctx.ack(Array.from({ length: FAN }, (_, i) => job.n * FAN + i))))
          .include(subscriber(queue(Part, "part"), async (job, ctx) => ctx.ack(job.n)))
          .include(subscriber(queue(Merge, "merge"), async (job, ctx) => ctx.ack(job.parts))),
      )
      .start();
    const done = async () => Number((await sql<{ n: unknown }>`select count(*) as n from ${sql.id(last.table)} where processed_at is not null`.execute(db)).rows[0]?.n);
    const deadline = Date.now() + 600_000;
    while ((await done()) < runs) {
      if (Date.now() > deadline) throw new Error(`${engine} ${which}: ${await done()} of ${runs} runs finished in 600 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const drainStatements = statements;
    await app.stop();
    const steps = which === "chain" ? runs * 3 : runs * (FAN + 2);
    for (const [words, n] of [...kinds.entries()].sort((x, y) => y[1] - x[1]).slice(0, 15)) process.stderr.write(`  ${(n / steps).toFixed(2)}  ${words}\n`);
    return { runs, steps: which === "chain" ? runs * 3 : runs * (FAN + 2), seconds, startStatements, drainStatements };
  } finally {
    for (const t of TABLES) await sql`drop table if exists ${sql.id(t.table)}`.execute(db);
    await db.destroy();
  }
}

const lines: string[] = [];
for (const engine of engines) {
  for (const which of ["chain", "fan"] as const) {
    const r = await measure(engine, which);
    const shape = which === "chain" ? "3-step chain" : `fan-out ${FAN} → fan-in`;
    process.stderr.write(`${engine} ${shape}: ${r.runs} runs, ${r.steps} steps in ${r.seconds.toFixed(2)} s\n`);
    lines.push(
      `| ${engine} | ${shape} | ${r.runs} | ${(r.runs / r.seconds).toFixed(1)} | ${(r.steps / r.seconds).toFixed(0)} | ${(r.startStatements / r.runs).toFixed(1)} | ${(r.drainStatements / r.steps).toFixed(2)} |`,
    );
  }
}
console.log(`${form} form, one process, workers(${workers}) batch(8) per step, poll 20 ms; load ${loadavg()[0]?.toFixed(2)}`);
console.log("| engine | shape | runs | runs/s | steps/s | statements per start | statements per step |");
console.log("|---|---|---:|---:|---:|---:|---:|");
for (const line of lines) console.log(line);
