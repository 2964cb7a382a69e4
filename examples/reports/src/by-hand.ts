/**
 * The report-rendering example, by hand: the table described with the typed builder, the handler a class
 * implementing `Handler` that extracts the attempt from the context itself.
 */
import { InboxSpec, column, payloadOf, type Attempt, type Lease, type Payload } from "@sqlinbox/core";
import { App, Ctx, InboxQueue, SqlBroker, keys, subscriber, type Handler, type InboxContext, type Logger, type Outputs } from "@sqlinbox/runtime";
import { createReportJobs } from "./create-table.js";
import { resolved, type ReportsOptions } from "./options.js";
import { draw, logRenderAgain, type RenderPace, type Report } from "./report.js";

const RenderReportSpec: InboxSpec<[Attempt, Lease<Date>, Payload<Report>], "id" | "attempt" | "locked_until" | "payload"> = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .payload(column("payload"), payloadOf<Report>());

class RenderHandler implements Handler<typeof RenderReportSpec> {
  constructor(
    private readonly log: Logger,
    private readonly pace: RenderPace,
    private readonly onRendered: (report: Report, attempt: number) => void,
  ) {}

  async handle(report: Report, _outs: Outputs, ctx: InboxContext<[Attempt, Lease<Date>, Payload<Report>]>): Promise<void> {
    const attempt = Ctx(keys.attempt).from(ctx);
    logRenderAgain(this.log, report, attempt);
    await draw(report, ctx, this.log, this.pace, attempt);
    this.log.info({ title: report.title, attempt }, "report rendered");
    this.onRendered(report, attempt);
    // returning nothing acks
  }
}

export function byHandReports(options: ReportsOptions) {
  const { lease, pace, workers, pollInterval, log, onRendered } = resolved(options);
  const broker = SqlBroker.fromUrl(options.url, { pool: { max: 10 } }).route(RenderReportSpec, "reports");
  const render = subscriber(InboxQueue.of(RenderReportSpec, "reports").lease(lease).workers(workers).pollInterval(pollInterval), new RenderHandler(log, pace, onRendered));
  const app = new App({ name: "reports", version: "0.1.0", logger: log }).onStartup(createReportJobs(options.url)).withBroker(broker, (b) => b.include(render));
  return { app, broker, render };
}
