import type { ListenClient } from "@sqlinbox/database";

// Typed by what a caller can see of a `pg` client or pool: pg's own `on` is one generic signature,
// which no overloads of ours accept, so the events are read through `ListenClient` inside.

/** A `pg` client that `listenNotify()` connects itself and ends when it lets go (`new pg.Client(…)`). */
export interface ListenableClient {
  connect(): Promise<unknown>;
  end(): Promise<unknown>;
  query(text: string): Promise<unknown>;
}

/** A `pg` pool whose clients go back with `release` (`new pg.Pool(…)`). */
export interface ListenPool {
  connect(): Promise<{ query(text: string): Promise<unknown>; release(error?: Error | boolean): void }>;
}

/**
 * Where `listenNotify()` takes its connection on a broker built with `SqlBroker.fromKysely`: a
 * factory of fresh `pg` clients, or a `pg` pool of its own. The connection is held for the app's
 * life, so it should not come from the pool of the Kysely instance the handlers use.
 */
export type ListenSource = (() => ListenableClient | Promise<ListenableClient>) | ListenPool;

/** Turns a listen source into what the listener takes: a connection released when it is done. */
export function listenConnector(source: ListenSource): () => Promise<ListenClient> {
  if (typeof source !== "function") return async () => (await source.connect()) as unknown as ListenClient;
  return async () => {
    const created = await source();
    const client = created as unknown as ListenClient & ListenableClient;
    await client.connect();
    const release = (): void => {
      client.end().catch(() => {});
    };
    const on = ((event: "end", listener: () => void) => client.on(event, listener)) as ListenClient["on"];
    return {
      query: (text, values) => client.query(text, values),
      on,
      removeListener: (event, listener) => client.removeListener(event, listener),
      release,
    };
  };
}
