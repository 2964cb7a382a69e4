/**
 * The publish → delivery link through `traceparent`, the lease-lost counter, and the queue depth
 * sampler. The link runs through the telemetry's own publish and delivery hooks on a table
 * description with a headers column, and end to end through `broker.publish` on a SQLite table with one.
 */
import { trace } from "@opentelemetry/api";
import type { InboxDescription } from "@sqlinbox/core/internal";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ClaimedDelivery } from "../../src/claim/claim-strategy.js";
import { defineInbox, field } from "@sqlinbox/core";
import { sql } from "kysely";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, seconds, silentLogger, subscriber, type SqlInboxError } from "../../src/index.js";
import { until } from "../support/claim-forms.js";
import { PausedClock, TestApp } from "../../src/testing/index.js";
import { DEPTH_SAMPLE_MS, DepthSampler } from "../../src/telemetry/depth-sampler.js";
import { loadTelemetry } from "../../src/telemetry/load-telemetry.js";
import type { ObservedSubscription } from "../../src/telemetry/telemetry.js";
import { engineNamed } from "../support/engines.js";
import { deferred, jobsApp, useLeaseTable, type LeaseTableScope } from "../support/fixtures.js";
import { startOtelSdk, sumOf, type OtelSdk } from "../support/otel-sdk.js";

let sdk: OtelSdk;
beforeAll(() => {
  sdk = startOtelSdk();
});
afterAll(async () => {
  await sdk.shutdown();
});

const withHeaders = {
  table: "report_jobs",
  id: { name: "id", key: "id", role: "id", generated: true },
  headers: { name: "headers", key: "headers", role: "headers", generated: false },
  columns: [],
} as unknown as InboxDescription;

function claimedRow(row: Record<string, unknown>): ClaimedDelivery {
  return { id: 7, row, attempt: 1, signal: new AbortController().signal } as unknown as ClaimedDelivery;
}

describe("traceparent", () => {
  test("a publish writes traceparent into the headers column; the delivery's span is its child and links to it", async () => {
    sdk.reset();
    const telemetry = await loadTelemetry({ enabled: true });
    const row: Record<string, unknown> = { headers: JSON.stringify({ tenant: "acme" }) };
    telemetry.publisher({ dbSystem: "postgresql" })?.begin("reports", withHeaders, row).end(undefined, 7);
    const [published] = sdk.spansNamed("reports publish");
    const publishedId = published?.spanContext().spanId;
    const headers = JSON.parse(String(row["headers"])) as Record<string, string>;
    expect(headers["tenant"]).toBe("acme");
    expect(headers["traceparent"]).toBe(`00-${published?.spanContext().traceId}-${publishedId}-01`);

    const place = { route: "reports", table: "report_jobs", form: "lease", dbSystem: "postgresql", headersColumn: "headers" };
    const delivery = telemetry.subscription(place)?.begin(claimedRow({ id: 7, headers }));
    delivery?.end("ack", undefined, new AbortController().signal);
    const [processed] = sdk.spansNamed("reports process");
    expect(processed?.spanContext().traceId).toBe(published?.spanContext().traceId);
    expect(processed?.parentSpanContext?.spanId).toBe(publishedId);
    expect(processed?.links.map((l) => l.context.spanId)).toEqual([publishedId]);
    expect(processed?.attributes["messaging.message.id"]).toBe("7");
  });

  test("without a headers column, or with headers that carry no traceparent, the delivery's span starts a trace of its own", async () => {
    sdk.reset();
    const telemetry = await loadTelemetry({ enabled: true });
    const row: Record<string, unknown> = {};
    telemetry
      .publisher({ dbSystem: "sqlite" })
      ?.begin("reports", { ...withHeaders, headers: undefined } as unknown as InboxDescription, row)
      .end(undefined, 1);
    expect(row).toEqual({});
    const place = { route: "reports", table: "report_jobs", form: "advisory", dbSystem: "sqlite", headersColumn: "headers" };
    telemetry
      .subscription(place)
      ?.begin(claimedRow({ headers: '{"tenant":"acme"}' }))
      .end("retry", undefined, new AbortController().signal);
    const [processed] = sdk.spansNamed("reports process");
    expect(processed?.parentSpanContext).toBeUndefined();
    expect(processed?.links).toEqual([]);
    expect(trace.getActiveSpan()).toBeUndefined();
  });
});

describe("leases lost", () => {
  const engine = engineNamed("sqlite"); // the paused clock makes the loss deterministic
  let scope: LeaseTableScope;
  const track = useLeaseTable(engine, "otel_lost", (s) => {
    scope = s;
  });

  test("a delivery whose lease was lost (its signal aborted with LeaseLost) counts once", async () => {
    const clock = new PausedClock();
    const release = deferred();
    const reasons: unknown[] = [];
    // No poll within the test: the row is claimed again only by the wake its loss brings.
    const { app, sub } = jobsApp(
      scope.url,
      scope.table,
      async (_job, ctx) => {
        await release.promise;
        reasons.push(ctx.signal.reason);
        return HandlerOutcome.ack();
      },
      (q) => q.pollInterval(seconds(60)),
    );
    const t = track(await TestApp.start(app, { clock }));
    await t.publish("jobs", { n: 1 });
    t.failStatements("extend");
    await t.advance(seconds(1)); // half the 2 s lease: the extension fails
    await t.advance(seconds(2)); // past the lease: lost
    release.resolve();
    await t.settle();
    const lost = reasons.filter((r) => (r as SqlInboxError | undefined)?.code === "LeaseLost");
    expect(lost).toHaveLength(1);
    const mine = { "db.collection.name": scope.table };
    expect(sumOf(await sdk.points("sqlinbox.leases.lost"), mine)).toBe(1);
    expect(sumOf(await sdk.points("sqlinbox.deliveries"), mine)).toBe(t.calls(sub).length);
    const spans = sdk.spansNamed("jobs process").filter((s) => s.attributes["db.collection.name"] === scope.table);
    expect(spans).toHaveLength(t.calls(sub).length);
  });
});

describe("DepthSampler", () => {
  test("counts at most once per sample period, and keeps the last count when a count fails", async () => {
    let now = 0;
    let counts = 0;
    let fail = false;
    const sub = {
      countDepth: async () => {
        counts++;
        if (fail) throw new Error("database unreachable");
        return 10 * counts;
      },
    } as unknown as ObservedSubscription;
    const sampler = new DepthSampler([sub], () => now);
    expect((await sampler.sample()).get(sub)).toBe(10);
    now += DEPTH_SAMPLE_MS - 1;
    expect((await sampler.sample()).get(sub)).toBe(10);
    expect(counts).toBe(1);
    now += 1;
    expect((await sampler.sample()).get(sub)).toBe(20);
    fail = true;
    now += DEPTH_SAMPLE_MS;
    expect((await sampler.sample()).get(sub)).toBe(20);
    expect(counts).toBe(3);
  });
});

describe("traceparent end to end", () => {
  test("on SQLite: broker.publish on a table with a headers column; the delivery's process span is the publish span's child", async () => {
    sdk.reset();
    const engine = engineNamed("sqlite");
    if (engine === undefined) throw new Error("no sqlite engine");
    const url = engine.url();
    const db = await engine.connect(url);
    await sql`CREATE TABLE trace_jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, headers TEXT, payload TEXT NOT NULL)`.execute(db);
    await db.destroy();
    const spec = defineInbox({
      table: "trace_jobs",
      columns: {
        id: field.id().generated(),
        attempt: field.attempt().generated(),
        lockedUntil: field.lease("locked_until"),
        headers: field.headers(),
        payload: field.payload<{ n: number }>(),
      },
    });
    const seen = deferred<Readonly<Record<string, string>>>();
    const broker = SqlBroker.fromUrl(url).route(spec, "jobs");
    const app = new App({ name: "trace", version: "0", logger: silentLogger }).withBroker(broker, (b) =>
      b.include(
        subscriber(InboxQueue.of(spec, "jobs").pollInterval(50), async (_job, ctx) => {
          seen.resolve(ctx.get(keys.headers));
          return HandlerOutcome.ack();
        }),
      ),
    );
    const running = await app.start();
    try {
      await broker.publish("jobs", { n: 1 }, { headers: { tenant: "acme" } });
      const headers = await seen.promise;
      expect(headers["tenant"]).toBe("acme");
      const [published] = sdk.spansNamed("jobs publish");
      expect(headers["traceparent"]).toBe(`00-${published?.spanContext().traceId}-${published?.spanContext().spanId}-01`);
      await until(() => sdk.spansNamed("jobs process").length > 0, 5_000, "the process span to end");
      const [processed] = sdk.spansNamed("jobs process");
      expect(processed?.parentSpanContext?.spanId).toBe(published?.spanContext().spanId);
      expect(processed?.links.map((l) => l.context.spanId)).toEqual([published?.spanContext().spanId]);
    } finally {
      await running.stop();
      engine.cleanup();
    }
  });
});
