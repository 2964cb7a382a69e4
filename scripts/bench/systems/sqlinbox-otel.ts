/**
 * The telemetry cost (issue 11): W1 Postgres and SQLite lease `b64-w8` three ways, side by side —
 * `absent`: `telemetry: false`, the no-op the runtime also runs when `@opentelemetry/api` cannot be
 * resolved (nothing imported, one `undefined` check per hook); `installed`: the API loaded with no
 * SDK registered (non-recording spans, no-op meter); `sdk`: the SDK's tracer and meter providers
 * registered, spans batched to an exporter that drops them, metrics read every second.
 */
import { sqlinboxDrainCase } from "./sqlinbox.js";
import type { DrainCase, EngineName } from "../types.js";

type OtelMode = "absent" | "installed" | "sdk";
const MODES: readonly OtelMode[] = ["absent", "installed", "sdk"];
const ENGINES: readonly EngineName[] = ["postgres", "sqlite"];

/** Every telemetry case, modes of one engine next to each other. */
export function otelDrainCases(): DrainCase[] {
  return ENGINES.flatMap((engine) => MODES.map((mode) => otelDrainCase(engine, mode)));
}

function otelDrainCase(engine: EngineName, mode: OtelMode): DrainCase {
  const inner = sqlinboxDrainCase(engine, "lease", 64, 8, "row", { telemetry: mode !== "absent" });
  return {
    ...inner,
    id: `${inner.id} otel=${mode}`,
    settings: { ...inner.settings, otel: mode },
    async check() {
      const reason = await inner.check();
      if (reason !== null || mode !== "sdk") return reason;
      return (await loadSdk()) === undefined ? "the OpenTelemetry SDK (@opentelemetry/sdk-trace-base, sdk-metrics) is not installed" : null;
    },
    async drain(tracker) {
      const stop = mode === "sdk" ? await startSdk() : undefined;
      try {
        return await inner.drain(tracker);
      } finally {
        await stop?.();
      }
    },
  };
}

type Sdk = [typeof import("@opentelemetry/api"), typeof import("@opentelemetry/sdk-trace-base"), typeof import("@opentelemetry/sdk-metrics")];

async function loadSdk(): Promise<Sdk | undefined> {
  try {
    return await Promise.all([import("@opentelemetry/api"), import("@opentelemetry/sdk-trace-base"), import("@opentelemetry/sdk-metrics")]);
  } catch {
    return undefined;
  }
}

/** Registers the global providers for one drain; returns what unregisters them. */
async function startSdk(): Promise<() => Promise<void>> {
  const [api, traceSdk, metricsSdk] = (await loadSdk()) as Sdk;
  const drop = { export: (_spans: unknown, done: (r: { code: number }) => void) => done({ code: 0 }), shutdown: async () => {} };
  const tracerProvider = new traceSdk.BasicTracerProvider({ spanProcessors: [new traceSdk.BatchSpanProcessor(drop)] });
  const reader = new metricsSdk.PeriodicExportingMetricReader({
    exporter: new metricsSdk.InMemoryMetricExporter(metricsSdk.AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 1_000,
  });
  const meterProvider = new metricsSdk.MeterProvider({ readers: [reader] });
  api.trace.setGlobalTracerProvider(tracerProvider);
  api.metrics.setGlobalMeterProvider(meterProvider);
  return async () => {
    await meterProvider.shutdown();
    await tracerProvider.shutdown();
    api.trace.disable();
    api.metrics.disable();
  };
}
