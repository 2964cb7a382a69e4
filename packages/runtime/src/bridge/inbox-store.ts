import type { LogFields, Logger } from "../logger.js";
import type { InboundMessage, InboxWrite } from "./inbox-writer.js";

/** A message of a bridge's batch: the bridge's own handle on it (to ack or give back) and the row it stores. */
export interface Inbound<T> {
  readonly item: T;
  readonly inbound: InboundMessage<unknown>;
}

/**
 * Stores an inbox bridge's messages and counts them. A batch goes in one write (one multi-row insert where the
 * engine has RETURNING); should that write fail, each message is stored alone, so one message the table refuses
 * holds back no other. The bridge keeps only what its broker needs: it acks the messages `store` returns, and
 * `refused` gives back each message whose own insert failed.
 */
export class InboxStore<T> {
  readonly #write: InboxWrite<unknown>;
  readonly #logger: Logger;
  readonly #where: LogFields;
  readonly #refused: (item: T, key: string, error: unknown) => void | Promise<void>;
  #stored = 0;
  #duplicates = 0;

  /**
   * `where` names the source in the log lines (`{ stream }`, `{ queue }`); `refused` is told of a message whose
   * insert failed (awaited before the next message is stored: a wait there paces a bridge on a failing database).
   */
  constructor(write: InboxWrite<unknown>, logger: Logger, where: LogFields, refused: (item: T, key: string, error: unknown) => void | Promise<void>) {
    this.#write = write;
    this.#logger = logger;
    this.#where = where;
    this.#refused = refused;
  }

  /** Messages stored as new rows, and messages whose key a row already held (acked without a second row). */
  get counts(): { readonly stored: number; readonly duplicates: number } {
    return { stored: this.#stored, duplicates: this.#duplicates };
  }

  /** Stores the messages; resolves with those whose rows committed (new or already there), in order: the ones to ack. */
  async store(messages: readonly Inbound<T>[]): Promise<Inbound<T>[]> {
    if (messages.length === 0) return [];
    if (messages.length === 1) return (await this.#storeOne(messages[0] as Inbound<T>)) ? [messages[0] as Inbound<T>] : [];
    let published: readonly { readonly created: boolean }[];
    try {
      published = await this.#write.many(messages.map((m) => m.inbound));
    } catch (error) {
      this.#logger.warn({ ...this.#where, err: error, messages: messages.length }, "inbox bridge: a batch insert failed, storing its messages one by one");
      const stored: Inbound<T>[] = [];
      for (const message of messages) if (await this.#storeOne(message)) stored.push(message);
      return stored;
    }
    for (const { created } of published) this.#count(created);
    return [...messages];
  }

  async #storeOne({ item, inbound }: Inbound<T>): Promise<boolean> {
    let created: boolean;
    try {
      ({ created } = await this.#write(inbound));
    } catch (error) {
      await this.#refused(item, inbound.key, error);
      return false;
    }
    this.#count(created);
    return true;
  }

  #count(created: boolean): void {
    if (created) this.#stored++;
    else this.#duplicates++;
  }
}
