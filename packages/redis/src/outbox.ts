import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import type { DeliveredOf, InboxQueue, Subscriber } from "@sqlinbox/runtime";
import { type OutboxMessage, outboxRelay } from "@sqlinbox/runtime/internal";
import type { Redis } from "ioredis";

/** How a Redis outbox relay sends a route's rows. */
export interface RedisOutboxOptions<P> {
  /** The connection the entries are added through. */
  readonly redis: Redis;
  /** The stream key: fixed, or a function of each row; unset: the queue's route name. */
  readonly stream?: string | ((payload: P, message: OutboxMessage<P>) => string);
  /** The `payload` field; unset: the payload as JSON. */
  readonly encode?: (payload: P) => string | Buffer;
  /** Caps the stream near this many entries (`XADD … MAXLEN ~ n`); unset: no cap. */
  readonly maxLen?: number;
}

/**
 * An outbox relay to a Redis stream: a batch subscriber of `queue` that adds every row of a claim as an
 * entry (`XADD <stream> * id <table>:<row id> payload <json> headers <json>`, a claim's commands in one
 * pipeline, written together before any reply is awaited), then acks the rows once Redis answered each
 * `XADD`. A command that failed (Redis down, a timeout) fails the batch and the queue's onError policy
 * retries its rows.
 *
 * Redis does not deduplicate: a batch sent again after a failure, or after a crash between the `XADD`
 * replies and the rows' ack, adds its entries again. The `id` field is the same each time, so the consumer
 * deduplicates on it (`redisInbox` does: it is the dedup key of the row it writes).
 *
 * @example
 * const relay = redisOutbox(InboxQueue.of(OrderOutbox, "orders.placed").batch(64), { redis: new Redis() });
 */
export function redisOutbox<S extends AnyInboxSpec>(queue: InboxQueue<S>, options: RedisOutboxOptions<DeliveredOf<S>>): Subscriber<S> {
  const { redis, stream = queue.name, encode = (payload: unknown) => JSON.stringify(payload), maxLen } = options;
  const table = queue.spec.description.table;
  const cap = maxLen === undefined ? [] : ["MAXLEN", "~", maxLen];
  return outboxRelay(queue, { broker: "Redis" }, (messages) => {
    // One pipeline per claim: its commands go out in one write, not one write each.
    const pipeline = redis.pipeline();
    for (const message of messages) {
      const key = typeof stream === "string" ? stream : stream(message.payload, message);
      pipeline.call("XADD", [key, ...cap, "*", "id", `${table}:${message.id}`, "payload", encode(message.payload), "headers", JSON.stringify(message.headers)]);
    }
    const replies = pipeline.exec();
    return messages.map((_, i) => replies.then((all) => replyOf(all, i)));
  });
}

/** One command's reply from a pipeline's: its error thrown, or its value. */
function replyOf(all: [error: Error | null, result: unknown][] | null, i: number): unknown {
  const reply = all?.[i];
  if (reply === undefined) throw new Error(`Redis returned no reply for XADD ${i + 1} of the pipeline`);
  const [error, value] = reply;
  if (error !== null) throw error;
  return value;
}
