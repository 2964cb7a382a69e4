/**
 * `@sqlinbox/runtime/internal`: what sibling packages, benchmarks and tests reach behind the
 * public API. NOT covered by semver: names here may change or go in any release. Applications
 * import from `@sqlinbox/runtime` (and `@sqlinbox/runtime/testing`).
 */
export * from "./index.js";
export type { EngineOfUrl } from "@sqlinbox/database";
export type { Engine } from "@sqlinbox/kysely-dialects";
export type { RouteAllowed, ListenNotifyAllowed, PublishPayload, PublishOptionsFor, RouteSpecOf } from "./publish/sql-broker.js";
export type { PayloadOfSpec } from "./declare/queue.js";
export { backoffMs, DEFAULT_BACKOFF } from "./declare/failure-policy.js";
export type { AckOutcome, RetryOutcome, DropOutcome, RetryAfterOutcome, SnoozeOutcome } from "./declare/outcome.js";
export type { KeyAvailable } from "./declare/context.js";
export { SystemClock } from "./clock.js";
export { redactUrl } from "@sqlinbox/database";
export type { ClaimStrategy, ClaimedDelivery } from "./claim/claim-strategy.js";
export { rowsToClaim, type ClaimPace } from "./consume/claim-pacer.js";
export { outboxRelay, type OutboxMessage, type SendMessages, type RelayTarget } from "./bridge/outbox-relay.js";
export { inboxWriter, type InboundMessage, type InboxRouteAllowed, type InboxWrite } from "./bridge/inbox-writer.js";
export { WriteBatcher } from "./bridge/write-batcher.js";
export { InboxStore, type Inbound } from "./bridge/inbox-store.js";
