import type { Attributes, BatchObservableResult, Counter, Histogram, Meter, Observable } from "@opentelemetry/api";
import * as a from "./attributes.js";
import { DEPTH_SAMPLE_MS, DepthSampler } from "./depth-sampler.js";
import type { ObservedApp, ObservedSubscription } from "./telemetry.js";

/** Seconds: the buckets of both duration histograms (1 ms to 10 s). */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The metric instruments of one app. The observable ones (depth, connections held, deadlocks
 * retried) are read only when a metric reader collects, so with no meter provider configured
 * no depth is ever counted.
 */
export class OtelInstruments {
  readonly meter: Meter;
  readonly deliveries: Counter;
  readonly handlerDuration: Histogram;
  readonly claimDuration: Histogram;
  readonly leasesLost: Counter;

  constructor(meter: Meter) {
    this.meter = meter;
    this.deliveries = meter.createCounter(a.METRICS.deliveries, { description: "Deliveries finished, by outcome", unit: "{delivery}" });
    this.handlerDuration = meter.createHistogram(a.METRICS.handlerDuration, {
      description: "How long handlers ran",
      unit: "s",
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.claimDuration = meter.createHistogram(a.METRICS.claimDuration, {
      description: "How long claim statements took, empty ones included",
      unit: "s",
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.leasesLost = meter.createCounter(a.METRICS.leasesLost, { description: "Deliveries whose lease was lost before they settled", unit: "{lease}" });
  }

  /** Registers the observable instruments over a running app; returns what unregisters them (at stop). */
  observe(app: ObservedApp): () => void {
    const deadlocks = this.meter.createObservableCounter(a.METRICS.deadlocksRetried, { description: "MySQL/MariaDB deadlocks retried transparently", unit: "{deadlock}" });
    const depth = this.meter.createObservableGauge(a.METRICS.queueDepth, {
      description: `Rows still to be finished per route (ready, delayed or in work), counted at most every ${DEPTH_SAMPLE_MS / 1000} s`,
      unit: "{row}",
    });
    const held = this.meter.createObservableGauge(a.METRICS.connectionsHeld, {
      description: "Pool connections held: one per row-lock or advisory delivery in work, one per statement running",
      unit: "{connection}",
    });
    const depths = new DepthSampler(app.subscriptions);
    const observables: Observable[] = [deadlocks, depth, held];
    const callback = async (result: BatchObservableResult): Promise<void> => {
      for (const database of app.databases) result.observe(deadlocks, database.deadlocksRetried(), { [a.MESSAGING_SYSTEM]: a.SYSTEM, [a.DB_SYSTEM_NAME]: database.dbSystem });
      let deliveriesHolding = 0;
      for (const sub of app.subscriptions) deliveriesHolding += sub.inFlight() * sub.connectionsPerDelivery;
      const running = app.databases.reduce((sum, database) => sum + database.running(), 0);
      result.observe(held, deliveriesHolding + running, { [a.MESSAGING_SYSTEM]: a.SYSTEM });
      for (const [sub, rows] of await depths.sample()) result.observe(depth, rows, depthPoints(sub));
    };
    this.meter.addBatchObservableCallback(callback, observables);
    return () => this.meter.removeBatchObservableCallback(callback, observables);
  }
}

function depthPoints(sub: ObservedSubscription): Attributes {
  return { [a.MESSAGING_SYSTEM]: a.SYSTEM, [a.DESTINATION_NAME]: sub.route, [a.DB_COLLECTION_NAME]: sub.table };
}
