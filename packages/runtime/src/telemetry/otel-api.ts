/** The OpenTelemetry API module, as the optional peer provides it. */
export type OtelApi = typeof import("@opentelemetry/api");

/** How the API is imported; a test replaces it to see the fallback. */
export type ApiImport = () => Promise<OtelApi>;
