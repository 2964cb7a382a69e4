/**
 * Where the delay rule's error lands, and that it says which column to add. A handler that can
 * return `retryAfter` on a table with nowhere to store a time (row lock or advisory without a
 * retryAfter column) is compiled with the TypeScript compiler; `/*@*\/` marks where the error
 * must start: the handler, its returned expression, or the class's `handle`. Removing the rule,
 * rewording it, or moving its error elsewhere turns this red.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { compileSnippets, MARK, marks } from "../../../core/test/snippet-compiler.js";

const here = dirname(fileURLToPath(import.meta.url));

const prelude = `import { InboxSpec, column, defineInbox, field, payloadOf } from "@sqlinbox/core";
import { HandlerOutcome, InboxQueue, subscriber, type Handler } from "../../src/index.js";
interface Report { readonly title: string }
declare function busy(report: Report): boolean;
const RowLock = InboxSpec.table("report_jobs", column("id").generated()).payload(column("payload"), payloadOf<Report>());
const Advisory = defineInbox({ table: "report_jobs", columns: { id: field.id().generated(), payload: field.payload<Report>() }, advisoryLock: "report-{id}" });
const Delayed = RowLock.retryAfter(column("retry_after"));
const Leased = RowLock.lease(column("locked_until"));
`;

const sentence = (form: string) =>
  `retryAfter needs a retryAfter column: this ${form} table has nowhere to store a time, and a delay is never served by holding the row; describe one with field.retryAfter() or .retryAfter(column(\\"retry_after\\")), or return retry()`;

interface Case {
  readonly name: string;
  readonly form: "row-lock" | "advisory";
  /** The code, with MARK where the error must start. */
  readonly snippet: string;
}

const cases: readonly Case[] = [
  {
    name: "an async function handler whose body is the retryAfter",
    form: "row-lock",
    snippet: `subscriber(InboxQueue.of(RowLock, "reports"), ${MARK}async () => HandlerOutcome.retryAfter(30_000));`,
  },
  {
    name: "a synchronous function handler",
    form: "row-lock",
    snippet: `subscriber(InboxQueue.of(RowLock, "reports"), ${MARK}() => HandlerOutcome.retryAfter(30_000));`,
  },
  {
    name: "a function handler with a retryAfter among its returns",
    form: "advisory",
    snippet: `subscriber(InboxQueue.of(Advisory, "reports"), ${MARK}async (report) => {
  if (busy(report)) return HandlerOutcome.retryAfter(30_000);
  return HandlerOutcome.ack();
});`,
  },
  {
    name: "a class handler",
    form: "row-lock",
    snippet: `export class Render implements Handler<typeof RowLock> {
  async ${MARK}handle(report: Report) {
    return busy(report) ? HandlerOutcome.retryAfter(1000) : HandlerOutcome.ack();
  }
}`,
  },
  {
    name: "a batch handler",
    form: "advisory",
    snippet: `subscriber.batch(InboxQueue.of(Advisory, "reports").batch(8), async (reports) => ${MARK}reports.map((r) => (busy(r) ? HandlerOutcome.retryAfter(1000) : HandlerOutcome.ack())));`,
  },
  {
    name: "a function handler that snoozes (a snooze stores its delay as retryAfter does)",
    form: "row-lock",
    snippet: `subscriber(InboxQueue.of(RowLock, "reports"), ${MARK}async () => HandlerOutcome.snooze(30_000));`,
  },
  {
    name: "a class handler that snoozes on an advisory table",
    form: "advisory",
    snippet: `export class Wait implements Handler<typeof Advisory> {
  async ${MARK}handle(report: Report) {
    return busy(report) ? HandlerOutcome.snooze(1000) : HandlerOutcome.ack();
  }
}`,
  },
  {
    name: "an onError policy",
    form: "row-lock",
    snippet: `InboxQueue.of(RowLock, "reports").onError(() => ${MARK}HandlerOutcome.retryAfter(1000));`,
  },
];

const valid = `subscriber(InboxQueue.of(Delayed, "reports"), async () => HandlerOutcome.retryAfter(1000));
subscriber(InboxQueue.of(Leased, "reports"), async () => HandlerOutcome.retryAfter(1000));
subscriber(InboxQueue.of(Delayed, "reports"), async () => HandlerOutcome.snooze(1000));
subscriber(InboxQueue.of(Leased, "reports"), async () => HandlerOutcome.snooze(1000));
subscriber(InboxQueue.of(RowLock, "reports"), async (report) => (busy(report) ? HandlerOutcome.retry() : HandlerOutcome.ack()));
export class Render implements Handler<typeof Advisory> {
  async handle() {
    return HandlerOutcome.drop();
  }
}`;

const fileOf = (i: number) => join(here, `delay-rule-snippet-${i}.ts`);
const snippets = cases.map((c) => marks(`${prelude + c.snippet}\n`));
const results = compileSnippets(new Map([...snippets.map((s, i) => [fileOf(i), s.code] as const), [fileOf(-1), `${prelude + valid}\n`]]), {
  customConditions: ["@sqlinbox/source"],
  types: ["node"],
});

describe("a retryAfter on a table with nowhere to store a time: the error lands on the handler and names the column to add", () => {
  test("retryAfter compiles where a column stores it, and every other outcome everywhere (the harness adds no noise)", () => {
    expect(results.get(fileOf(-1))).toEqual([]);
  });

  test.each(cases.map((c, i) => [c.name, c, i] as const))("%s", (_, c, i) => {
    const found = results.get(fileOf(i)) ?? [];
    const { places } = snippets[i]!;
    expect(places).toHaveLength(1);
    expect(found.map((d) => ({ line: d.line, column: d.column }))).toEqual(places);
    // A snooze's error names the rule where it first says why (its branded place is a retryAfter's): the sentence, in either case.
    expect(found[0]?.text).toContain(c.snippet.includes("snooze") ? `<"${sentence(c.form)}"` : `SpecError<"${sentence(c.form)}">`);
  });
});
