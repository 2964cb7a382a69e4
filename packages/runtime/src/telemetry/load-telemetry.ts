import type { ApiImport, OtelApi } from "./otel-api.js";
import { noTelemetry, type Telemetry } from "./telemetry.js";

const importApi: ApiImport = () => import("@opentelemetry/api");

let loaded: Promise<OtelApi | undefined> | undefined;

/** Imports `@opentelemetry/api` once per process; `undefined` when it cannot be resolved. */
function otelApi(load: ApiImport): Promise<OtelApi | undefined> {
  if (load !== importApi) return load().catch(() => undefined);
  loaded ??= load().catch(() => undefined);
  return loaded;
}

/**
 * The telemetry of an app starting now: OpenTelemetry through the global tracer and meter
 * providers (read at each start, so providers registered before `start()` are used) when
 * `@opentelemetry/api` is installed and `enabled`; otherwise the no-op, with nothing loaded.
 */
export async function loadTelemetry(options: { readonly enabled: boolean }, load: ApiImport = importApi): Promise<Telemetry> {
  if (!options.enabled) return noTelemetry;
  const api = await otelApi(load);
  if (api === undefined) return noTelemetry;
  // Installed but not configured (no SDK registered a tracer or a meter provider): nothing would be
  // recorded, so the deliveries pay for nothing either (measured: 4–5 µs a job otherwise).
  if (!hasProviders(api)) return noTelemetry;
  // The SDK-facing half is loaded only here, so an absent API never reaches it.
  const { OtelTelemetry } = await import("./otel-telemetry.js");
  return new OtelTelemetry(api);
}

/** A tracer provider or a meter provider was registered (the API alone answers with its no-ops). */
function hasProviders(api: OtelApi): boolean {
  const tracers = api.trace.getTracerProvider();
  const tracing = !(tracers instanceof api.ProxyTracerProvider) || tracers.getDelegateTracer("@sqlinbox/runtime") !== undefined;
  return tracing || api.metrics.getMeter("@sqlinbox/runtime").constructor !== api.createNoopMeter().constructor;
}
