/**
 * Where each workflow rule's error lands, and what its first line says: each snippet is compiled
 * with the TypeScript compiler; `/*@*\/` marks where the error must start.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { compileSnippets, MARK, marks } from "./snippet-compiler.js";

const here = dirname(fileURLToPath(import.meta.url));

const prelude = `import { column, InboxSpec, payloadOf, resultOf, workflow } from "../src/index.js";
const ChargeJobs = InboxSpec.table("charge_jobs", column("id").generated()).lease(column("locked_until")).processedAt(column("processed_at"))
  .result(column("result"), resultOf<{ id: string }>()).payload(column("payload"), payloadOf<{ orderId: string }>());
const ShipJobs = InboxSpec.table("ship_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<{ chargeId: string }>());
const start = workflow("order", payloadOf<{ orderId: string }>()).step("charge", ChargeJobs, (input) => ({ orderId: input.orderId }));
`;

interface Rule {
  readonly name: string;
  readonly sentence: string;
  readonly snippet: string;
}

const rules: readonly Rule[] = [
  {
    name: "a payload builder that does not return the table's payload",
    sentence: 'step \\"ship\\": the payload builder does not return the payload of the step\'s table; return a value of the payload type its table describes',
    snippet: `start.step("ship", ShipJobs, { after: ["charge"] }, (_, { charge }) => ${MARK}({ orderId: charge?.id ?? "" }));`,
  },
  {
    name: "a dependency on a step that does not exist",
    sentence: 'step \\"ship\\" depends on \\"bill\\", which is no step declared before it: declare that step first, or fix the name',
    snippet: `start.step("ship", ShipJobs, ${MARK}{ after: ["bill"] }, () => ({ chargeId: "x" }));`,
  },
  {
    name: "a dependency on a step declared later",
    sentence: 'step \\"pack\\" depends on \\"ship\\", which is no step declared before it: declare that step first, or fix the name',
    snippet: `start.step("pack", ShipJobs, ${MARK}{ after: ["ship"] }, () => ({ chargeId: "x" })).step("ship", ShipJobs, () => ({ chargeId: "x" }));`,
  },
  {
    name: "reading the result of a step whose table has no result column",
    sentence:
      'step \\"ship\\" has no result to read: its table has no result column; describe .result(column(…), resultOf<T>()) on it, or drop \\"ship\\" from what the payload reads',
    snippet: `start.step("ship", ShipJobs, { after: ["charge"] }, () => ({ chargeId: "x" })).step("again", ShipJobs, { after: ["ship"] }, (_, { ship }) => ({ chargeId: ship.${MARK}id }));`,
  },
];

const valid = `start.step("ship", ShipJobs, { after: ["charge"] }, (_, { charge }) => ({ chargeId: charge?.id ?? "" }));`;

const fileOf = (i: number) => join(here, `workflow-snippet-${i}.ts`);
const snippets = rules.map((rule) => marks(`${prelude + rule.snippet}\n`));
const results = compileSnippets(new Map([...snippets.map((s, i) => [fileOf(i), s.code] as const), [fileOf(-1), `${prelude + valid}\n`]]));

describe("workflow rules: each error starts where the mistake is, its sentence in the first line", () => {
  test("a valid workflow compiles without a diagnostic (the harness adds no noise)", () => {
    expect(results.get(fileOf(-1))).toEqual([]);
  });

  test.each(rules.map((rule, i) => [rule.name, rule, i] as const))("%s", (_, rule, i) => {
    const found = results.get(fileOf(i)) ?? [];
    const { places } = snippets[i]!;
    expect(found.map(({ line, column }) => ({ line, column }))).toEqual(places);
    for (const diagnostic of found) expect(diagnostic.text.split("\n")[0]).toContain(`SpecError<"${rule.sentence}">`);
  });
});
