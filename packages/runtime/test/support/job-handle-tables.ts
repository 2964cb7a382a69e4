/** The jobs table the job-handle tests follow, in each form, keeping handled rows or deleting them. */
import { defineInbox, field } from "@sqlinbox/core";

export interface HandleJob {
  readonly n: number;
}

const columnsOf = () => ({
  id: field.id().generated(),
  attempt: field.attempt().generated(),
  payload: field.payload<HandleJob>(),
  k: field.data("k").holds<string>().type("text"),
  grp: field.group("grp"),
  retryAfter: field.retryAfter("retry_after"),
  lastError: field.lastError("last_error"),
});

/** The jobs table in `form`: keeping handled rows (a processedAt column) or deleting them. */
export function handleSpecOf(table: string, form: string, keeps: boolean) {
  if (keeps) {
    const columns = { ...columnsOf(), processedAt: field.processedAt("processed_at") };
    if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
    if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{k}" });
    return defineInbox({ table, columns });
  }
  const columns = columnsOf();
  if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{k}" });
  return defineInbox({ table, columns });
}
