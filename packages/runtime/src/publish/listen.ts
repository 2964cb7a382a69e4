import type { ListenClient } from "@sqlinbox/database";
import { postgresDialect } from "@sqlinbox/kysely-dialects";
import { channelOf, type ChannelTable } from "@sqlinbox/kysely-dialects/internal";
import { errorFields, type Logger } from "../logger.js";

const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 30_000;

/**
 * `LISTEN`s on one channel per routed table on a connection held for the app's life; a
 * notification wakes that table's subscriptions: those of the group its payload names, or every one
 * when the payload is empty. A dropped connection is logged as a warning and
 * taken again with a backoff (250 ms doubling up to 30 s); once it is back every table is woken,
 * since notifications sent meanwhile were lost (polling guaranteed progress in between).
 */
export class PgListener {
  readonly #acquire: () => Promise<ListenClient>;
  readonly #channels: ReadonlyMap<string, string>;
  readonly #wake: (table: string, group?: string) => void;
  readonly #logger: Logger;
  #client: ListenClient | undefined;
  #detach: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #retryMs = FIRST_RETRY_MS;
  #stopped = false;

  /**
   * `tables`: each routed table; `wake` is called with its bare name (subscriptions register wakes by table name)
   * and the notification's payload, the group, when it names one.
   */
  constructor(acquire: () => Promise<ListenClient>, tables: Iterable<ChannelTable>, wake: (table: string, group?: string) => void, logger: Logger) {
    this.#acquire = acquire;
    this.#channels = new Map([...tables].map((t) => [channelOf(t), typeof t === "string" ? t : t.table]));
    this.#wake = wake;
    this.#logger = logger;
  }

  /** Takes the connection and listens; fails (and holds nothing) when it cannot. */
  async start(): Promise<void> {
    await this.#connect();
    this.#logger.info({ channels: [...this.#channels.keys()].join(",") }, "listenNotify listening");
  }

  async #connect(): Promise<void> {
    const client = await this.#acquire();
    let lost = false;
    const onNotification = (message: { channel: string; payload?: string }): void => {
      const table = this.#channels.get(message.channel);
      if (table !== undefined) this.#wake(table, message.payload === undefined || message.payload === "" ? undefined : message.payload);
    };
    const onLost = (error?: unknown): void => {
      if (lost || this.#client !== client) return;
      lost = true;
      this.#dropped(client, error);
    };
    const onError = (error: unknown): void => onLost(error);
    const onEnd = (): void => onLost();
    client.on("notification", onNotification);
    client.on("error", onError);
    client.on("end", onEnd);
    const detach = (): void => {
      client.removeListener("notification", onNotification);
      client.removeListener("error", onError);
      client.removeListener("end", onEnd);
    };
    try {
      for (const channel of this.#channels.keys()) {
        const listen = postgresDialect.notify.listen(channel);
        await client.query(listen.sql, [...listen.parameters]);
      }
    } catch (error) {
      detach();
      client.release(error instanceof Error ? error : true);
      throw error;
    }
    if (this.#stopped) {
      detach();
      client.release(true);
      return;
    }
    this.#client = client;
    this.#detach = detach;
  }

  #dropped(client: ListenClient, error: unknown): void {
    this.#detach?.();
    this.#detach = undefined;
    this.#client = undefined;
    client.release(error instanceof Error ? error : true);
    if (this.#stopped) return;
    this.#logger.warn({ ...(error === undefined ? {} : errorFields(error)), retryInMs: this.#retryMs }, "listenNotify connection lost: reconnecting (polling continues meanwhile)");
    this.#schedule();
  }

  #schedule(): void {
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#stopped) return;
      this.#connect().then(
        () => {
          if (this.#stopped || this.#client === undefined) return;
          this.#retryMs = FIRST_RETRY_MS;
          this.#logger.info({}, "listenNotify reconnected");
          for (const table of this.#channels.values()) this.#wake(table);
        },
        (error: unknown) => {
          if (this.#stopped) return;
          this.#logger.warn({ ...errorFields(error), retryInMs: this.#retryMs }, "listenNotify reconnect failed: retrying");
          this.#schedule();
        },
      );
    }, delay);
    this.#timer.unref?.();
  }

  /** Stops listening on every channel, and the connection goes back (or is closed when it failed). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const client = this.#client;
    if (client === undefined) return;
    this.#client = undefined;
    this.#detach?.();
    this.#detach = undefined;
    try {
      const stopListening = postgresDialect.notify.unlistenAll();
      await client.query(stopListening.sql, [...stopListening.parameters]);
      client.release();
    } catch (error) {
      client.release(error instanceof Error ? error : true);
    }
  }
}
