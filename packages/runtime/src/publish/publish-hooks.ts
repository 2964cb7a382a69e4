/** One publish call on its way to its table, as a publish middleware sees it (before the insert). */
export interface OutgoingPublish {
  /** The route published to. */
  readonly route: string;
  readonly table: string;
  /** How many rows this call inserts (a `publishMany` inserts several). */
  readonly rows: number;
  /**
   * The headers every row of this call is written with (what the publish passed in `{ headers }`), which
   * a middleware may add to or change before it calls `next()`; `undefined` when the table has no
   * headers column.
   */
  readonly headers: Record<string, string> | undefined;
}

/** What the insert of a publish wrote: one entry per row, in order (`id` as the engine returned it, when it did). */
export interface PublishedRow {
  readonly id: unknown;
  /** `false`: a dedup key found the row already there, and nothing was inserted. */
  readonly created: boolean;
}

/**
 * A function around each publish call through a started app's brokers (`app.usePublish`): `next()`
 * writes the rows (with `publish.headers` as they are then) and resolves to what it wrote, or
 * rejects with the publish's error. Return (or await) what `next()` gave; a middleware that throws
 * fails the publish, and one that never calls `next()` writes nothing.
 */
export type PublishMiddleware = (publish: OutgoingPublish, next: () => Promise<readonly PublishedRow[]>) => Promise<readonly PublishedRow[]>;
