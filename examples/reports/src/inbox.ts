/**
 * The report jobs table and its queue, in a module that only describes them: the app imports it, and
 * `sqlinbox ddl --module`, `status --module` and `asyncapi --module` read it without starting anything.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { InboxQueue } from "@sqlinbox/runtime";
import type { Report } from "./report.js";

export const RenderReport = defineInbox({
  table: "report_jobs",
  columns: {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    lockedUntil: field.lease("locked_until"),
    payload: field.payload<Report>(),
  },
});

/** The subscription's route; the app sets its lease, workers and poll interval. */
export const reportsQueue = InboxQueue.of(RenderReport, "reports");
