/**
 * Two tests, in both forms: (1) a five-minute render under a one-minute lease on a
 * paused clock; (2) rows another process claimed, on the real clock.
 */
import { afterEach, describe, expect, test } from "vitest";
import { HandlerOutcome, minutes, seconds, silentLogger } from "@sqlinbox/runtime";
import { TestApp } from "@sqlinbox/runtime/testing";
import { reportForms, type ReportForm } from "../src/forms.js";
import { readJobs, sleep, tempReportsDb } from "./helpers.js";

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.each(Object.keys(reportForms) as ReportForm[])("%s form", (form) => {
  test("a five-minute render under a one-minute lease: extended as the clock reaches each half term, delivered once", async () => {
    const db = tempReportsDb(`long-render-${form.replace(" ", "-")}`);
    cleanups.push(db.cleanup);
    const { app, render } = reportForms[form]({ url: db.url, logger: silentLogger }); // lease 1 min, render 5 min
    const t = await TestApp.start(app);
    cleanups.push(() => t.stop());
    const reader = db.open();
    cleanups.push(() => void reader.close());
    const deadline = () => readJobs(reader)[0]?.locked_until;

    const t0 = t.clock.now().getTime();
    await t.publish("reports", { title: "Q3 revenue" });
    expect(deadline()).toBe(new Date(t0 + minutes(1)).toISOString());

    await t.advance(seconds(29));
    expect(deadline()).toBe(new Date(t0 + minutes(1)).toISOString());
    await t.advance(seconds(1)); // half the term: the keeper extends
    expect(deadline()).toBe(new Date(t0 + seconds(90)).toISOString());
    await t.advance(seconds(30));
    expect(deadline()).toBe(new Date(t0 + seconds(120)).toISOString());

    await t.advance(minutes(4)); // the render's five minutes are over
    const call = t.assertCalledOnce(render, { title: "Q3 revenue" });
    expect(call.attempt).toBe(1);
    expect(call.outcome).toEqual(HandlerOutcome.ack());
    expect(call.error).toBeUndefined();
    expect(call.signalAborted).toBe(false);
    expect(readJobs(reader)).toEqual([]);
    expect(t.logs.find("leases extended").length).toBeGreaterThanOrEqual(9);

    await t.advance(minutes(10)); // nothing comes back
    expect(t.calls(render)).toHaveLength(1);
  });

  test("rows claimed by another process: only the one whose lease expired comes back", async () => {
    const db = tempReportsDb(`expired-lease-${form.replace(" ", "-")}`);
    cleanups.push(db.cleanup);
    const pollInterval = 300;
    const { app, render } = reportForms[form]({ url: db.url, logger: silentLogger, pollInterval, pace: { steps: 1, stepMs: 10 } });
    const t = await TestApp.startLive(app);
    cleanups.push(() => t.stop());

    const writer = db.open();
    cleanups.push(() => void writer.close());
    const now = Date.now();
    // Claimed once by the other process: its claim delivered attempt 1 and counted the column to 2.
    const insert = writer.prepare("INSERT INTO report_jobs (id, attempt, locked_until, payload) VALUES (?, 2, ?, ?)");
    writer.transaction(() => {
      insert.run(1, new Date(now - minutes(1)).toISOString(), Buffer.from(JSON.stringify({ title: "expired" })));
      insert.run(2, new Date(now + minutes(10)).toISOString(), Buffer.from(JSON.stringify({ title: "still held" })));
    })();

    // These rows wake no subscription: the next poll finds the expired one.
    await t.waitFor(() => t.calls(render).some((c) => c.outcome !== undefined), 5000, "the expired row to be delivered");
    await sleep(pollInterval * 3); // longer than the poll interval: the held row stays out
    const call = t.assertCalledOnce(render, { title: "expired" });
    expect(call.attempt).toBe(2);
    expect(call.outcome).toEqual(HandlerOutcome.ack());
    const rows = readJobs(writer);
    expect(rows.map((r) => [r.id, r.attempt, r.locked_until])).toEqual([[2, 2, new Date(now + minutes(10)).toISOString()]]);
  });
});
