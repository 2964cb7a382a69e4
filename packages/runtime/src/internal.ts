import type { Activity } from "./activity.js";
import type { Clock } from "./clock.js";
import type { Logger } from "./logger.js";
import type { BrokerParts } from "./publish/broker.js";
import type { PublishObserver } from "./publish/publisher.js";
import type { DeliveryObserver } from "./consume/subscription.js";

/** @internal How `@sqlinbox/runtime/testing` starts an app: its clock, its observer. */
export const startWith: unique symbol = Symbol("sqlinbox.startWith");

/** @internal */
export interface StartOverrides {
  readonly clock?: Clock;
  /** The clock is paused (`TestApp.start`): it is the only time, never measured against a database's. */
  readonly pausedClock?: boolean;
  readonly logger?: Logger;
  readonly observer?: DeliveryObserver;
  /** Told of every publish through the app's brokers. */
  readonly publishes?: PublishObserver;
  readonly activity?: Activity;
}

/** @internal What a test reaches behind a running app: its brokers (connections, routes, publishers). */
export const runningBrokers = new WeakMap<object, readonly BrokerParts[]>();
