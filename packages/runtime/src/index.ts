export { App, BrokerScope, type AppInfo, type RunningApp } from "./app.js";
export {
  SqlBroker,
  type BrokerOptions,
  type FromKyselyOptions,
  type PublishOptions,
  type PublishOptionsFor,
  type PublishPayload,
  type RouteSpecOf,
  type EngineOfUrl,
  type RouteAllowed,
  type ListenNotifyAllowed,
} from "./sql-broker.js";
export type { ListenSource, ListenableClient, ListenPool } from "./listen-source.js";
export type { MessageHeaderValues } from "./publish-rows.js";
export { InboxQueue, type QueueOptions, type PayloadOfSpec } from "./queue.js";
export { subscriber, type Handler, type HandlerFunction, type HandlerResult, type Outputs, type Subscriber } from "./subscriber.js";
export { HandlerOutcome } from "./outcome.js";
export { Ctx, keys, type ContextKey, type InboxContext, type KeyAvailable } from "./context.js";
export { SystemClock, systemClock, seconds, minutes, type Clock, type Timer } from "./clock.js";
export { consoleLogger, silentLogger, redactUrl, type Logger, type LogFields } from "./logger.js";
export type { PoolOptions } from "./drivers/index.js";
export type { ClaimStrategy, ClaimedDelivery } from "./claim/claim-strategy.js";
export { SqlInboxError, isSqlInboxError, type SqlInboxErrorCode } from "@sqlinbox/core";
