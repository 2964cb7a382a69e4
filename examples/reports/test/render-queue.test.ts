/**
 * The example tested the way an application tests its queue, in both forms: what was published
 * (`assertPublished`), every report rendered by `drain` on the paused clock (the one whose first attempt
 * fails on purpose comes back as attempt 2), and one render run on its own with `performJob`.
 */
import { afterEach, describe, expect, test } from "vitest";
import { HandlerOutcome, minutes, seconds } from "@sqlinbox/runtime";
import { MemoryLogger, TestApp } from "@sqlinbox/runtime/testing";
import { reportForms, type ReportForm } from "../src/forms.js";
import type { Report } from "../src/report.js";
import { readJobs, tempReportsDb } from "./helpers.js";

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.each(Object.keys(reportForms) as ReportForm[])("%s form", (form) => {
  /** The example's app on a fresh SQLite file, its reports rendered in five minutes each, its log kept. */
  async function reports() {
    const db = tempReportsDb(`render-queue-${form.replace(" ", "-")}`);
    cleanups.push(db.cleanup);
    const log = new MemoryLogger();
    const rendered: Array<[string, number]> = [];
    const { app, render } = reportForms[form]({ url: db.url, logger: log, onRendered: (report, attempt) => void rendered.push([report.title, attempt]) });
    const t = await TestApp.start(app);
    cleanups.push(() => t.stop());
    const reader = db.open();
    cleanups.push(() => void reader.close());
    return { t, render, log, rendered, rows: () => readJobs(reader) };
  }

  test("three reports published and drained on the paused clock: each rendered once, the failing one on its second attempt", async () => {
    const { t, render, log, rendered, rows } = await reports();
    const started = t.clock.now().getTime();
    const titles: Report[] = [{ title: "Q3 revenue" }, { title: "Churn by region", failFirstAttempt: true }, { title: "Headcount" }];
    for (const report of titles) await t.publish("reports", report);
    t.assertPublished("reports", { title: "Churn by region", failFirstAttempt: true });
    t.assertPublished("reports", undefined, { times: 3 });

    const ran = await t.drain({ route: "reports" });
    expect(ran.map((c) => [(c.payload as Report).title, c.attempt, c.outcome?.kind])).toEqual([
      ["Q3 revenue", 1, "ack"],
      ["Churn by region", 1, "retryAfter"],
      ["Headcount", 1, "ack"],
      ["Churn by region", 2, "ack"],
    ]);
    expect(rendered).toEqual([
      ["Q3 revenue", 1],
      ["Headcount", 1],
      ["Churn by region", 2],
    ]);
    t.assertCalled(render, 4);
    expect(rows()).toEqual([]);
    expect(log.find("rendering again after the first attempt failed on purpose")).toHaveLength(1);
    expect(log.find("lost attempt")).toEqual([]);
    // Three five-minute renders, one at a time, and the failed attempt's backoff.
    expect(t.clock.now().getTime() - started).toBeGreaterThanOrEqual(minutes(15));
  });

  test("performJob renders one report now, with no row: attempt 1 of the failing report fails as the demo wants, attempt 2 renders", async () => {
    const { t, render, rendered, rows } = await reports();
    // A render waits on the app's clock: the test moves it while the job runs.
    const firstJob = t.performJob(render, { title: "Churn by region", failFirstAttempt: true }, { attempt: 1 });
    await t.advance(seconds(30));
    const first = await firstJob;
    expect(first.outcome.kind).toBe("retryAfter"); // the default policy: back after a backoff
    expect((first.error as Error).message).toBe('the printer jammed on "Churn by region" (first attempt fails on purpose)');
    const second = t.performJob(render, { title: "Churn by region", failFirstAttempt: true }, { attempt: 2 });
    await t.advance(minutes(5));
    expect(await second).toEqual({ outcome: HandlerOutcome.ack() });
    expect(rendered).toEqual([["Churn by region", 2]]);
    expect(rows()).toEqual([]);
    t.assertNotCalled(render);
  });
});
