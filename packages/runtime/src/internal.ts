import type { Activity } from "./activity.js";
import type { Clock } from "./clock.js";
import type { Logger } from "./logger.js";
import type { BrokerConnection } from "./publish/connection.js";
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
  readonly activity?: Activity;
}

/** @internal What a test reaches behind a running app: its brokers' connections. */
export const runningBrokers = new WeakMap<object, readonly BrokerConnection[]>();
