/**
 * Gathers a bridge's messages into batches for one write each: the first message added to an idle batcher
 * is written at once, alone; the messages that arrive while a write runs wait and go together in the next
 * one (at most `max` per write). So a trickle is written one message at a time, with no added wait, and a
 * backlog in writes of up to `max`, one after another, in the order added.
 */
export class WriteBatcher<T> {
  readonly #max: number;
  readonly #write: (items: T[]) => Promise<void>;
  readonly #failed: (error: unknown, items: readonly T[]) => void;
  readonly #waiting: T[] = [];
  readonly #room: Array<() => void> = [];
  #running: Promise<void> | undefined;

  /**
   * `write` takes one batch and settles each item itself (acked, given back, logged); should it reject all the
   * same, `failed` is told, and the batches after it are written as usual.
   */
  constructor(max: number, write: (items: T[]) => Promise<void>, failed: (error: unknown, items: readonly T[]) => void) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`a write batch holds 1 item or more, got ${max}`);
    this.#max = max;
    this.#write = write;
    this.#failed = failed;
  }

  /**
   * Adds an item to the next write. Resolves at once while fewer than `max` wait, else once a write took
   * them: a reader that awaits it reads no further ahead than one batch.
   */
  add(item: T): Promise<void> {
    this.#waiting.push(item);
    this.#running ??= this.#drain();
    if (this.#waiting.length < this.#max) return Promise.resolve();
    return new Promise((resolve) => this.#room.push(resolve));
  }

  /** Resolves once every item added so far was written. */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#waiting.length > 0) {
        const items = this.#waiting.splice(0, this.#max);
        for (const resolve of this.#room.splice(0)) resolve();
        try {
          await this.#write(items);
        } catch (error) {
          this.#failed(error, items);
        }
      }
    } finally {
      this.#running = undefined;
    }
  }
}
