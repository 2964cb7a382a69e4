import type { Attributes, Context, Link, Span, Tracer } from "@opentelemetry/api";
import { isSqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import * as a from "./attributes.js";
import type { OtelApi } from "./otel-api.js";
import { OtelInstruments } from "./otel-instruments.js";
import { headersColumnOf, readHeaders, writeHeaders, type HeaderCarrier } from "./trace-headers.js";
import type { DatabasePlace, DeliveryTrace, ObservedApp, PublishTelemetry, PublishTrace, SubscriptionPlace, SubscriptionTelemetry, Telemetry } from "./telemetry.js";

const SCOPE = "@sqlinbox/runtime";

/** Telemetry through the global OpenTelemetry providers and propagator. */
export class OtelTelemetry implements Telemetry {
  readonly enabled = true;
  readonly api: OtelApi;
  readonly tracer: Tracer;
  readonly instruments: OtelInstruments;
  /** A tracer provider is registered: without one (the API installed, no SDK) no span is started at all. */
  readonly tracing: boolean;

  constructor(api: OtelApi) {
    this.api = api;
    this.tracer = api.trace.getTracer(SCOPE);
    const provider = api.trace.getTracerProvider();
    this.tracing = !(provider instanceof api.ProxyTracerProvider) || provider.getDelegateTracer(SCOPE) !== undefined;
    this.instruments = new OtelInstruments(api.metrics.getMeter(SCOPE));
  }

  subscription(place: SubscriptionPlace): SubscriptionTelemetry {
    return new OtelSubscription(this, place);
  }

  publisher(place: DatabasePlace): PublishTelemetry | undefined {
    return this.tracing ? new OtelPublisher(this, place) : undefined;
  }

  observe(sources: ObservedApp): () => void {
    return this.instruments.observe(sources);
  }
}

/** The span attributes every span of a route carries. */
function routeAttributes(place: DatabasePlace, route: string, table: string): Attributes {
  return { [a.MESSAGING_SYSTEM]: a.SYSTEM, [a.DESTINATION_NAME]: route, [a.DB_SYSTEM_NAME]: place.dbSystem, [a.DB_COLLECTION_NAME]: table };
}

class OtelSubscription implements SubscriptionTelemetry {
  readonly t: OtelTelemetry;
  readonly place: SubscriptionPlace;
  readonly headersColumn: string | undefined;
  readonly spanName: string;
  readonly attributes: Attributes;
  /** Metric attributes, built once: the subscription's, then one set per outcome. */
  readonly points: Attributes;
  readonly #outcomes = new Map<string, Attributes>();
  /** Metrics without spans (no tracer provider): one object for every delivery, which carries no state of its own. */
  readonly #untraced: DeliveryTrace;

  constructor(t: OtelTelemetry, place: SubscriptionPlace) {
    this.t = t;
    this.#untraced = new UntracedDelivery(this);
    this.place = place;
    this.headersColumn = place.headersColumn;
    this.spanName = `${place.route} process`;
    this.attributes = Object.freeze({
      ...routeAttributes(place, place.route, place.table),
      [a.OPERATION_TYPE]: "process",
      [a.OPERATION_NAME]: "process",
      [a.CLAIM_FORM]: place.form,
    });
    this.points = Object.freeze({ [a.MESSAGING_SYSTEM]: a.SYSTEM, [a.DESTINATION_NAME]: place.route, [a.DB_COLLECTION_NAME]: place.table, [a.CLAIM_FORM]: place.form });
  }

  claimed(startedAt: number, rows: number): void {
    const ms = performance.now() - startedAt;
    this.t.instruments.claimDuration.record(ms / 1000, this.points);
    if (rows === 0 || !this.t.tracing) return;
    // Only claims that brought rows get a span: an idle poll is no operation worth a trace.
    const span = this.t.tracer.startSpan(`${this.place.route} receive`, {
      kind: this.t.api.SpanKind.CLIENT,
      startTime: performance.timeOrigin + startedAt,
      attributes: { ...this.attributes, [a.OPERATION_TYPE]: "receive", [a.OPERATION_NAME]: "claim", [a.BATCH_MESSAGE_COUNT]: rows },
    });
    span.end();
  }

  begin(delivery: ClaimedDelivery): DeliveryTrace {
    if (!this.t.tracing) return this.#untraced;
    const api = this.t.api;
    let parent: Context = api.context.active();
    let links: Link[] | undefined;
    const carrier = this.headersColumn === undefined ? undefined : readHeaders(delivery.row, this.headersColumn);
    if (carrier !== undefined) {
      const published = api.propagation.extract(api.ROOT_CONTEXT, carrier);
      const context = api.trace.getSpanContext(published);
      if (context !== undefined && api.isSpanContextValid(context)) {
        parent = published;
        links = [{ context }];
      }
    }
    return this.beginUnder(parent, links, delivery);
  }

  /** Starts the process span under `parent` (the publish's context, when the row carried one). */
  beginUnder(parent: Context, links: Link[] | undefined, delivery: ClaimedDelivery): DeliveryTrace {
    // The shared attributes start the span (samplers see them); the per-row ones are set only on a recording span.
    const span = this.t.tracer.startSpan(this.spanName, { kind: this.t.api.SpanKind.CONSUMER, attributes: this.attributes, ...(links ? { links } : {}) }, parent);
    if (span.isRecording()) {
      span.setAttribute(a.MESSAGE_ID, String(delivery.id));
      if (delivery.attempt !== undefined) span.setAttribute(a.ATTEMPT, delivery.attempt);
    }
    return new OtelDelivery(this, span, this.t.api.trace.setSpan(parent, span));
  }

  /** The handler's duration, `error.type` when it threw. */
  recordHandled(startedAt: number, failed: boolean, error: unknown): void {
    const seconds = (performance.now() - startedAt) / 1000;
    this.t.instruments.handlerDuration.record(seconds, failed ? { ...this.points, [a.ERROR_TYPE]: errorType(error) } : this.points);
  }

  /** The delivery's outcome, and a lost lease (a settlement refused, or the signal aborted, with `LeaseLost`). */
  recordEnd(outcome: string, error: unknown, signal: AbortSignal): void {
    const { instruments } = this.t;
    instruments.deliveries.add(1, this.outcomePoints(outcome, error));
    if (isLeaseLost(error) || (signal.aborted && isLeaseLost(signal.reason))) instruments.leasesLost.add(1, this.points);
  }

  outcomePoints(outcome: string, error: unknown): Attributes {
    if (error !== undefined) return { ...this.points, [a.OUTCOME]: outcome, [a.ERROR_TYPE]: errorType(error) };
    let points = this.#outcomes.get(outcome);
    if (points === undefined) {
      points = Object.freeze({ ...this.points, [a.OUTCOME]: outcome });
      this.#outcomes.set(outcome, points);
    }
    return points;
  }
}

class OtelDelivery implements DeliveryTrace {
  readonly #sub: OtelSubscription;
  readonly #span: Span;
  readonly #context: Context;

  constructor(sub: OtelSubscription, span: Span, context: Context) {
    this.#sub = sub;
    this.#span = span;
    this.#context = context;
  }

  run<T, A extends unknown[], R>(fn: (this: T, ...args: A) => R, thisArg: T, ...args: A): R {
    return this.#sub.t.api.context.with(this.#context, fn, thisArg, ...args);
  }

  handled(startedAt: number, failed: boolean, error?: unknown): void {
    this.#sub.recordHandled(startedAt, failed, error);
    if (failed) this.#span.recordException(error instanceof Error ? error : String(error));
  }

  end(outcome: string, error: unknown, signal: AbortSignal): void {
    const { api } = this.#sub.t;
    this.#sub.recordEnd(outcome, error, signal);
    if (this.#span.isRecording()) this.#span.setAttribute(a.OUTCOME, outcome);
    if (error !== undefined) {
      this.#span.recordException(error instanceof Error ? error : String(error));
      this.#span.setAttribute(a.ERROR_TYPE, errorType(error));
      this.#span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    }
    this.#span.end();
  }
}

class UntracedDelivery implements DeliveryTrace {
  readonly #sub: OtelSubscription;
  constructor(sub: OtelSubscription) {
    this.#sub = sub;
  }
  run<T, A extends unknown[], R>(fn: (this: T, ...args: A) => R, thisArg: T, ...args: A): R {
    return fn.apply(thisArg, args);
  }
  handled(startedAt: number, failed: boolean, error?: unknown): void {
    this.#sub.recordHandled(startedAt, failed, error);
  }
  end(outcome: string, error: unknown, signal: AbortSignal): void {
    this.#sub.recordEnd(outcome, error, signal);
  }
}

class OtelPublisher implements PublishTelemetry {
  readonly #t: OtelTelemetry;
  readonly #place: DatabasePlace;

  constructor(t: OtelTelemetry, place: DatabasePlace) {
    this.#t = t;
    this.#place = place;
  }

  begin(route: string, spec: InboxDescription, row: RawRow): PublishTrace {
    const { api, tracer } = this.#t;
    const span = tracer.startSpan(`${route} publish`, {
      kind: api.SpanKind.PRODUCER,
      attributes: { ...routeAttributes(this.#place, route, spec.table), [a.OPERATION_TYPE]: "send", [a.OPERATION_NAME]: "publish" },
    });
    const headersColumn = headersColumnOf(spec);
    if (headersColumn !== undefined) {
      const carrier: HeaderCarrier = {};
      api.propagation.inject(api.trace.setSpan(api.context.active(), span), carrier);
      if (Object.keys(carrier).length > 0) writeHeaders(row, headersColumn, carrier);
    }
    return new OtelPublish(api, span);
  }
}

class OtelPublish implements PublishTrace {
  readonly #api: OtelApi;
  readonly #span: Span;
  constructor(api: OtelApi, span: Span) {
    this.#api = api;
    this.#span = span;
  }
  end(error: unknown, id: unknown): void {
    if (id !== undefined && id !== null) this.#span.setAttribute(a.MESSAGE_ID, String(id));
    if (error !== undefined) {
      this.#span.recordException(error instanceof Error ? error : String(error));
      this.#span.setAttribute(a.ERROR_TYPE, errorType(error));
      this.#span.setStatus({ code: this.#api.SpanStatusCode.ERROR });
    }
    this.#span.end();
  }
}

/** `error.type`: the sqlinbox code, else the error's class name. */
function errorType(error: unknown): string {
  if (isSqlInboxError(error)) return error.code;
  return error instanceof Error ? error.constructor.name : "_OTHER";
}

function isLeaseLost(error: unknown): boolean {
  return isSqlInboxError(error) && error.code === "LeaseLost";
}
