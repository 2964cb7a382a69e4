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

for (const form of Object.keys(reportForms) as ReportForm[]) {
  console.log(`\n=== ${form} form: ${reports.length} reports on sqlite:${file} (lease ${LEASE / 1000} s) ===`);
  const rendered = new Set<string>();
  let allRendered!: () => void;
  const done = new Promise<void>((resolve) => (allRendered = resolve));
  const { app, broker } = reportForms[form]({
    url: `sqlite:${file}`,
    pace: { steps: 4, stepMs: 300 },
    workers: 2,
    logger: consoleLogger(),
    onRendered: (report) => {
      rendered.add(report.title);
      if (rendered.size === reports.length) allRendered();
    },
  });
  const running = await app.start();
  for (const report of reports) await broker.publish("reports", report);
  await done;
  await running.stop();
}
console.log("\nall reports rendered; bye");
