/**
 * The report-rendering example, declarative form: the table described with `defineInbox` (in inbox.ts), the handler a function.
 */
import { App, HandlerOutcome, SqlBroker, keys, subscriber } from "@sqlinbox/runtime";
import { createReportJobs } from "./create-table.js";
import { resolved, type ReportsOptions } from "./options.js";
import { RenderReport, reportsQueue } from "./inbox.js";
import { draw, logRenderAgain } from "./report.js";

export function declarativeReports(options: ReportsOptions) {
  const { lease, pace, workers, pollInterval, log, onRendered } = resolved(options);
  const broker = SqlBroker.fromUrl(options.url, { pool: { max: 10 } }).route(RenderReport, "reports"); // nothing connects here

  const render = subscriber(reportsQueue.lease(lease).workers(workers).pollInterval(pollInterval), async (report, ctx) => {
    const attempt = ctx.get(keys.attempt);
    logRenderAgain(log, report, attempt);
    await draw(report, ctx, log, pace, attempt);
    log.info({ title: report.title, attempt }, "report rendered");
    onRendered(report, attempt);
    return HandlerOutcome.ack();
  });

  const app = new App({ name: "reports", version: "0.1.0", logger: log }).onStartup(createReportJobs(options.url)).withBroker(broker, (b) => b.include(render));
  return { app, broker, render };
}
