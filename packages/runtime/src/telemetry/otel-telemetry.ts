import type { Attributes, Context, Link, Span, Tracer } from "@opentelemetry/api";
import { isSqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import { keys, type InboxContext } from "../declare/context.js";
import type { AppEvents, JobEventBase, JobListener, RegisteredListener } from "../hooks/lifecycle.js";
import type { Middleware, MiddlewareUse } from "../hooks/middleware.js";
import type { PublishMiddleware } from "../publish/publish-hooks.js";
import * as a from "./attributes.js";
import type { OtelApi } from "./otel-api.js";
import { OtelInstruments } from "./otel-instruments.js";
import { headersColumnOf, readHeaders, writeHeaders, type HeaderCarrier } from "./trace-headers.js";
import type {
  DatabasePlace,
  DeliveryTrace,
  ObservedApp,
  PublishTelemetry,
  PublishTrace,
  SubscriptionPlace,
  SubscriptionTelemetry,
  Telemetry,
  TelemetryHooks,
} from "./telemetry.js";

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

  subscription(place: SubscriptionPlace): OtelSubscription {
    return new OtelSubscription(this, place);
  }

  publisher(place: DatabasePlace): OtelPublisher | undefined {
    return this.tracing ? new OtelPublisher(this, place) : undefined;
  }

  hooks(): TelemetryHooks {
    return new OtelHooks(this);
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
    return this.beginWith(delivery.id, delivery.attempt, this.headersColumn === undefined ? undefined : readHeaders(delivery.row, this.headersColumn));
  }

  /** Starts the delivery's process span, under the publish's context when `carrier` (the row's headers) holds one. */
  beginWith(id: unknown, attempt: number | undefined, carrier: Readonly<HeaderCarrier> | undefined): DeliveryTrace {
    if (!this.t.tracing) return this.#untraced;
    const api = this.t.api;
    let parent: Context = api.context.active();
    let links: Link[] | undefined;
    if (carrier !== undefined) {
      const published = api.propagation.extract(api.ROOT_CONTEXT, carrier);
      const context = api.trace.getSpanContext(published);
      if (context !== undefined && api.isSpanContextValid(context)) {
        parent = published;
        links = [{ context }];
      }
    }
    return this.beginUnder(parent, links, id, attempt);
  }

  /** Starts the process span under `parent` (the publish's context, when the row carried one). */
  beginUnder(parent: Context, links: Link[] | undefined, id: unknown, attempt: number | undefined): DeliveryTrace {
    // The shared attributes start the span (samplers see them); the per-row ones are set only on a recording span.
    const span = this.t.tracer.startSpan(this.spanName, { kind: this.t.api.SpanKind.CONSUMER, attributes: this.attributes, ...(links ? { links } : {}) }, parent);
    if (span.isRecording()) {
      span.setAttribute(a.MESSAGE_ID, String(id));
      if (attempt !== undefined) span.setAttribute(a.ATTEMPT, attempt);
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
    const headersColumn = headersColumnOf(spec);
    const injected: HeaderCarrier | undefined = headersColumn === undefined ? undefined : {};
    const trace = this.beginWith(route, spec.table, injected);
    if (headersColumn !== undefined && injected !== undefined && Object.keys(injected).length > 0) writeHeaders(row, headersColumn, injected);
    return trace;
  }

  /** Starts a publish span; the propagator's headers (`traceparent`) are written into `headers` when given (the table has a headers column). */
  beginWith(route: string, table: string, headers: HeaderCarrier | undefined): PublishTrace {
    const { api, tracer } = this.#t;
    const span = tracer.startSpan(`${route} publish`, {
      kind: api.SpanKind.PRODUCER,
      attributes: { ...routeAttributes(this.#place, route, table), [a.OPERATION_TYPE]: "send", [a.OPERATION_NAME]: "publish" },
    });
    if (headers !== undefined) api.propagation.inject(api.trace.setSpan(api.context.active(), span), headers);
    return new OtelPublish(api, span);
  }

  /** The span of each publish as a publish middleware (`app.usePublish`): it wraps the insert, so it ends with it. */
  middleware(): PublishMiddleware {
    return async (publish, next) => {
      const trace = this.beginWith(publish.route, publish.table, publish.headers);
      try {
        const rows = await next();
        trace.end(undefined, rows.length === 1 ? rows[0]?.id : undefined);
        return rows;
      } catch (error) {
        trace.end(error, undefined);
        throw error;
      }
    };
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

/**
 * OpenTelemetry as a user of the public hooks: per subscription, a middleware (as `app.use(route, …)`
 * registers one) starts the process span around the rest of the chain and the handler, so the
 * handler's spans are its children, and times the handler; listeners (as `app.on` registers them)
 * end the span at the settlement's event with the outcome written, and time the claims (`claimed`).
 * Each publish gets its span from a publish middleware (as `app.usePublish` registers one), which
 * writes `traceparent` into the headers. The observable gauges (queue depth, connections held,
 * deadlocks retried) read app-level state that no hook tells (`Telemetry.observe`).
 */
class OtelHooks implements TelemetryHooks {
  readonly #t: OtelTelemetry;
  /** The deliveries in work per route, by id, until their settlement's event. */
  readonly #routes = new Map<string, RouteDeliveries>();
  readonly listeners: readonly RegisteredListener[];

  constructor(t: OtelTelemetry) {
    this.#t = t;
    const ends = (route: string, id: unknown, attempt: number | undefined, outcome: string, error: unknown): void => this.#routes.get(route)?.end(id, attempt, outcome, error);
    const settled = (outcome: string) => (e: JobEventBase) => ends(e.route, e.id, e.attempt, outcome, undefined);
    this.listeners = [
      listen("succeeded", settled("ack")),
      listen("retried", (e) => ends(e.route, e.id, e.attempt, e.outcome, undefined)),
      listen("snoozed", settled("snooze")),
      listen("deadLettered", settled("deadLetter")),
      listen("dropped", settled("drop")),
      listen("cancelled", settled("drop")),
      listen("leaseLost", (e) => ends(e.route, e.id, e.attempt, e.outcome, e.error)),
      listen("settlementFailed", (e) => ends(e.route, e.id, e.attempt, e.outcome, e.error)),
      listen("undecodable", (e) => this.#routes.get(e.route)?.undecodable(e.id, e.attempt, e.written ? undefined : e.settleError)),
      listen("claimed", (e) => this.#routes.get(e.route)?.sub.claimed(performance.now() - e.durationMs, e.rows)),
    ];
  }

  delivery(place: SubscriptionPlace): MiddlewareUse {
    const deliveries = new RouteDeliveries(this.#t.subscription(place));
    this.#routes.set(place.route, deliveries);
    return { route: place.route, middleware: deliveries.middleware as MiddlewareUse["middleware"] };
  }

  publish(place: DatabasePlace): PublishMiddleware | undefined {
    return this.#t.publisher(place)?.middleware();
  }
}

function listen<E extends keyof AppEvents>(event: E, listener: JobListener<E>): RegisteredListener {
  return { event, listener: listener as RegisteredListener["listener"] };
}

/** The signal of a row that never reached a handler: nothing aborted it. */
const NEVER_ABORTED = new AbortController().signal;

/** A delivery between its middleware's start and its settlement's event (`next`: another delivery of the same id, a lost lease's). */
class InWork {
  constructor(
    readonly trace: DeliveryTrace,
    readonly attempt: number | undefined,
    readonly signal: AbortSignal,
    public next: InWork | undefined,
  ) {}
}

/** One route's process spans: started by its middleware, ended by the settlement's event. */
class RouteDeliveries {
  readonly sub: OtelSubscription;
  readonly #inWork = new Map<unknown, InWork>();
  readonly middleware: Middleware;

  constructor(sub: OtelSubscription) {
    this.sub = sub;
    const headers = sub.headersColumn !== undefined;
    this.middleware = (delivery, ctx, next) => {
      // A batch handler's rows get no process span (their claim's receive span and the claim metrics cover them).
      if (delivery.kind !== "row") return next();
      const context = ctx as InboxContext;
      const trace = sub.beginWith(delivery.id, delivery.attempt, headers ? context.get(keys.headers as never) : undefined);
      this.#inWork.set(delivery.id, new InWork(trace, delivery.attempt, context.signal, this.#inWork.get(delivery.id)));
      const startedAt = performance.now();
      return trace.run(next, undefined).then(
        (result) => {
          trace.handled(startedAt, false);
          return result;
        },
        (error: unknown) => {
          trace.handled(startedAt, true, error);
          throw error;
        },
      );
    };
  }

  /** A row that could not be decoded: no handler ran, so its process span starts and ends here, at its settlement. */
  undecodable(id: unknown, attempt: number | undefined, error: unknown): void {
    this.sub.beginWith(id, attempt, undefined).end("undecodable", error, NEVER_ABORTED);
  }

  /** The delivery `id` (of `attempt`) settled with `outcome` (`error`: the settlement's, when it was not written). */
  end(id: unknown, attempt: number | undefined, outcome: string, error: unknown): void {
    let found = this.#inWork.get(id);
    let before: InWork | undefined;
    while (found !== undefined && found.attempt !== attempt && found.next !== undefined) {
      before = found;
      found = found.next;
    }
    if (found === undefined) return;
    if (before !== undefined) before.next = found.next;
    else if (found.next === undefined) this.#inWork.delete(id);
    else this.#inWork.set(id, found.next);
    found.trace.end(outcome, error, found.signal);
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
