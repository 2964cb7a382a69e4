// What an application uses. What sibling packages and tests need lives in `./internal` (not covered by semver).
export { App, type BrokerScope, type AppInfo, type RunningApp } from "./app.js";
export { SqlBroker, type BrokerOptions, type FromKyselyOptions, type PublishOptions } from "./sql-broker.js";
export type { PoolerMode } from "./broker.js";
export type { ListenSource, ListenableClient, ListenPool } from "./listen-source.js";
export type { MessageHeaderValues } from "./publish-rows.js";
export { InboxQueue, type QueueOptions, type DeliveredOf, type OutcomeFor, type DeadLetterDeclaration, type DeadLetterTarget } from "./queue.js";
export { defaultOnError, defaultOnDecodeError, type Backoff, type FailureContext, type FailurePolicy } from "./failure-policy.js";
export { subscriber, type Handler, type HandlerFunction, type HandlerResult, type HandlerResultFor, type Outputs, type Subscriber } from "./subscriber.js";
export { HandlerOutcome, type DeadLetterOutcome } from "./outcome.js";
export type { StopReport } from "./stop-report.js";
export { Ctx, keys, type ContextKey, type InboxContext } from "./context.js";
export { systemClock, seconds, minutes, type Clock, type Timer } from "./clock.js";
export { consoleLogger, silentLogger, type Logger, type LogFields } from "./logger.js";
export type { PoolOptions } from "./drivers/index.js";
export { SqlInboxError, isSqlInboxError, type SqlInboxErrorCode } from "@sqlinbox/core";
