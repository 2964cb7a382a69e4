/** The order workflow the soak test and its worker processes share: charge → 10 pages (fan-out) → merge (fan-in) → email. */
import { payloadOf, workflow } from "@sqlinbox/core";
import type { ClaimForm } from "@sqlinbox/core/internal";
import { stepTable } from "./support.js";

/** Pages each charge fans out to. */
export const PAGES = 10;

export function soakWorkflow(prefix: string, form: ClaimForm) {
  const Charges = stepTable<{ order: number }, number[]>(`${prefix}_charge`, form);
  const Pages = stepTable<{ order: number; page: number }, number>(`${prefix}_page`, form);
  const Merges = stepTable<{ order: number; pages: readonly (number | null)[] }, number>(`${prefix}_merge`, form);
  const Emails = stepTable<{ order: number; total: number | null }, string>(`${prefix}_email`, form);
  const Order = workflow("soak", payloadOf<{ order: number }>())
    .step("charge", Charges, (input) => input)
    .each("page", Pages, { over: "charge" }, (input, page) => ({ order: input.order, page }))
    .step("merge", Merges, { after: ["page"] }, (input, { page }) => ({ order: input.order, pages: page }))
    .step("email", Emails, { after: ["merge"] }, (input, { merge }) => ({ order: input.order, total: merge }));
  return { Charges, Pages, Merges, Emails, Order };
}
