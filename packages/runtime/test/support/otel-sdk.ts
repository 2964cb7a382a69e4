/**
 * The OpenTelemetry SDK as a test configures it: in-memory span and metric exporters behind the
 * global providers, the W3C propagator, and an AsyncLocalStorage context manager.
 */
import { context, metrics, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type DataPoint, type Histogram } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";

export interface OtelSdk {
  readonly spans: InMemorySpanExporter;
  /** Collects every instrument now and returns the points of metric `name`. */
  points(name: string): Promise<DataPoint<unknown>[]>;
  /** The spans named `name`. */
  spansNamed(name: string): ReadableSpan[];
  reset(): void;
  shutdown(): Promise<void>;
}

export function startOtelSdk(): OtelSdk {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return {
    spans,
    async points(name) {
      metricExporter.reset();
      await reader.forceFlush();
      const exported = metricExporter.getMetrics().at(-1);
      const metric = exported?.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
      return (metric?.dataPoints ?? []) as DataPoint<unknown>[];
    },
    spansNamed: (name) => spans.getFinishedSpans().filter((s) => s.name === name),
    reset: () => spans.reset(),
    async shutdown() {
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** The sum of the counter points whose attributes include `match`. */
export function sumOf(points: readonly DataPoint<unknown>[], match: Record<string, unknown> = {}): number {
  return points.filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v)).reduce((sum, p) => sum + Number(p.value), 0);
}

/** The number of recordings of the histogram points whose attributes include `match`. */
export function countOf(points: readonly DataPoint<unknown>[], match: Record<string, unknown> = {}): number {
  return points.filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v)).reduce((sum, p) => sum + (p.value as Histogram).count, 0);
}
