/**
 * The example's worker as a process of its own (the crash test starts it, kills it, starts another):
 * runs one form on a SQLite file until SIGINT/SIGTERM, logging JSON lines with pino.
 *
 *   REPORTS_URL=sqlite:/tmp/r.db REPORTS_FORM=declarative REPORTS_LEASE_MS=2000 npm run worker
 */
import { pino } from "pino";
import { reportForms, type ReportForm } from "./forms.js";
import { LEASE } from "./options.js";

const env = (name: string): string | undefined => process.env[name];
const url = env("REPORTS_URL") ?? "sqlite:data/reports.db";
const form = (env("REPORTS_FORM") ?? "declarative") as ReportForm;
if (!(form in reportForms)) throw new Error(`REPORTS_FORM must be one of ${Object.keys(reportForms).join(", ")}`);

const logger = pino({ base: { pid: process.pid, form } });
const { app } = reportForms[form]({
  url,
  logger,
  lease: Number(env("REPORTS_LEASE_MS") ?? LEASE),
  pollInterval: Number(env("REPORTS_POLL_MS") ?? 1000),
  pace: { steps: Number(env("REPORTS_STEPS") ?? 10), stepMs: Number(env("REPORTS_STEP_MS") ?? 30_000) },
});
await app.run();
