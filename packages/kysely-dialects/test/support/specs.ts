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

/** Fifo with every role the head rule reads: priority, retryAfter, processedAt (lease form). */
export function fifoRichLease(table = "fifo_jobs"): InboxDescription {
  return { ...richLease(table), fifo: true };
}

/** Fifo in the row-lock form, with every role but lease. */
export function fifoRowLock(table = "fifo_jobs"): InboxDescription {
  return { ...richRowLock(table), fifo: true };
}

/** Fifo in the row-lock form without an attempt column: the claim has nothing to write. */
export function fifoBareRowLock(table = "fifo_jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated()).payload(column("payload")).group(column("grp")).priority(column("priority")).fifo().description;
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

/** A dead-letter table for the seed's payloads: generated id, the last error and the attempts spent. */
export const deadJobs = InboxSpec.table("dead_jobs", column("id").generated())
  .payload(column("payload"))
  .lastError(column("last_error"))
  .failedAttempts(column("failed_attempts")).description;

/** A dead-letter table that keeps the source's id and copies a data column of the same name. */
export const deadKeepingId = InboxSpec.table("dead_kept", column("id"))
  .attempt(column("attempt"))
  .payload(column("payload"))
  .data(column("customer_id"))
  .lastError(column("last_error")).description;

/** A lease table with groups and a last-error column: dead letters go to another group. */
export const groupedLease = InboxSpec.table("jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .payload(column("payload"))
  .group(column("grp")).description;

/** A lease table with an order key: each account's rows one at a time, in id order. */
export function orderedLease(table = "ledger_jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .orderKey(column("account_id").type("bigint"))
    .payload(column("payload")).description;
}

/** An order key in the lease form, with every role the head rule, its lease probe and the claim read. */
export function orderedRichLease(table = "ledger_jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .payload(column("payload"))
    .processedAt(column("processed_at"))
    .orderKey(column("account_id").type("text")).description;
}

/** An order key in the row-lock form, with every role the head rule and the claim read. */
export function orderedRichRowLock(table = "ledger_jobs"): InboxDescription {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .payload(column("payload"))
    .retryAfter(column("retry_after"))
    .processedAt(column("processed_at"))
    .priority(column("priority"))
    .orderKey(column("account_id").type("text")).description;
}

/** A lease table with a result and a progress column (results need processedAt). */
export const resultLease = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .payload(column("payload"))
  .processedAt(column("processed_at"))
  .result(column("result"))
  .progress(column("progress")).description;

/** The same with an advisory key (and no lease). */
export const resultAdvisory = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .payload(column("payload"))
  .processedAt(column("processed_at"))
  .result(column("result"))
  .progress(column("progress"))
  .advisoryLock("report-{id}").description;

/** The same with neither: the row-lock form (a result; progress is refused by the runtime's types). */
export const resultRowLock = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .payload(column("payload"))
  .processedAt(column("processed_at"))
  .result(column("result")).description;
