import type { ClaimedDelivery } from "../claim/claim-strategy.js";

/**
 * Rows claimed ahead of the workers, in claim order, until a worker takes them. Kept as an array
 * and a read index, so taking one allocates nothing; the array is dropped once read through.
 */
export class DeliveryBuffer {
  /** A worker is free to take a row now. */
  readonly #free: () => boolean;
  /** Starts a row on a free worker. */
  readonly #start: (delivery: ClaimedDelivery) => void;
  #rows: ClaimedDelivery[] = [];
  #at = 0;
  /** `pump` is handing rows out (a synchronous handler's end pumps again: the running loop takes it). */
  #pumping = false;

  constructor(free: () => boolean, start: (delivery: ClaimedDelivery) => void) {
    this.#free = free;
    this.#start = start;
  }

  /** Rows waiting for a worker. */
  get size(): number {
    return this.#rows.length - this.#at;
  }

  /** Adds a claim's rows behind those waiting. */
  add(claimed: ClaimedDelivery[]): void {
    if (this.size === 0) {
      this.#rows = claimed;
      this.#at = 0;
    } else {
      for (const delivery of claimed) this.#rows.push(delivery);
    }
  }

  /** Hands waiting rows to free workers. */
  pump(): void {
    // A handler that returns without a promise finishes inside `start`, which pumps again: the loop below goes on instead.
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#at < this.#rows.length && this.#free()) this.#start(this.#rows[this.#at++] as ClaimedDelivery);
      if (this.#at === this.#rows.length && this.#at > 0) {
        this.#rows = [];
        this.#at = 0;
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Empties the buffer, returning the rows that never started (a stop). */
  takeAll(): ClaimedDelivery[] {
    const left = this.#rows.slice(this.#at);
    this.#rows = [];
    this.#at = 0;
    return left;
  }
}
