// What an application uses. What the sibling packages need lives in `./internal`.
export { SqlInboxError, isSqlInboxError, type SqlInboxErrorCode } from "./errors.js";
export type {
  Attempt,
  Lease,
  Payload,
  RetryAfter,
  ProcessedAt,
  Group,
  Fifo,
  Priority,
  OrderKey,
  MessageHeaders,
  AdvisoryLock,
  LastError,
  FailedAttempts,
  DedupKey,
  Result,
  Progress,
  ResultOf,
  ResultOfMarker,
  PayloadOfMarker,
} from "./roles.js";
export { column } from "./column.js";
export { InboxSpec, type RolesOf, type RowOf, type DataOf } from "./spec.js";
export { field } from "./define.js";
export { defineInbox } from "./define-inbox.js";
export { payloadOf, resultOf, progressOf, type ValueTypeMarker } from "./payload-type.js";
export { PORTABLE_TYPES, type PortableType } from "./portable-type.js";
export {
  workflow,
  Workflow,
  type AnyWorkflow,
  type WorkflowInput,
  type WorkflowSteps,
  type WorkflowResults,
  type ResultsOf,
  type StepType,
  type StepOptions,
  type EachOptions,
  type ReadableResult,
  type StepDescription,
  type ItemOf,
  type WorkflowRetention,
  type StepPublish,
  type StepPublishOption,
  type EachPublishOption,
} from "./workflow.js";
