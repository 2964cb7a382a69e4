import { Activity } from "../activity.js";
import { systemClock, type Clock } from "../clock.js";
import { bothObservers, bothPublishObservers, lifecycleEmitter, type RegisteredListener } from "../hooks/lifecycle.js";
import type { MiddlewareUse } from "../hooks/middleware.js";
import type { DeliveryObserver } from "../consume/subscription.js";
import type { PublishObserver } from "../publish/publisher.js";
import type { Logger } from "../logger.js";
import type { PublishMiddleware } from "../publish/publish-hooks.js";
import { loadTelemetry } from "../telemetry/load-telemetry.js";
import type { LeaseClock } from "../time/database-clock.js";
import type { CronDeclaration } from "../schedule/cron.js";
import type { BrokerUse } from "./broker-scope.js";
import type { Startup } from "./start-broker.js";

export type Hook = () => unknown;

/** What an app is made of (every method of `App` returns a new one with one part more). */
export interface AppParts {
  readonly startup?: readonly Hook[];
  readonly shutdown?: readonly Hook[];
  readonly brokers?: readonly BrokerUse[];
  readonly crons?: readonly CronDeclaration[];
  readonly middleware?: readonly MiddlewareUse[];
  readonly listeners?: readonly RegisteredListener[];
  readonly publishMiddleware?: readonly PublishMiddleware[];
}

/** What a start reads of its app: its name and settings, and the hooks its builder methods added. */
export interface StartupInput {
  readonly appName: string;
  readonly clock: Clock | undefined;
  readonly leaseClock: LeaseClock | undefined;
  readonly telemetry: boolean | undefined;
  readonly middleware: readonly MiddlewareUse[];
  readonly listeners: readonly RegisteredListener[];
  readonly publishMiddleware: readonly PublishMiddleware[];
}

/** What a test's start sets in place of the app's own (`StartOverrides` as the start reads them). */
interface RunOverrides {
  readonly clock?: Clock;
  readonly pausedClock?: boolean;
  readonly observer?: DeliveryObserver;
  readonly publishes?: PublishObserver;
  readonly activity?: Activity;
}

/**
 * The state one start of an app fills in, step by step: clocks, observers, hooks and telemetry set,
 * every list empty. OpenTelemetry is one more user of the hooks: its listeners first, its middleware outermost.
 */
export async function startupRun(input: StartupInput, overrides: RunOverrides, logger: Logger): Promise<Startup> {
  const telemetry = await loadTelemetry({ enabled: input.telemetry !== false });
  const telemetryHooks = telemetry.hooks();
  const listeners = telemetryHooks === undefined ? input.listeners : [...telemetryHooks.listeners, ...input.listeners];
  const events = listeners.length === 0 ? undefined : lifecycleEmitter(listeners, logger);
  return {
    appName: input.appName,
    clock: overrides.clock ?? input.clock ?? systemClock,
    // A paused clock (TestApp.start) is the only time there is: nothing is measured against it.
    leaseClock: overrides.pausedClock === true ? undefined : (input.leaseClock ?? "database"),
    brokerClocks: new Map(),
    logger,
    activity: overrides.activity ?? new Activity(),
    observer: bothObservers(overrides.observer, events?.deliveries),
    publishes: bothPublishObservers(overrides.publishes, events?.publishes),
    middleware: input.middleware,
    publishMiddleware: input.publishMiddleware,
    telemetryHooks,
    opened: [],
    subscriptions: [],
    unsubscribe: [],
    held: [],
    telemetry,
    observed: { subscriptions: [], databases: [] },
    pruners: [],
    kept: [],
  };
}
