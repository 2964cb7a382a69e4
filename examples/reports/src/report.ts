import type { InboxContext, Logger } from "@sqlinbox/runtime";

/** What a report job carries. */
export interface Report {
  readonly title: string;
  /** Demo only: the first attempt fails, so the second shows its attempt. */
  readonly failFirstAttempt?: boolean;
}

/**
 * The table's schema. The attempt column holds the attempt the next claim delivers: it starts at 1,
 * each claim delivers the value and counts one more, so the first delivery reads 1 and the one
 * after a crash (which spent an attempt) reads 2.
 */
export const CREATE_REPORT_JOBS = `
CREATE TABLE IF NOT EXISTS report_jobs (
    id INTEGER PRIMARY KEY,
    attempt INTEGER NOT NULL DEFAULT 1,
    locked_until TEXT,
    payload BLOB NOT NULL
)`;

/** How long a render takes: `steps` steps of `stepMs` each, on the app's clock. */
export interface RenderPace {
  readonly steps: number;
  readonly stepMs: number;
}

/**
 * Says why a report is rendered again (attempt 2 or later): after the failure the demo causes on
 * purpose (`failFirstAttempt`, attempt 2) that is expected, an info line; otherwise an earlier
 * attempt was lost (its worker crashed or stopped before the ack, and the lease ran out), a warning.
 */
export function logRenderAgain(log: Logger, report: Report, attempt: number): void {
  if (attempt <= 1) return;
  if (report.failFirstAttempt === true && attempt === 2) log.info({ title: report.title, attempt }, "rendering again after the first attempt failed on purpose");
  else log.warn({ title: report.title, attempt }, "rendering again after a lost attempt");
}

/** Draws a report step by step, logging progress; waits on the app's clock (a paused clock skips them). */
export async function draw(report: Report, ctx: InboxContext, log: Logger, pace: RenderPace, attempt: number): Promise<void> {
  if (report.failFirstAttempt && attempt === 1) {
    await ctx.sleep(pace.stepMs);
    throw new Error(`the printer jammed on "${report.title}" (first attempt fails on purpose)`);
  }
  for (let step = 1; step <= pace.steps; step++) {
    await ctx.sleep(pace.stepMs);
    const done = Math.round((step / pace.steps) * 100);
    log.info({ title: report.title, attempt, progress: `${"#".repeat(step)}${".".repeat(pace.steps - step)} ${done}%` }, "rendering");
  }
}
