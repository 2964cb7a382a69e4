/**
 * Where each declarative rule's error lands, and what its first line says. Each snippet is compiled
 * with the TypeScript compiler; `/*@*\/` marks the property the error must underline. Removing or
 * rewording a rule, or moving its error back onto the whole argument, turns this red.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { compileSnippets, MARK, marks } from "./snippet-compiler.js";

const here = dirname(fileURLToPath(import.meta.url));

const prelude = `import { defineInbox, field } from "../src/index.js";
interface Database {
  report_jobs: { id: number; attempt: number; locked_until: Date | null; payload: Uint8Array };
  wrong_types: { id: number; attempt: string; locked_until: number | null; job_key: number | null };
}
const defineReportInbox = defineInbox<Database>();
`;

interface Rule {
  readonly name: string;
  readonly sentence: string;
  /** The call, with MARK before each property the error must land on. */
  readonly snippet: string;
}

const rules: readonly Rule[] = [
  {
    name: "no id column",
    sentence: "no id column is described: add one with field.id()",
    snippet: `defineInbox({ table: "t", ${MARK}columns: { attempt: field.attempt() } });`,
  },
  {
    name: "a role played by two columns",
    sentence: "the attempt role is played by two columns: a table has at most one attempt column, so describe the others with field.data()",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), ${MARK}attempt: field.attempt(), ${MARK}tries: field.attempt() } });`,
  },
  {
    name: "a column named twice",
    sentence: 'column \\"x\\" is described twice: describe each column once',
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), ${MARK}a: field.data("x"), ${MARK}b: field.data("x") } });`,
  },
  {
    name: "a lease column with an advisory key",
    sentence: "a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), lockedUntil: field.lease("locked_until") }, ${MARK}advisoryLock: "k-{id}" });`,
  },
  {
    name: "fifo without a group",
    sentence: "fifo needs a group column: describe one with field.group(), or drop fifo",
    snippet: `defineInbox({ table: "t", columns: { id: field.id() }, ${MARK}fifo: true });`,
  },
  {
    name: "fifo with an advisory key",
    sentence: "fifo and an advisory key exclude each other: an advisory key already keeps rows that share it apart, so drop one of them",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), queue: field.group() }, ${MARK}fifo: true, advisoryLock: "k-{id}" });`,
  },
  {
    name: "an advisory key naming a column that is not described",
    sentence: "the advisory key names a column that is not described: describe customer_id (as field.data() if it plays no role)",
    snippet: `defineInbox({ table: "t", columns: { id: field.id() }, ${MARK}advisoryLock: "report-{customer_id}" });`,
  },
  {
    name: "a table the database interface does not have",
    sentence: 'the database interface has no table \\"report_job\\": check the name, or add the table to the interface',
    snippet: `defineReportInbox({ ${MARK}table: "report_job", columns: { id: field.id() } });`,
  },
  {
    name: "a column the table does not have",
    sentence: 'table \\"report_jobs\\" has no column \\"lockedUntil\\" in the database interface: check the name, or give the column\'s name as the field\'s argument',
    snippet: `defineReportInbox({ table: "report_jobs", columns: { id: field.id(), ${MARK}lockedUntil: field.lease() } });`,
  },
  {
    name: "a lease column that does not hold a date",
    sentence: 'the lease column \\"locked_until\\" of \\"wrong_types\\" does not hold a date: give the lease role to a column typed Date (or ISO-8601 text on SQLite)',
    snippet: `defineReportInbox({ table: "wrong_types", columns: { id: field.id(), ${MARK}locked_until: field.lease() } });`,
  },
  {
    name: "an attempt column that does not hold a number",
    sentence: 'the attempt column \\"attempt\\" of \\"wrong_types\\" does not hold a number: give the attempt role to an integer column',
    snippet: `defineReportInbox({ table: "wrong_types", columns: { id: field.id(), ${MARK}attempt: field.attempt() } });`,
  },
  {
    name: "a dedup key column that does not hold text",
    sentence: 'the key column \\"job_key\\" of \\"wrong_types\\" does not hold text: give the key role to a text column',
    snippet: `defineReportInbox({ table: "wrong_types", columns: { id: field.id(), ${MARK}job_key: field.key() } });`,
  },
  {
    name: "the key role played by two columns",
    sentence: "the key role is played by two columns: a table has at most one key column, so describe the others with field.data()",
    snippet: `defineInbox({ table: "t", columns: { id: field.id(), ${MARK}a: field.key(), ${MARK}b: field.key() } });`,
  },
];

const valid = `defineInbox({ table: "t", columns: { id: field.id(), attempt: field.attempt(), queue: field.group() }, fifo: true });
defineReportInbox({ table: "report_jobs", columns: { id: field.id(), attempt: field.attempt(), locked_until: field.lease(), payload: field.payload() } });`;

const fileOf = (i: number) => join(here, `rule-snippet-${i}.ts`);
const snippets = rules.map((rule) => marks(`${prelude + rule.snippet}\n`));
const results = compileSnippets(new Map([...snippets.map((s, i) => [fileOf(i), s.code] as const), [fileOf(-1), `${prelude + valid}\n`]]));

describe("declarative rules: each error underlines the offending property, its sentence in the first line", () => {
  test("a valid definition compiles without a diagnostic (the harness adds no noise)", () => {
    expect(results.get(fileOf(-1))).toEqual([]);
  });

  test.each(rules.map((rule, i) => [rule.name, rule, i] as const))("%s", (_, rule, i) => {
    const found = results.get(fileOf(i)) ?? [];
    const { places } = snippets[i]!;
    expect(places.length).toBeGreaterThan(0);
    expect(found.map(({ line, column }) => ({ line, column }))).toEqual(places);
    for (const diagnostic of found) expect(diagnostic.text.split("\n")[0]).toContain(`SpecError<"${rule.sentence}">`);
  });
});
