/**
 * A real crash: the worker runs as a child process and is killed with SIGKILL mid-render.
 * The report comes back only when its lease expires, the next worker reads attempt 2, and
 * renders it exactly once.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import type { ReportForm } from "../src/forms.js";
import { readJobs, sleep, tempReportsDb } from "./helpers.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const LEASE_MS = 2000;

interface LogLine {
  readonly msg: string;
  readonly time: number;
  readonly attempt?: number;
  readonly level: number;
  readonly [key: string]: unknown;
}

interface Worker {
  readonly child: ChildProcess;
  readonly lines: LogLine[];
  waitFor(predicate: (line: LogLine) => boolean, timeoutMs: number, what: string): Promise<LogLine>;
  exited: Promise<number | null>;
}

function startWorker(url: string, form: ReportForm): Worker {
  const child = spawn(process.execPath, ["--import", "tsx", "--conditions=@sqlinbox/source", "src/worker.ts"], {
    cwd: root,
    env: {
      ...process.env,
      REPORTS_URL: url,
      REPORTS_FORM: form,
      REPORTS_LEASE_MS: String(LEASE_MS),
      REPORTS_POLL_MS: "100",
      REPORTS_STEPS: "6",
      REPORTS_STEP_MS: "200",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
    try {
      lines.push(JSON.parse(text) as LogLine);
    } catch {
      return;
    }
    for (const w of waiters) w();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    waitFor: (predicate, timeoutMs, what) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(predicate);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`worker ${child.pid}: no ${what} within ${timeoutMs} ms; log: ${lines.map((l) => l.msg).join(" | ")}; stderr: ${stderr}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

const workers: Worker[] = [];
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const w of workers.splice(0)) if (w.child.exitCode === null) w.child.kill("SIGKILL");
  for (const c of cleanups.splice(0)) c();
});

describe.each(["declarative", "by hand"] as ReportForm[])("%s form", (form) => {
  test("SIGKILL mid-render: the report returns when the lease expires, attempt 2, rendered exactly once", async () => {
    const db = tempReportsDb(`crash-${form.replace(" ", "-")}`);
    cleanups.push(db.cleanup);
    const sqlite = db.open();
    cleanups.push(() => void sqlite.close());
    sqlite.prepare("INSERT INTO report_jobs (payload) VALUES (?)").run(Buffer.from(JSON.stringify({ title: "Q3 revenue" })));

    const first = startWorker(db.url, form);
    workers.push(first);
    await first.waitFor((l) => l.msg === "rendering", 15_000, "render progress");
    first.child.kill("SIGKILL");
    await first.exited;
    const [held] = readJobs(sqlite);
    expect(held?.attempt).toBe(2); // the killed claim delivered attempt 1 and counted the column to 2
    expect(first.lines.some((l) => l.msg === "report rendered")).toBe(false);
    const deadline = new Date(held?.locked_until ?? 0).getTime();

    const second = startWorker(db.url, form);
    workers.push(second);
    const again = await second.waitFor((l) => l.msg === "rendering again after a lost attempt", 15_000, "the second attempt");
    expect(again.attempt).toBe(2);
    expect(again.time).toBeGreaterThanOrEqual(deadline); // not before the lease expired
    await second.waitFor((l) => l.msg === "report rendered", 15_000, "the render");
    await sleep(500);
    expect(second.lines.filter((l) => l.msg === "report rendered").map((l) => l.attempt)).toEqual([2]);
    expect(readJobs(sqlite)).toEqual([]);

    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    expect(second.lines.some((l) => l.msg === "app stopped")).toBe(true);
  });
});
