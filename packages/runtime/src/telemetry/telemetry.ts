import type { InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import type { RegisteredListener } from "../hooks/lifecycle.js";
import type { MiddlewareUse } from "../hooks/middleware.js";
import type { PublishMiddleware } from "../publish/publish-hooks.js";

/**
 * The telemetry of an app. The runtime registers its `hooks()` as a user's are registered
 * (`app.use`, `app.on`, `app.usePublish`): spans and metrics come from the public hooks alone, but
 * for the observable gauges (`observe`), which read app-level state no hook tells. With
 * `@opentelemetry/api` absent (or `telemetry: false`) it is `noTelemetry`: no hook is registered,
 * so no delivery pays anything for it. No OpenTelemetry type appears here: the API is an optional peer.
 */
export interface Telemetry {
  readonly enabled: boolean;
  /** The hooks of one subscription; `undefined` when telemetry is off. */
  subscription(place: SubscriptionPlace): SubscriptionTelemetry | undefined;
  /** The hooks of one broker's publishes; `undefined` when telemetry is off. */
  publisher(place: DatabasePlace): PublishTelemetry | undefined;
  /**
   * Registers the observable instruments (depth, connections held, deadlocks) of a running app; returns what
   * unregisters them. They stay fed from app-level state: the rows still to be finished are counted on the
   * table, and the connections held and deadlocks retried are the pool's counters, which no public hook tells.
   */
  observe(sources: ObservedApp): () => void;
  /** The middleware and listeners to register for a running app; `undefined` when telemetry is off. */
  hooks(): TelemetryHooks | undefined;
}

/** The telemetry's public hooks: registered as a user's, the OpenTelemetry middleware outermost. */
export interface TelemetryHooks {
  /** Listeners of the job events, registered as `app.on` registers them. */
  readonly listeners: readonly RegisteredListener[];
  /** The delivery middleware of one subscription, registered as `app.use(route, …)` registers one. */
  delivery(place: SubscriptionPlace): MiddlewareUse;
  /** The publish middleware of one broker, registered as `app.usePublish` registers one; `undefined`: no span to record. */
  publish(place: DatabasePlace): PublishMiddleware | undefined;
}

/** Where spans and points of one database come from. */
export interface DatabasePlace {
  /** `db.system.name`: postgresql, mysql, mariadb, sqlite. */
  readonly dbSystem: string;
}

export interface SubscriptionPlace extends DatabasePlace {
  /** The route, `messaging.destination.name`. */
  readonly route: string;
  readonly table: string;
  readonly form: string;
  /** The table's headers column, where `traceparent` travels; `undefined`: no link to the publish. */
  readonly headersColumn: string | undefined;
}

export interface SubscriptionTelemetry {
  /** A claim that started at `startedAt` (`performance.now()`) brought `rows` rows: claim duration, and a receive span when it brought any. */
  claimed(startedAt: number, rows: number): void;
  /** Starts the delivery's process span (child of, and linked to, the publish through `traceparent`). */
  begin(delivery: ClaimedDelivery): DeliveryTrace;
}

/** One delivery's span and measurements. */
export interface DeliveryTrace {
  /** Calls `fn` with the delivery's span active, so the handler's own spans are its children. */
  run<T, A extends unknown[], R>(fn: (this: T, ...args: A) => R, thisArg: T, ...args: A): R;
  /** The handler, started at `startedAt` (`performance.now()`), returned, or threw `error` (`failed`). */
  handled(startedAt: number, failed: boolean, error?: unknown): void;
  /** The delivery finished with `outcome` (`ack`, `retry`, `drop`, `retryAfter`, `undecodable`); `error`: the settlement's, if it failed. */
  end(outcome: string, error: unknown, signal: AbortSignal): void;
}

export interface PublishTelemetry {
  /** Starts a publish span; writes `traceparent` into `row`'s headers column when the table has one. */
  begin(route: string, spec: InboxDescription, row: RawRow): PublishTrace;
}

export interface PublishTrace {
  /** The insert committed (`id` when the engine returned it) or failed (`error`). */
  end(error: unknown, id: unknown): void;
}

/** What the observable instruments read of a running app. */
export interface ObservedApp {
  readonly subscriptions: readonly ObservedSubscription[];
  readonly databases: readonly ObservedDatabase[];
}

export interface ObservedSubscription extends SubscriptionPlace {
  /** Deliveries in work now, and the connections each holds for its whole run. */
  readonly inFlight: () => number;
  readonly connectionsPerDelivery: number;
  /** Counts the rows still to be finished (one aggregate statement). */
  readonly countDepth: () => Promise<number>;
}

export interface ObservedDatabase extends DatabasePlace {
  /** Statements running now (each holds a pool connection). */
  readonly running: () => number;
  /** Deadlocks retried since the app started. */
  readonly deadlocksRetried: () => number;
}

/** Telemetry off: every hook is empty and allocates nothing. */
export const noTelemetry: Telemetry = Object.freeze({
  enabled: false,
  subscription: () => undefined,
  publisher: () => undefined,
  observe: () => noUnregister,
  hooks: () => undefined,
});

function noUnregister(): void {}
