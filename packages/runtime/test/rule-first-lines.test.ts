/**
 * Every compile-time rule, core's and the runtime's, leads with its sentence: the first line of the
 * compiler's first message for the rule's fixture holds the sentence (what is wrong, what to do).
 * Each fixture is compiled twice: under `strict`, and under the options `tsc --init` writes
 * (TypeScript 5.9: `exactOptionalPropertyTypes`, `noUncheckedIndexedAccess`, `verbatimModuleSyntax`, …),
 * where TypeScript is prone to prepend an assignability chain or append "Consider adding 'undefined'".
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, test } from "vitest";
import { compileSnippets } from "../../core/test/snippet-compiler.js";

const here = dirname(fileURLToPath(import.meta.url));

const prelude = `import { InboxSpec, column, defineInbox, field, payloadOf } from "@sqlinbox/core";
import { App, Ctx, HandlerOutcome, InboxQueue, SqlBroker, keys, subscriber } from "../src/index.js";
import { sql } from "kysely";
interface Report { readonly title: string }
interface Invoice { readonly cents: number }
interface Database {
  report_jobs: { id: number; attempt: number; locked_until: Date | null; payload: Uint8Array };
  wrong_types: { id: number; attempt: string; locked_until: number | null };
}
declare function busy(report: Report): boolean;
const defineReportInbox = defineInbox<Database>();
const RowLock = InboxSpec.table("report_jobs", column("id").generated()).payload(column("payload"), payloadOf<Report>());
const Counted = RowLock.attempt(column("attempt").generated());
const Leased = Counted.lease(column("locked_until"));
const Advisory = defineInbox({ table: "keyed_jobs", columns: { id: field.id().generated(), payload: field.payload<Report>() }, advisoryLock: "report-{id}" });
const DeadInvoices = InboxSpec.table("dead_invoices", column("id").generated()).payload(column("payload"), payloadOf<Invoice>());
const DeadReports = InboxSpec.table("dead_reports", column("id").generated()).payload(column("payload"), payloadOf<Report>());
const DeadInvoicesDeclared = defineInbox({ table: "dead_invoices", columns: { id: field.id().generated(), payload: field.payload<Invoice>(), lastError: field.lastError("last_error") } });
const RowMode = defineInbox({ table: "exports", columns: { id: field.id<number>().generated(), customer_id: field.data<string>() } });
const Bare = InboxSpec.table("bare_jobs", column("id").generated()).payload(column("payload"), payloadOf<Report>());
const LeasedBare = InboxSpec.table("leased_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Report>());
const broker = SqlBroker.fromUrl("postgres://u@h/db").route(Bare, "bare").route(LeasedBare, "leased");
void [busy, defineReportInbox, RowLock, Counted, Leased, Advisory, DeadInvoices, DeadReports, DeadInvoicesDeclared, RowMode, broker, sql, App, Ctx, keys, SqlBroker, HandlerOutcome, subscriber];
`;

interface Rule {
  readonly name: string;
  /** The sentence, as the compiler prints it (quotes inside a literal type escaped). */
  readonly sentence: string;
  readonly snippet: string;
}

const delay = (form: string) =>
  `retryAfter needs a retryAfter column: this ${form} table has nowhere to store a time, and a delay is never served by holding the row; describe one with field.retryAfter() or .retryAfter(column(\\"retry_after\\")), or return retry()`;

const rules: readonly Rule[] = [
  // core, declarative
  { name: "no id column", sentence: "no id column is described: add one with field.id()", snippet: `defineInbox({ table: "t", columns: { attempt: field.attempt() } });` },
  {
    name: "a role played by two columns (declarative)",
    sentence: "the attempt role is played by two columns: a table has at most one attempt column, so describe the others with field.data()",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), attempt: field.attempt(), tries: field.attempt() } });`,
  },
  {
    name: "a column named twice (declarative)",
    sentence: 'column \\"x\\" is described twice: describe each column once',
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), a: field.data("x"), b: field.data("x") } });`,
  },
  {
    name: "a lease column with an advisory key (declarative)",
    sentence: "a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), lockedUntil: field.lease("locked_until") }, advisoryLock: "k-{id}" });`,
  },
  {
    name: "fifo without a group (declarative)",
    sentence: "fifo needs a group column: describe one with field.group(), or drop fifo",
    snippet: `defineInbox({ table: "t", columns: { id: field.id() }, fifo: true });`,
  },
  {
    name: "fifo with an advisory key (declarative)",
    sentence: "fifo and an advisory key exclude each other: an advisory key already keeps rows that share it apart, so drop one of them",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), queue: field.group() }, fifo: true, advisoryLock: "k-{id}" });`,
  },
  {
    name: "an advisory key naming a column that is not described (declarative)",
    sentence: "the advisory key names a column that is not described: describe customer_id (as field.data() if it plays no role)",
    snippet: `defineInbox({ table: "t", columns: { id: field.id() }, advisoryLock: "report-{customer_id}" });`,
  },
  {
    name: "a table the database interface does not have",
    sentence: 'the database interface has no table \\"report_job\\": check the name, or add the table to the interface',
    snippet: `defineReportInbox({ table: "report_job", columns: { id: field.id() } });`,
  },
  {
    name: "a column the table does not have",
    sentence: 'table \\"report_jobs\\" has no column \\"lockedUntil\\" in the database interface: check the name, or give the column\'s name as the field\'s argument',
    snippet: `defineReportInbox({ table: "report_jobs", columns: { id: field.id(), lockedUntil: field.lease() } });`,
  },
  {
    name: "a lease column that does not hold a date",
    sentence: 'the lease column \\"locked_until\\" of \\"wrong_types\\" does not hold a date: give the lease role to a column typed Date (or ISO-8601 text on SQLite)',
    snippet: `defineReportInbox({ table: "wrong_types", columns: { id: field.id(), locked_until: field.lease() } });`,
  },
  {
    name: "an attempt column that does not hold a number",
    sentence: 'the attempt column \\"attempt\\" of \\"wrong_types\\" does not hold a number: give the attempt role to an integer column',
    snippet: `defineReportInbox({ table: "wrong_types", columns: { id: field.id(), attempt: field.attempt() } });`,
  },
  {
    name: ".type(…) on a role field (declarative): the role's sentence, not a rule of the description around it",
    sentence: "the lease column's type is fixed by its role: drop .type(…) (only id, order key and data columns take a type)",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), lockedUntil: field.lease("locked_until").type("timestamp") } });`,
  },
  // core, by hand
  {
    name: "a role played twice (by hand)",
    sentence: "the attempt role is already played by a column: a table has at most one attempt column, so describe this one with .data(…) or drop it",
    snippet: `Counted.attempt(column("tries"));`,
  },
  {
    name: "a column described twice (by hand)",
    sentence: 'column \\"payload\\" is already described: describe each column once',
    snippet: `Counted.lease(column("payload"));`,
  },
  {
    name: "a lease column with an advisory key (by hand)",
    sentence: "a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both",
    snippet: `Leased.advisoryLock("report-{id}");`,
  },
  {
    name: "fifo without a group (by hand)",
    sentence: "fifo needs a group column: describe one with .group(column(…)) before .fifo()",
    snippet: `RowLock.fifo();`,
  },
  {
    name: "an advisory key naming a column that is not described (by hand)",
    sentence: "the advisory key names a column that is not described: describe customer_id first (with .data(column(…)) if it plays no role)",
    snippet: `RowLock.advisoryLock("report-{customer_id}");`,
  },
  // runtime
  {
    name: "ctx.tx outside transactional mode",
    sentence: "ctx.tx needs a transactional queue: add .transactional() to the queue (InboxQueue.of(…).transactional<DB>())",
    snippet: `subscriber(InboxQueue.of(Leased, "reports"), async (report, ctx) => {
  await ctx.tx.insertInto("audit").values({ title: report.title }).execute();
});`,
  },
  {
    name: "ctx.tx given to sql`…`.execute outside transactional mode",
    sentence: "ctx.tx needs a transactional queue: add .transactional() to the queue (InboxQueue.of(…).transactional<DB>())",
    snippet: `subscriber(InboxQueue.of(Leased, "reports"), async (_report, ctx) => {
  await sql\`select 1\`.execute(ctx.tx);
});`,
  },
  {
    name: "keys.attempt on a table without an attempt column",
    sentence: 'keys.attempt needs a column with the attempt role: describe one on the table (.attempt(column(\\"…\\")) or field.attempt())',
    snippet: `subscriber(InboxQueue.of(RowLock, "reports"), async (_report, ctx) => {
  ctx.get(keys.attempt);
});`,
  },
  {
    name: "a result column on a table whose ack deletes the row",
    sentence: "a result column needs a processedAt column: this table's ack deletes the row, and the result with it; describe .processedAt(column(…)) before .result(…)",
    snippet: `RowLock.result(column("result"));`,
  },
  {
    name: "a result field on a table whose ack deletes the row (declarative)",
    sentence: "a result column needs a processedAt column: this table's ack deletes the row, and the result with it; describe one with field.processedAt()",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), result: field.result() } });`,
  },
  {
    name: "ctx.ack(result) on a table without a result column",
    sentence:
      'ctx.ack(result) needs a result column: describe one with .result(column(\\"result\\"), resultOf<T>()) after .processedAt(…), or return HandlerOutcome.ack() without a result',
    snippet: `subscriber(InboxQueue.of(RowLock, "reports"), async (report, ctx) => ctx.ack({ pages: report.title.length }));`,
  },
  {
    name: "ctx.progress on a row-lock table",
    sentence:
      "ctx.progress cannot show progress on a row-lock table: the claim holds the row in an open transaction, so no other session sees a write before the settlement commits; use a lease column or an advisory key",
    snippet: `subscriber(InboxQueue.of(RowLock.progress(column("progress")), "reports"), async (_report, ctx) => {
  await ctx.progress(0.5);
});`,
  },
  {
    name: "ctx.progress on a table without a progress column",
    sentence: 'ctx.progress needs a progress column: describe one with .progress(column(\\"progress\\"), progressOf<T>())',
    snippet: `subscriber(InboxQueue.of(Leased, "reports"), async (_report, ctx) => {
  await ctx.progress(0.5);
});`,
  },
  {
    name: "keys.attempt through Ctx(…).from on a table without an attempt column",
    sentence: 'keys.attempt needs a column with the attempt role: describe one on the table (.attempt(column(\\"…\\")) or field.attempt())',
    snippet: `subscriber(InboxQueue.of(RowLock, "reports"), async (_report, ctx) => {
  Ctx(keys.attempt).from(ctx);
});`,
  },
  {
    name: "InboxQueue.lease on a table without a lease column",
    sentence: 'InboxQueue.lease needs a table with a lease column: describe one with .lease(column(\\"locked_until\\")) or field.lease()',
    snippet: `InboxQueue.of(Counted, "reports").lease(60_000);`,
  },
  {
    name: "retryAfter from a handler on a row-lock table without a retryAfter column",
    sentence: delay("row-lock"),
    snippet: `subscriber(InboxQueue.of(RowLock, "reports"), async () => HandlerOutcome.retryAfter(30_000));`,
  },
  {
    name: "retryAfter from an onError policy on an advisory table",
    sentence: delay("advisory"),
    snippet: `InboxQueue.of(Advisory, "reports").onError(() => HandlerOutcome.retryAfter(1000));`,
  },
  {
    name: "retryAfter from a synchronous handler on a row-lock table",
    sentence: delay("row-lock"),
    snippet: `subscriber(InboxQueue.of(RowLock, "reports"), () => HandlerOutcome.retryAfter(30_000));`,
  },
  {
    name: "retryAfter among a block handler's returns on an advisory table",
    sentence: delay("advisory"),
    snippet: `subscriber(InboxQueue.of(Advisory, "reports"), async (report) => {
  if (busy(report)) return HandlerOutcome.retryAfter(30_000);
  return HandlerOutcome.ack();
});`,
  },
  {
    name: "retryAfter from a row-mode handler (the row, no payload column)",
    sentence: delay("row-lock"),
    snippet: `subscriber(InboxQueue.of(RowMode, "exports"), async (row) => (row.customer_id === "" ? HandlerOutcome.retryAfter(1000) : HandlerOutcome.ack()));`,
  },
  {
    name: "retryAfter from a batch handler, one outcome per row",
    sentence: delay("row-lock"),
    snippet: `subscriber.batch(InboxQueue.of(RowLock, "reports").batch(8), async (reports) => reports.map(() => HandlerOutcome.retryAfter(1000)));`,
  },
  {
    name: "retryAfter from a batch handler, one outcome for all",
    sentence: delay("row-lock"),
    snippet: `subscriber.batch(InboxQueue.of(RowLock, "reports").batch(8), async (reports) => {
  if (reports.length > 1) return HandlerOutcome.retryAfter(1000);
  return reports.map(() => HandlerOutcome.ack());
});`,
  },
  {
    name: "retryAfter from an onDecodeError policy on a row-lock table",
    sentence: delay("row-lock"),
    snippet: `InboxQueue.of(RowLock, "reports").onDecodeError(() => HandlerOutcome.retryAfter(1000));`,
  },
  {
    name: "a dead-letter destination that is neither a table nor a group",
    sentence: "a dead-letter destination is a table description or { group: name }",
    snippet: `InboxQueue.of(Leased, "reports").deadLetter({ table: "dead_reports" }, { maxAttempts: 5 });`,
  },
  {
    name: "maxAttempts on a row-mode table without an attempt column, dead-lettering to itself",
    sentence: 'maxAttempts needs an attempt column: describe one with .attempt(column(\\"attempt\\")) or field.attempt()',
    snippet: `InboxQueue.of(RowMode, "exports").deadLetter(RowMode, { maxAttempts: 3 });`,
  },
  {
    name: "a dead-letter group with maxAttempts on a table without a group column",
    sentence: 'a dead-letter group needs a group column: describe one with .group(column(\\"grp\\")) or field.group(), or give a table',
    snippet: `InboxQueue.of(Counted, "reports").deadLetter({ group: "dead" }, { maxAttempts: 3 });`,
  },
  {
    name: "a dead-letter table with another payload type",
    sentence: "the dead-letter table's payload type differs from this queue's: describe its payload column with the same type",
    snippet: `InboxQueue.of(Leased, "reports").deadLetter(DeadInvoices, { maxAttempts: 5 });`,
  },
  {
    name: "a declared dead-letter table with another payload type (its type is long: the sentence comes before it)",
    sentence: "the dead-letter table's payload type differs from this queue's: describe its payload column with the same type",
    snippet: `InboxQueue.of(Leased, "reports").deadLetter(DeadInvoicesDeclared, { maxAttempts: 5 });`,
  },
  {
    name: "maxAttempts without an attempt column",
    sentence: 'maxAttempts needs an attempt column: describe one with .attempt(column(\\"attempt\\")) or field.attempt()',
    snippet: `InboxQueue.of(RowLock, "reports").deadLetter(DeadReports, { maxAttempts: 5 });`,
  },
  {
    name: "a dead-letter group without a group column",
    sentence: 'a dead-letter group needs a group column: describe one with .group(column(\\"grp\\")) or field.group(), or give a table',
    snippet: `InboxQueue.of(Leased, "reports").deadLetter({ group: "dead" });`,
  },
  {
    name: "a transactional batch handler",
    sentence: "a batch handler cannot be transactional: its rows have one outcome each, its writes one transaction; drop .transactional() or use a per-row handler",
    snippet: `subscriber.batch(InboxQueue.of(Counted, "reports").transactional(), async () => HandlerOutcome.ack());`,
  },
  {
    name: "sharedTransaction on a lease table",
    sentence: "sharedTransaction() needs a row-lock table (no lease column, no advisory key): the lease and advisory forms settle each row on its own",
    snippet: `InboxQueue.of(Leased, "reports").sharedTransaction();`,
  },
  {
    name: "an order key with a group (by hand)",
    sentence: "an order key and a group exclude each other: keep the order key, or the group (and fifo), not both",
    snippet: `InboxSpec.table("t", column("id")).group(column("grp")).fifo().orderKey(column("account_id"));`,
  },
  {
    name: "an order key with fifo (declarative)",
    sentence: "an order key and a group exclude each other: keep the order key, or the group (and fifo), not both",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), queue: field.group(), account: field.orderKey("account_id") }, fifo: true });`,
  },
  {
    name: "an order key with an advisory key (declarative)",
    sentence: "an order key and an advisory key exclude each other: name its column in the key template and drop the order key",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), account: field.orderKey("account_id") }, advisoryLock: "acct-{account_id}" });`,
  },
  {
    name: "maxInWorkPerKey without an order key or a group",
    sentence: "maxInWorkPerKey needs an order key or a group column: describe one with field.orderKey(…) or .orderKey(column(…)); without one there is no key to count rows by",
    snippet: `InboxQueue.of(Leased, "reports").maxInWorkPerKey(2);`,
  },
  {
    name: "maxInWorkPerKey on an advisory table",
    sentence:
      "maxInWorkPerKey needs a lease or row-lock table: an advisory key already runs the rows that share it one at a time, so drop maxInWorkPerKey or describe a lease column instead of the advisory key",
    snippet: `InboxQueue.of(Advisory, "reports").maxInWorkPerKey(2);`,
  },
  {
    name: "sharedTransaction and transactional together",
    sentence: "transactional() and sharedTransaction() exclude each other: a handler's writes cannot roll back alone inside a transaction other rows share",
    snippet: `InboxQueue.of(Counted, "reports").transactional().sharedTransaction();`,
  },
  {
    name: "a row-lock table routed on a SQLite broker",
    sentence: "SQLite has no row locks: a row-lock table cannot be routed on a SQLite broker",
    snippet: `SqlBroker.fromUrl("sqlite::memory:").route(Counted, "reports");`,
  },
  {
    name: "listenNotify on a SQLite broker",
    sentence: "listenNotify() needs Postgres (LISTEN/NOTIFY): on SQLite and MySQL/MariaDB other processes see a publish at their next poll",
    snippet: `SqlBroker.fromUrl("sqlite::memory:").listenNotify();`,
  },
  {
    name: "headers on a publish to a table without a headers column",
    sentence: "publish(…, { headers }) needs a headers column: describe one with field.headers() or .headers(column(…))",
    snippet: `await SqlBroker.fromUrl("sqlite::memory:").route(Leased, "reports").publish("reports", { title: "Q3" }, { headers: { traceparent: "00-…-01" } });`,
  },
  {
    name: "runAt on a publish to a table with nowhere to store a time",
    sentence: "publish(…, { runAt, delay }) needs somewhere to store the time: a retryAfter column (field.retryAfter()) or a lease column",
    snippet: `await broker.publish("bare", { title: "Q3" }, { runAt: new Date() });`,
  },
  {
    name: "delay on a publish to a table with nowhere to store a time",
    sentence: "publish(…, { runAt, delay }) needs somewhere to store the time: a retryAfter column (field.retryAfter()) or a lease column",
    snippet: `await broker.publish("bare", { title: "Q3" }, { delay: 1000 });`,
  },
  {
    name: "priority on a publish to a table without a priority column",
    sentence: "publish(…, { priority }) needs a priority column: describe one with field.priority() or .priority(column(…))",
    snippet: `await broker.publish("bare", { title: "Q3" }, { priority: 1 });`,
  },
  {
    name: "a dedup key on a publish to a table without a key column",
    sentence: "a publish with a key needs a dedup key column: describe one with field.key() or .key(column(…))",
    snippet: `await broker.publish("bare", { title: "Q3" }, { key: "q3" });`,
  },
  {
    name: "dedup keys on a publishMany to a table without a key column",
    sentence: "a publish with a key needs a dedup key column: describe one with field.key() or .key(column(…))",
    snippet: `await broker.publishMany("bare", [{ title: "Q3" }], { keys: ["q3"] });`,
  },
  {
    name: "data columns on a publish to a table that describes none",
    sentence: "publish(…, { columns }) sets data columns: this table describes none (field.data() or .data(column(…)))",
    snippet: `await broker.publish("bare", { title: "Q3" }, { columns: { customer_id: 7 } });`,
  },
  {
    name: "replace on a publish to a table without a key column",
    sentence: "replace needs a dedup key column, a lease column (it tells a row in work) and a retryAfter column (it holds the run-at)",
    snippet: `await broker.publish("leased", { title: "Q3" }, { replace: true });`,
  },
  {
    name: "a publish on a name the broker does not route",
    sentence: "this broker's type routes no such name: declare it with .route(spec, name) and publish on the broker .route() returns",
    snippet: `await broker.publish("bar", { title: "Q3" });`,
  },
  {
    name: "app.cron on a route whose table has no dedup key column",
    sentence:
      "app.cron(…) needs a dedup key column on the route's table: each tick is published with the key cron:<route>:<tick time>, so that every process publishes it once; describe one with field.key() or .key(column(…))",
    snippet: `new App({ name: "a", version: "1" }).withBroker(SqlBroker.fromUrl("sqlite::memory:").route(Leased, "reports"), (b) => b).cron("reports", "0 6 * * *", { title: "daily" });`,
  },
  {
    name: "app.cron with catchUp on a table without a processedAt column",
    sentence:
      "catchUp needs a processedAt column: on a table whose ack deletes the row, a handled tick's key is free again and a start would publish it again; describe one with field.processedAt(), or drop catchUp",
    snippet: `new App({ name: "a", version: "1" })
  .withBroker(SqlBroker.fromUrl("sqlite::memory:").route(Leased.key(column("job_key")), "reports"), (b) => b)
  .cron("reports", "0 6 * * *", { title: "daily" }, { catchUp: 1 });`,
  },
  {
    name: "maxInWork(0)",
    sentence: "maxInWork takes a whole number of rows above 0: at most that many rows of this subscription are in work at once, across every process",
    snippet: `InboxQueue.of(Counted, "reports").maxInWork(0);`,
  },
  {
    name: "maxInWork on a lease table without a retryAfter column",
    sentence:
      'maxInWork on a lease table needs a retryAfter column: the cap counts rows whose lease is ahead, and without one a delayed row waits in its lease column and counts as in work; describe one with field.retryAfter() or .retryAfter(column(\\"retry_after\\"))',
    snippet: `InboxQueue.of(Leased, "reports").maxInWork(5);`,
  },
  {
    name: "rateLimit with a window of 0 ms",
    sentence: "rateLimit's perMs is a window above 0 ms: at most max deliveries start in any window that long",
    snippet: `InboxQueue.of(Counted, "reports").rateLimit({ max: 10, perMs: 0 });`,
  },
  {
    name: "rateLimit with a negative max",
    sentence: "rateLimit's max is a whole number of starts above 0: at most that many deliveries start in any window of perMs",
    snippet: `InboxQueue.of(Counted, "reports").rateLimit({ max: -1, perMs: 1000 });`,
  },
  {
    name: "keys.headers on a table without a headers column",
    sentence: 'keys.headers needs a column with the headers role: describe one on the table (.headers(column(\\"…\\")) or field.headers())',
    snippet: `subscriber(InboxQueue.of(Leased, "reports"), async (_report, ctx) => {
  ctx.get(keys.headers);
});`,
  },
];

/** The options `tsc --init` writes (TypeScript 5.9), minus what concerns emit. */
const initDefaults: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ESNext,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  strict: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  noUncheckedSideEffectImports: true,
  moduleDetection: ts.ModuleDetectionKind.Force,
  skipLibCheck: true,
};

const settings = {
  strict: { customConditions: ["@sqlinbox/source"], types: ["node"] },
  "tsc --init": { ...initDefaults, customConditions: ["@sqlinbox/source"], types: ["node"] },
} satisfies Record<string, ts.CompilerOptions>;

const fileOf = (setting: string, i: number) => join(here, `rule-first-line-${setting === "strict" ? "s" : "i"}-${i}.ts`);

for (const [setting, options] of Object.entries(settings)) {
  describe(`under ${setting}: the first line of each rule's first error holds its sentence`, () => {
    const files = new Map(rules.map((rule, i) => [fileOf(setting, i), `${prelude + rule.snippet}\n`] as const));
    files.set(fileOf(setting, -1), prelude);
    const results = compileSnippets(files, options);

    test("the prelude compiles without a diagnostic (the harness adds no noise)", () => {
      expect(results.get(fileOf(setting, -1))).toEqual([]);
    });

    test.each(rules.map((rule, i) => [rule.name, rule, i] as const))("%s", (_, rule, i) => {
      const found = results.get(fileOf(setting, i)) ?? [];
      expect(found.length, "the fixture must not compile").toBeGreaterThan(0);
      const first = found[0]?.text.split("\n")[0] ?? "";
      expect(first).toContain(rule.sentence);
      expect(found[0]?.text).not.toContain("Consider adding 'undefined'");
    });
  });
}
