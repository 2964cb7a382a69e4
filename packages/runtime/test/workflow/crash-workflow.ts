/** The fan-out workflow the crash test and its worker process share. */
import { payloadOf, workflow } from "@sqlinbox/core";
import type { ClaimForm } from "@sqlinbox/core/internal";
import { stepTable } from "./support.js";

export function crashWorkflow(prefix: string, form: ClaimForm) {
  const Splits = stepTable<{ n: number }, number[]>(`${prefix}_split`, form);
  const Parts = stepTable<{ n: number }, number>(`${prefix}_part`, form);
  const Sums = stepTable<{ sum: number }, number>(`${prefix}_sum`, form);
  const Fanned = workflow("crash", payloadOf<{ n: number }>())
    .step("split", Splits, (input) => input)
    .each("part", Parts, { over: "split" }, (_, n) => ({ n }))
    .step("sum", Sums, { after: ["part"] }, (_, { part }) => ({ sum: part.reduce<number>((a, b) => a + (b ?? 0), 0) }));
  return { Splits, Parts, Sums, Fanned };
}
