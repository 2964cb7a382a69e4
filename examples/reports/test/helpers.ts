import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createReportJobs } from "../src/create-table.js";

/** A fresh SQLite file with the report_jobs table; removed by `cleanup`. */
export function tempReportsDb(prefix: string): { url: string; file: string; open: () => Database.Database; cleanup: () => void } {
  const file = join(tmpdir(), `sqlinbox-${prefix}-${randomUUID()}.db`);
  const url = `sqlite:${file}`;
  createReportJobs(url)();
  return {
    url,
    file,
    open: () => {
      const db = new Database(file);
      db.pragma("busy_timeout = 5000");
      return db;
    },
    cleanup: () => {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
    },
  };
}

export interface JobRow {
  id: number;
  attempt: number;
  locked_until: string | null;
  payload: Buffer;
}

export function readJobs(db: Database.Database): JobRow[] {
  return db.prepare("SELECT id, attempt, locked_until, payload FROM report_jobs ORDER BY id").all() as JobRow[];
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
