import { column, InboxSpec, defineInbox, field, type InboxDescription } from "@sqlinbox/core/internal";

/** The seed's table, both ways: id and attempt generated, a lease, a payload. */
export const seedByHand = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .payload(column("payload")).description;

export const seedDeclared = defineInbox({
  table: "report_jobs",
  columns: {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    lockedUntil: field.lease("locked_until"),
    payload: field.payload(),
  },
}).description;

/** Every role but lease: the row-lock form. */
export function richRowLock(table = "jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .payload(column("payload"))
    .retryAfter(column("retry_after"))
    .processedAt(column("processed_at"))
    .group(column("grp"))
    .priority(column("priority")).description;
}

/** Every role: the lease form. */
export function richLease(table = "jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .payload(column("payload"))
    .retryAfter(column("retry_after"))
    .processedAt(column("processed_at"))
    .group(column("grp"))
    .priority(column("priority")).description;
}

/** A group with fifo: only the head of each group is claimable. */
export function fifoLease(table = "fifo_jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).lease(column("locked_until")).group(column("grp")).fifo().description;
}

/** Advisory form keyed by a non-id column, with retryAfter and processedAt. */
export function richAdvisory(table = "jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .payload(column("payload"))
    .retryAfter(column("retry_after"))
    .processedAt(column("processed_at"))
    .data(column("customer_id"))
    .advisoryLock("report-{customer_id}").description;
}

/** Advisory keyed by id, no attempt column. */
export function idAdvisory(table = "jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated()).payload(column("payload")).advisoryLock("job-{id}").description;
}

/** Row lock, the seed's shape minus the lease. */
export function simpleRowLock(table = "jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).payload(column("payload")).description;
}
