import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import { consoleLogger, type Logger, type SqlBroker } from "@sqlinbox/runtime";
import { type Engine, type Inbound, type InboundMessage, InboxStore, type InboxRouteAllowed, type InboxWrite, inboxWriter, type PublishPayload } from "@sqlinbox/runtime/internal";
import type { Redis } from "ioredis";

/** Where a Redis inbox bridge reads, and how it stores what it reads. */
export interface RedisInboxOptions<P> {
  /** A connection of the bridge's own: its blocking reads hold it (`redis.duplicate()` of the application's). */
  readonly redis: Redis;
  readonly stream: string;
  /** The consumer group (made at start with `XGROUP CREATE … $ MKSTREAM` when missing: entries added from then on). */
  readonly group: string;
  /** This process's name in the group: stable across restarts, so its own pending entries come back to it. */
  readonly consumer: string;
  /** The payload from an entry's `payload` field; unset: JSON. A throw acks the entry without a row (logged as an error). */
  readonly decode?: (payload: string, fields: Readonly<Record<string, string>>) => P;
  /** Entries per read (default 64). */
  readonly count?: number;
  /** How long a read blocks waiting for entries (ms, default 1000); `stop()` waits at most this long. */
  readonly blockMs?: number;
  /** An entry another consumer read and has not acked for this long is taken over (`XAUTOCLAIM`, ms, default 30000). */
  readonly claimIdleMs?: number;
  /** Where insert failures and undecodable entries are logged (default: the console, warnings and errors). */
  readonly logger?: Logger;
}

/** What a bridge has done since it started. */
export interface InboxCounts {
  /** Entries stored as new rows. */
  readonly stored: number;
  /** Entries whose key a row already held: acked without a second row (a relay's resend, a redelivery). */
  readonly duplicates: number;
}

/** A running consumer-group reader that stores each entry as a row. */
export interface RedisInbox {
  /** Creates the group if missing and starts reading. */
  start(): Promise<void>;
  /** Stops reading after the current read (at most `blockMs`) and its inserts. */
  stop(): Promise<void>;
  readonly counts: InboxCounts;
}

/**
 * An inbox bridge from a Redis stream: a consumer-group reader whose each entry becomes a row of route
 * `route`'s table, under the entry's `id` field (what `redisOutbox` writes), else `<stream>:<entry id>`, as
 * the dedup key. `XACK` follows the insert's commit; an entry read but never acked (the process died) stays
 * pending: this consumer reads its own pending entries again at start, and any consumer takes over another's
 * entries idle for `claimIdleMs` (`XAUTOCLAIM`). Either way the entry finds its key taken and is acked
 * without a second row. The route's table needs a dedup key column (a compile error otherwise).
 *
 * @example
 * const inbox = redisInbox(broker, "payments", { redis: new Redis(), stream: "payments", group: "shop", consumer: hostname() });
 * app.onStartup(() => inbox.start()).onShutdown(() => inbox.stop());
 */
export function redisInbox<R extends Record<string, AnyInboxSpec>, N extends string, E extends Engine>(
  broker: SqlBroker<R, E>,
  route: N & InboxRouteAllowed<R, N>,
  options: RedisInboxOptions<PublishPayload<R, N>>,
): RedisInbox {
  return new StreamInbox(inboxWriter(broker, route) as InboxWrite<unknown>, options as RedisInboxOptions<unknown>);
}

type Entry = readonly [id: string, fields: readonly string[] | null];
type ReadReply = ReadonlyArray<readonly [stream: string, entries: readonly Entry[]]> | null;

class StreamInbox implements RedisInbox {
  /** Stores the entries; one that fails its own insert is left pending (XAUTOCLAIM takes it again once idle for claimIdleMs). */
  readonly #store: InboxStore<string>;
  readonly #options: RedisInboxOptions<unknown>;
  readonly #logger: Logger;
  #loop: Promise<void> | undefined;
  #stopping = false;

  constructor(write: InboxWrite<unknown>, options: RedisInboxOptions<unknown>) {
    const { stream } = options;
    this.#options = options;
    this.#logger = options.logger ?? consoleLogger({ level: "warn" });
    this.#store = new InboxStore<string>(write, this.#logger, { stream }, (entryId, key, error) => {
      this.#logger.warn({ err: error, stream, entryId, key }, "inbox bridge: insert failed, entry left pending");
    });
  }

  get counts(): InboxCounts {
    return this.#store.counts;
  }

  async start(): Promise<void> {
    if (this.#loop !== undefined) return;
    const { redis, stream, group } = this.#options;
    await redis.call("XGROUP", ["CREATE", stream, group, "$", "MKSTREAM"]).catch((error: unknown) => {
      if (!String((error as Error).message).startsWith("BUSYGROUP")) throw error;
    });
    this.#stopping = false;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#loop;
    this.#loop = undefined;
  }

  async #run(): Promise<void> {
    const { redis, stream, group, consumer, count = 64, blockMs = 1000, claimIdleMs = 30_000 } = this.#options;
    // Its own pending entries first (read before a crash, never acked), then new ones; every half claimIdleMs, others' idle ones.
    let from = "0";
    let nextClaim = 0;
    while (!this.#stopping) {
      try {
        if (Date.now() >= nextClaim) {
          nextClaim = Date.now() + Math.max(claimIdleMs / 2, 100);
          await this.#claimIdle();
        }
        const block = from === ">" ? ["BLOCK", blockMs] : [];
        const reply = (await redis.call("XREADGROUP", ["GROUP", group, consumer, "COUNT", count, ...block, "STREAMS", stream, from])) as ReadReply;
        const entries = reply?.[0]?.[1] ?? [];
        await this.#storeAll(entries);
        if (from !== ">") from = entries.length === 0 ? ">" : (entries[entries.length - 1] as Entry)[0];
      } catch (error) {
        this.#logger.warn({ err: error, stream, group }, "inbox bridge: read failed, trying again");
        await new Promise((resolve) => setTimeout(resolve, Math.min(blockMs, 1000)));
      }
    }
  }

  /** Takes over the entries other consumers read and left unacked for claimIdleMs, and stores them. */
  async #claimIdle(): Promise<void> {
    const { redis, stream, group, consumer, count = 64, claimIdleMs = 30_000 } = this.#options;
    let cursor = "0-0";
    do {
      const [next, entries] = (await redis.call("XAUTOCLAIM", [stream, group, consumer, claimIdleMs, cursor, "COUNT", count])) as [string, readonly Entry[]];
      await this.#storeAll(entries);
      cursor = next;
    } while (cursor !== "0-0" && !this.#stopping);
  }

  /**
   * Stores the entries of one read in one write (one multi-row insert where the engine has RETURNING), then
   * acks them with one XACK. Should the write fail, each entry is stored alone, so one entry the table refuses
   * holds back no other: it stays pending (XAUTOCLAIM takes it again), and the others are acked.
   */
  async #storeAll(entries: readonly Entry[]): Promise<void> {
    const { redis, stream, group } = this.#options;
    const acks: string[] = [];
    const ready: Inbound<string>[] = [];
    for (const entry of entries) {
      const inbound = this.#messageOf(entry);
      if (inbound === undefined) acks.push(entry[0]);
      else ready.push({ item: entry[0], inbound });
    }
    for (const { item } of await this.#store.store(ready)) acks.push(item);
    if (acks.length > 0) await redis.call("XACK", [stream, group, ...acks]);
  }

  /** The entry as a message to store; `undefined` for one to ack without a row (trimmed while pending, or undecodable: logged). */
  #messageOf([entryId, list]: Entry): InboundMessage<unknown> | undefined {
    const { stream, decode = (payload: string) => JSON.parse(payload) as unknown } = this.#options;
    // An entry trimmed from the stream while pending reads with no fields: nothing to store.
    if (list === null) return undefined;
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < list.length; i += 2) fields[list[i] as string] = list[i + 1] as string;
    const key = fields["id"] ?? `${stream}:${entryId}`;
    try {
      return { key, payload: decode(fields["payload"] ?? "", fields), headers: headersOf(fields["headers"]) };
    } catch (error) {
      this.#logger.error({ err: error, stream, entryId, key }, "inbox bridge: entry cannot be decoded, acked without a row");
      return undefined;
    }
  }
}

function headersOf(text: string | undefined): Record<string, string> {
  if (text === undefined) return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== "object") return {};
    return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"));
  } catch {
    return {};
  }
}
