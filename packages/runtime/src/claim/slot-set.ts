/** What a `SlotSet` holds: the item carries its place in the one set that holds it, -1 while in none. */
export interface Slotted {
  slot: number;
}

/**
 * A set of the hot path's objects (deliveries in work, leases held), each in a slot of its own
 * that the item carries: an add takes a free slot, a delete empties it and frees it. Nothing is
 * hashed or allocated per item once the slots cover the most items held at once; a `Set` rebuilt
 * its table every few adds, as each item's delete left a tombstone behind. An item is in one
 * `SlotSet` at a time (its `slot` says where).
 */
export class SlotSet<T extends Slotted> {
  readonly #slots: (T | undefined)[] = [];
  readonly #free: number[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Adds `item` unless it is in a set already. */
  add(item: T): void {
    if (item.slot >= 0) return;
    const slot = this.#free.pop() ?? this.#slots.length;
    this.#slots[slot] = item;
    item.slot = slot;
    this.#size++;
  }

  /** Whether `item` is here. */
  has(item: T): boolean {
    return item.slot >= 0 && this.#slots[item.slot] === item;
  }

  /** Removes `item`; false when it was not here. */
  delete(item: T): boolean {
    const slot = item.slot;
    if (slot < 0 || this.#slots[slot] !== item) return false;
    this.#slots[slot] = undefined;
    this.#free.push(slot);
    item.slot = -1;
    this.#size--;
    return true;
  }

  /** The items held; one deleted while the walk goes on is skipped from then on. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const item of this.#slots) if (item !== undefined) yield item;
  }
}
