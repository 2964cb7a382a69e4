/**
 * OpenTelemetry through the SDK's in-memory exporters: a span per publish and per delivery (the
 * handler's own spans its children), a receive span per claim that brought rows, and the metrics
 * after a drain, on every engine.
 */
import { trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { HandlerOutcome, InboxQueue, SqlBroker, App, silentLogger, subscriber } from "../../src/index.js";
import { engines, unique } from "../support/engines.js";
import { deferred, jobsApp, jobsSpec, useLeaseTable, type LeaseTableScope } from "../support/fixtures.js";
import { countOf, startOtelSdk, sumOf, type OtelSdk } from "../support/otel-sdk.js";
import { createJobsTable, insertJobs, jobsSpecOf, serverEngines, until } from "../support/claim-forms.js";

let sdk: OtelSdk;
beforeAll(() => {
  sdk = startOtelSdk();
});
afterAll(async () => {
  await sdk.shutdown();
});

const dbSystem = { sqlite: "sqlite", postgres: "postgresql", mariadb: "mariadb" } as const;

describe.each(engines)("telemetry on $name", (engine) => {
  let scope: LeaseTableScope;
  const track = useLeaseTable(engine, "otel", (s) => {
    scope = s;
  });

  test("a span per publish and per delivery, the handler's spans its children; metrics after the drain", async () => {
    sdk.reset();
    const failedOnce = new Set<number>();
    const { app } = jobsApp(scope.url, scope.table, async (job) => {
      trace.getTracer("handler").startSpan("render").end();
      if (job.n === 3 && !failedOnce.has(job.n)) {
        failedOnce.add(job.n);
        throw new Error("the first render of job 3 fails");
      }
      return HandlerOutcome.ack();
    });
    const running = track(await app.start());
    for (let n = 0; n < 5; n++) await running.publish("jobs", { n });
    await until(async () => sdk.spansNamed("jobs process").length === 6, 15_000, "six deliveries (five acks, one retry by the default onError backoff)");

    const publishes = sdk.spansNamed("jobs publish");
    expect(publishes).toHaveLength(5);
    expect(publishes[0]?.kind).toBe(3); // PRODUCER
    expect(publishes[0]?.attributes).toMatchObject({
      "messaging.system": "sqlinbox",
      "messaging.destination.name": "jobs",
      "messaging.operation.type": "send",
      "db.system.name": dbSystem[engine.name],
      "db.collection.name": scope.table,
    });
    expect(publishes.every((s) => typeof s.attributes["messaging.message.id"] === "string")).toBe(true);

    const processes = sdk.spansNamed("jobs process");
    expect(processes.every((s) => s.kind === 4)).toBe(true); // CONSUMER
    expect(processes[0]?.attributes).toMatchObject({
      "messaging.system": "sqlinbox",
      "messaging.destination.name": "jobs",
      "messaging.operation.type": "process",
      "db.system.name": dbSystem[engine.name],
      "sqlinbox.claim_form": "lease",
    });
    expect(processes.map((s) => s.attributes["sqlinbox.outcome"]).sort()).toEqual(["ack", "ack", "ack", "ack", "ack", "retryAfter"]);
    expect(processes.filter((s) => s.status.code === 0).length).toBe(6);
    expect(processes.filter((s) => s.events.some((e) => e.name === "exception"))).toHaveLength(1);

    // Each handler span is the child of its delivery's span.
    const renders = sdk.spansNamed("render");
    expect(renders).toHaveLength(6);
    const processIds = new Set(processes.map((s) => s.spanContext().spanId));
    expect(renders.every((s) => s.parentSpanContext !== undefined && processIds.has(s.parentSpanContext.spanId))).toBe(true);

    const receives = sdk.spansNamed("jobs receive");
    expect(receives.length).toBeGreaterThan(0);
    expect(receives.reduce((sum, s) => sum + Number(s.attributes["messaging.batch.message_count"]), 0)).toBe(6);

    const deliveries = await sdk.points("sqlinbox.deliveries");
    const mine = { "messaging.destination.name": "jobs", "db.collection.name": scope.table };
    expect(sumOf(deliveries, { ...mine, "sqlinbox.outcome": "ack" })).toBe(5);
    expect(sumOf(deliveries, { ...mine, "sqlinbox.outcome": "retryAfter" })).toBe(1);
    const handlerDurations = await sdk.points("messaging.process.duration");
    expect(countOf(handlerDurations, mine)).toBe(6);
    expect(countOf(handlerDurations, { ...mine, "error.type": "Error" })).toBe(1);
    expect(countOf(await sdk.points("sqlinbox.claim.duration"), { ...mine, "sqlinbox.claim_form": "lease" })).toBeGreaterThan(0);
    expect(sumOf(await sdk.points("sqlinbox.deadlocks.retried"), { "db.system.name": dbSystem[engine.name] })).toBe(0);
    expect(sumOf(await sdk.points("sqlinbox.leases.lost"), mine)).toBe(0);
  });

  test("queue depth counts the rows still to be finished, those in work included", async () => {
    const release = deferred();
    const started = deferred();
    const spec = jobsSpec(scope.table);
    for (let n = 0; n < 3; n++)
      await scope.db
        .insertInto(scope.table)
        .values({ payload: Buffer.from(JSON.stringify({ n })) })
        .execute();
    const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).workers(1), async () => {
      started.resolve();
      await release.promise;
    });
    const app = new App({ name: "t", version: "0", logger: silentLogger }).withBroker(SqlBroker.fromUrl(scope.url, { pool: { max: 4 } }).route(spec, "jobs"), (b) =>
      b.include(sub),
    );
    const running = track(await app.start());
    await started.promise;
    const depth = await sdk.points("sqlinbox.queue.depth");
    expect(depth.find((p) => p.attributes["db.collection.name"] === scope.table)?.value).toBe(3);
    release.resolve();
    await until(async () => (await scope.db.selectFrom(scope.table).select("id").execute()).length === 0, 10_000, "the drain");
    await running.stop();
  });
});

describe.each(serverEngines)("connections held on $name", (engine) => {
  test("one per row-lock delivery in work", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("otel_held");
    await createJobsTable(engine, db, table);
    const release = deferred();
    let inWork = 0;
    const spec = jobsSpecOf(table, "rowLock");
    const sub = subscriber(InboxQueue.of(spec, "jobs").workers(2), async () => {
      inWork++;
      await release.promise;
    });
    const running = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "jobs"), (b) => b.include(sub))
      .start();
    try {
      await insertJobs(db, table, 3);
      await until(() => inWork === 2, 10_000, "two deliveries in work");
      expect(sumOf(await sdk.points("sqlinbox.pool.connections.held"))).toBe(2);
      expect((await sdk.points("sqlinbox.queue.depth")).find((p) => p.attributes["db.collection.name"] === table)?.value).toBe(3);
    } finally {
      release.resolve();
      await running.stop();
      await engine.dropTable(db, table);
      await db.destroy();
    }
  });
});
