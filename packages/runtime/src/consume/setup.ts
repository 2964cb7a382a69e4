import type { InboxDescription } from "@sqlinbox/core/internal";
import type { Activity } from "../activity.js";
import type { ClaimedDelivery, ClaimStrategy } from "../claim/claim-strategy.js";
import type { Clock } from "../clock.js";
import type { HandlerOutcome } from "../declare/outcome.js";
import type { Settlement } from "../claim/settlement.js";
import type { HandlerEnd } from "./delivery-report.js";
import type { QueueOptions } from "../declare/queue.js";
import type { Outputs, Subscriber } from "../declare/subscriber.js";
import type { Logger } from "../logger.js";

/** What a test (`TestApp` call records) and the app's job event listeners see of each delivery. */
export interface DeliveryObserver {
  delivered(event: { subscription: string; id: unknown; attempt: number | undefined; payload: unknown }): void;
  settled(event: SettledEvent): void;
  /** A claim statement returned `rows` rows after `durationMs`; absent: claims are not told (nor timed for it). */
  readonly claimed?: ((event: ClaimedEvent) => void) | undefined;
  /** A row's payload could not be decoded and its settlement by the decode policy ended (`error`: the settlement's, when it was not written); absent: not told. */
  readonly undecodable?: ((event: UndecodableEvent) => void) | undefined;
}

/** A row whose payload could not be decoded (`cause`), settled by the decode policy or not (`written`, `error`). */
interface UndecodableEvent {
  readonly subscription: string;
  readonly id: unknown;
  readonly attempt: number | undefined;
  readonly cause: unknown;
  readonly written: boolean;
  readonly error: unknown;
}

/** One claim statement's end: how many rows it brought (0: an idle poll), and how long it took. */
interface ClaimedEvent {
  readonly subscription: string;
  readonly rows: number;
  readonly durationMs: number;
}

/** A delivery's settlement was written (`written`) or failed (`error`). */
export interface SettledEvent {
  subscription: string;
  id: unknown;
  attempt: number | undefined;
  payload: unknown;
  outcome: HandlerOutcome;
  error?: unknown;
  signalAborted: boolean;
  /** Why the delivery's signal aborted (a `Timeout`, a `Cancelled`, a lost lease), when it did. */
  signalReason?: unknown;
  /** The settlement decided, and whether it was written. */
  settlement?: Settlement;
  written?: boolean;
  /** How the handler ended, and what it threw (a timeout included). */
  handler?: HandlerEnd;
  cause?: unknown;
  /** Dropped because the job was cancelled. */
  cancelled?: boolean;
  /** Written, and its row released for later: after this many ms. */
  delayMs?: number | undefined;
  /** The handler's time, where it was measured. */
  handlerMs?: number | undefined;
}

/** The cancel requests an app read from the control table: a delivery they name starts with its signal aborted. */
export interface CancelCheck {
  /** Cancel requests the subscription serves now: `starting` needs asking only while there are any. */
  readonly requested: number;
  starting(delivery: ClaimedDelivery): void;
}

/** What a subscription is built from: the subscriber, its table and queue options, the claim strategy, and the app's services. */
export interface SubscriptionSetup {
  readonly subscriber: Subscriber;
  readonly spec: InboxDescription;
  readonly options: QueueOptions;
  readonly strategy: ClaimStrategy;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly outputs: Outputs;
  readonly activity: Activity;
  /** How long the default decode policy keeps an undecodable row out of claims before it is tried (and logged) again. */
  readonly decodeRetryMs: number;
  readonly observer?: DeliveryObserver | undefined;
  /** Cancel requests from the control table; `undefined` when the app has none to serve (no cost per delivery). */
  readonly control?: CancelCheck | undefined;
}
