import Database from "better-sqlite3";
import { CREATE_REPORT_JOBS } from "./report.js";

/**
 * The startup hook: opens its own connection, creates the table if missing, closes it.
 * It runs before the broker connects, so the subscription's schema check finds the table.
 */
export function createReportJobs(url: string): () => void {
  return () => {
    if (!url.startsWith("sqlite:")) throw new Error(`the example's startup hook creates its table on SQLite only, got ${url.split(":")[0]}`);
    const db = new Database(url.slice("sqlite:".length));
    try {
      db.exec(CREATE_REPORT_JOBS);
    } finally {
      db.close();
    }
  };
}
