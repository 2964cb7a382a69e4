import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import { relayNotConfirmed } from "../errors.js";
import { type BatchContext, type InboxContext, keys } from "../declare/context.js";
import type { InboxQueue } from "../declare/queue.js";
import type { DeliveredOf } from "../declare/queue-rules.js";
import { subscriber, type Subscriber } from "../declare/subscriber.js";

/** One row of an outbox claim, as a relay hands it to a message broker. */
export interface OutboxMessage<P> {
  /** The row's id as text: the message id a broker deduplicates on (JetStream's `Nats-Msg-Id`), or a consumer does. */
  readonly id: string;
  readonly payload: P;
  /** The row's headers column (a `traceparent`, …); `{}` when the table has none. */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Sends one claim's messages to a broker: starts every send before awaiting any (one round trip for
 * the batch, not one per row), and returns a promise per message, in order, that resolves once the
 * broker confirmed it (a JetStream publish ack, a Redis `XADD` reply). `batch.signal` aborts with any of
 * the rows' signals; made when first read (a signal per row and one over them cost per row), so read it only to use it.
 */
export type SendMessages<P> = (messages: readonly OutboxMessage<P>[], batch: { readonly signal: AbortSignal }) => readonly Promise<unknown>[];

/** What a relay says about its broker in an error: `"JetStream"`, `"Redis"`. */
export interface RelayTarget {
  readonly broker: string;
}

/**
 * An outbox relay: a batch subscriber of `queue` that sends every row of a claim with `send`, and acks
 * the rows once the broker confirmed all of them. A send the broker did not confirm (it is down, the
 * publish timed out) fails the whole batch, so the queue's onError policy (backoff, then the dead letter
 * where declared) applies to each row; rows the broker had already taken are sent again then, which is
 * why each message carries the row's id for the broker or the consumer to deduplicate on.
 *
 * The order of the sends is the claim's order; with an order key one row per key is in work at a time,
 * so a key's messages reach the broker in id order.
 */
export function outboxRelay<S extends AnyInboxSpec>(queue: InboxQueue<S>, target: RelayTarget, send: SendMessages<DeliveredOf<S>>): Subscriber<S> {
  const batch = subscriber.batch as unknown as (queue: InboxQueue<S>, handler: (payloads: readonly DeliveredOf<S>[], ctx: BatchContext) => Promise<void>) => Subscriber<S>;
  return batch(queue, async (payloads, ctx) => {
    const messages = payloads.map((payload, i) => messageOf(payload, ctx.rows[i] as InboxContext));
    const results = await Promise.allSettled(send(messages, ctx));
    const failed = results.flatMap((result, i) => (result.status === "rejected" ? [{ id: (messages[i] as OutboxMessage<unknown>).id, reason: result.reason as unknown }] : []));
    const first = failed[0];
    if (first !== undefined)
      throw relayNotConfirmed(
        target.broker,
        failed.map((f) => f.id),
        messages.length,
        { subscription: ctx.subscription, table: ctx.table },
        first.reason,
      );
  });
}

function messageOf<P>(payload: P, ctx: InboxContext): OutboxMessage<P> {
  // Without a headers column the context reads `{}`: the key's compile-time rule is for handlers, which know their table.
  const headers = ctx.get(keys.headers as never) as Readonly<Record<string, string>>;
  return { id: idText(ctx.id), payload, headers };
}

/** A row id as a message id: digits for a number or bigint, hex for bytes, ISO 8601 for a time, text as it is. */
function idText(id: unknown): string {
  if (id instanceof Uint8Array) return Buffer.from(id).toString("hex");
  if (id instanceof Date) return id.toISOString();
  return String(id);
}
