import type { ClaimedDelivery } from "../claim/claim-strategy.js";

/**
 * A subscription's deliveries in work, each in a slot of its own that the delivery carries
 * (`inFlightSlot`): an add takes a free slot, a delete empties it and frees it. Nothing is hashed
 * or allocated per delivery once the slots cover the most deliveries in work at once; a `Set`
 * rebuilt its table every few adds, as each delivery's delete left a tombstone behind.
 */
export class InFlight {
  readonly #slots: (ClaimedDelivery | undefined)[] = [];
  readonly #free: number[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(delivery: ClaimedDelivery): void {
    if (delivery.inFlightSlot >= 0) return;
    const slot = this.#free.pop() ?? this.#slots.length;
    this.#slots[slot] = delivery;
    delivery.inFlightSlot = slot;
    this.#size++;
  }

  delete(delivery: ClaimedDelivery): void {
    const slot = delivery.inFlightSlot;
    if (slot < 0 || this.#slots[slot] !== delivery) return;
    this.#slots[slot] = undefined;
    this.#free.push(slot);
    delivery.inFlightSlot = -1;
    this.#size--;
  }

  /** The deliveries in work; one deleted while the walk goes on is skipped from then on. */
  *[Symbol.iterator](): IterableIterator<ClaimedDelivery> {
    for (const delivery of this.#slots) if (delivery !== undefined) yield delivery;
  }
}
