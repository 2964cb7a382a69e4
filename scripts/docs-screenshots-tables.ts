// The tables the docs' dashboard screenshots show (read by `sqlinbox dashboard --module`, see
// docs-screenshots.ts): report jobs on a lease, with a key and a customer column, and their dead letters.
import { column, InboxSpec } from "@sqlinbox/core";

export const ReportJobs = InboxSpec.table("reports_lease", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .retryAfter(column("retry_after"))
  .processedAt(column("processed_at"))
  .payload(column("payload"))
  .key(column("dedup_key"))
  .lastError(column("last_error"))
  .data(column("customer").type("text"));

export const DeadReports = InboxSpec.table("reports_dead", column("id").generated())
  .failedAttempts(column("attempts"))
  .payload(column("payload"))
  .lastError(column("last_error"))
  .data(column("customer").type("text"));

export const deadLetters = [{ source: ReportJobs, destination: DeadReports }];
