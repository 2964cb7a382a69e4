// What an application uses. What sibling packages and tests need lives in `./internal` (not covered by semver).
export { App, type AppInfo, type RunningApp } from "./app.js";
export type { AppEvents, JobEvents, JobEventName, JobEventBase, JobListener } from "./hooks/lifecycle.js";
export type { Middleware, MiddlewareFor, Delivery, RowDelivery, BatchDelivery, DeliveryResult } from "./hooks/middleware.js";
export type { PublishMiddleware, OutgoingPublish, PublishedRow } from "./publish/publish-hooks.js";
export type { BrokerScope } from "./startup/broker-scope.js";
export type { CronTick, CronOptions, CronPayload } from "./schedule/cron.js";
export {
  SqlBroker,
  type BrokerOptions,
  type FromKyselyOptions,
  type PublishOptions,
  type PublishManyOptions,
  type Published,
  type CancelResult,
  type RouteName,
} from "./publish/sql-broker.js";
export type { JobHandle, JobId, JobOptions, FinishedOptions, FinishedJob } from "./publish/job-handle.js";
export type { JobList, JobListQuery, JobListState, JobListStateOf, JobPage, ListedJob } from "./publish/job-list.js";
export type { JobChanges, JobChangesFor, UpdateResult } from "./publish/job-update.js";
export type { JobState, JobStateName, JobColumns, LiveJobState, DoneJobState, DeadLetteredJobState, GoneJobState } from "./publish/job-state.js";
export { JobEnded, type JobEndReason } from "./errors/job-errors.js";
export type { PoolerMode } from "./publish/connection.js";
export type { ListenSource, ListenableClient, ListenPool } from "./publish/listen-source.js";
export type { MessageHeaderValues } from "./publish/publish-rows.js";
export {
  InboxQueue,
  type HandlerTimeout,
  type QueueOptions,
  type DeliveredOf,
  type OutcomeFor,
  type DeadLetterDeclaration,
  type DeadLetterTarget,
  type RateLimit,
  type Retention,
  type RetainArg,
  type RateLimitArg,
  type MaxInWorkArg,
} from "./declare/queue.js";
export { defaultOnError, defaultOnDecodeError, type Backoff, type FailureContext, type FailurePolicy } from "./declare/failure-policy.js";
export { subscriber, type Handler, type HandlerFunction, type HandlerResult, type HandlerResultFor, type Outputs, type Subscriber } from "./declare/subscriber.js";
export { createInboxTable, createControlTable, createWorkflowTable, type CreateInboxTableOptions } from "./declare/create-inbox-table.js";
export { controlTableSql, workflowTableSql } from "@sqlinbox/kysely-dialects";
export type { ExtendTable, QueueStorage } from "@sqlinbox/kysely-dialects";
export { HandlerOutcome, type DeadLetterOutcome } from "./declare/outcome.js";
export type { StopReport } from "./stop-report.js";
export { Ctx, keys, type ContextKey, type InboxContext, type BatchContext, type ProgressArg, type ResultArg } from "./declare/context.js";
export { systemClock, seconds, minutes, hours, days, type Clock, type Timer } from "./clock.js";
export type { LeaseClock } from "./time/database-clock.js";
export { consoleLogger, silentLogger, type Logger, type LogFields } from "./logger.js";
export type { PoolOptions } from "@sqlinbox/database";
export { withPreparedStatements } from "@sqlinbox/database";
export { SqlInboxError, isSqlInboxError, type SqlInboxErrorCode } from "@sqlinbox/core";
export { Timeout } from "./errors.js";
export { WorkflowRun, type WorkflowRunState, type StepState } from "./workflow/workflow-run.js";
export { WorkflowEnded, type WorkflowEndReason, type WorkflowFailure } from "./errors/workflow-errors.js";
