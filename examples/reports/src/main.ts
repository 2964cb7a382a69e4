/**
 * `npm start`: runs the report-rendering example on an embedded SQLite file, once per form.
 * Publishes a few reports, renders them with visible progress, shows attempts, and exits.
 */
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { consoleLogger } from "@sqlinbox/runtime";
import { reportForms, type ReportForm } from "./forms.js";
import { LEASE } from "./options.js";
import type { Report } from "./report.js";

const dataDir = join(dirname(fileURLToPath(import.meta.url)), "..", "data");
const file = join(dataDir, "reports.db");
mkdirSync(dataDir, { recursive: true });
for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });

const reports: Report[] = [{ title: "Q3 revenue" }, { title: "Churn by region", failFirstAttempt: true }, { title: "Support backlog" }];

const forms = Object.keys(reportForms) as ReportForm[];
let renders = 0;
let secondAttempts = 0;
for (const form of forms) {
  console.log(`\n=== ${form} form: ${reports.length} reports on sqlite:${file} (lease ${LEASE / 1000} s) ===`);
  const rendered = new Set<string>();
  let allRendered!: () => void;
  const done = new Promise<void>((resolve) => (allRendered = resolve));
  const { app, broker } = reportForms[form]({
    url: `sqlite:${file}`,
    pace: { steps: 4, stepMs: 300 },
    workers: 2,
    logger: consoleLogger(),
    onRendered: (report, attempt) => {
      renders++;
      if (attempt > 1) secondAttempts++;
      rendered.add(report.title);
      if (rendered.size === reports.length) allRendered();
    },
  });
  const running = await app.start();
  for (const report of reports) await broker.publish("reports", report);
  await done;
  // The stop report's `finished` counts only the deliveries still in work when the stop began (the
  // last report's ack, written just after it rendered), not the reports rendered before it.
  const stop = await running.stop();
  console.log(
    `${form} form: ${rendered.size} of ${reports.length} reports rendered; the stop waited for ${stop.finished} ${stop.finished === 1 ? "delivery" : "deliveries"} still settling`,
  );
}
console.log(
  `\nrendered ${renders} reports (${reports.length} in each of ${forms.length} forms), ${secondAttempts} of them on a second attempt after the failure caused on purpose; bye`,
);
