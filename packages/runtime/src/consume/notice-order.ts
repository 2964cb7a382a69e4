/** A row's id as a map key: the same id read twice is equal (a binary id compares by its bytes). */
const idKey = (id: unknown): unknown => (typeof id === "object" && id !== null ? String(id) : id);

/** A delivery as the order knows it: one object per claim of a row. */
interface Claimed {
  readonly id: unknown;
}

/**
 * Keeps what an observer is told of one row in order. A settlement that frees its row (a retry at
 * once) lets another worker claim the row before the write's reply is read, so the new delivery's
 * notices would come before the settlement's. While a delivery's settlement is written, the
 * notices of a later delivery of the same id are held, and go out once that settlement was told.
 */
export class NoticeOrder {
  /** The ids whose settlement is being written, each with its writer and the notices held behind it. */
  readonly #settling = new Map<unknown, { readonly writer: Claimed; readonly held: Array<() => void> }>();

  /** `delivery` begins to write its settlement. */
  writing(delivery: Claimed): void {
    const key = idKey(delivery.id);
    if (!this.#settling.has(key)) this.#settling.set(key, { writer: delivery, held: [] });
  }

  /** Tells now, or behind the settlement of the same id that another delivery is writing. */
  notify(delivery: Claimed, notice: () => void): void {
    const settling = this.#settling.get(idKey(delivery.id));
    if (settling === undefined || settling.writer === delivery) notice();
    else settling.held.push(notice);
  }

  /** The settlement `delivery` wrote was told: the notices held behind it go out, in order (`failed`: one that threw). */
  told(delivery: Claimed, failed: (error: unknown) => void): void {
    const key = idKey(delivery.id);
    const settling = this.#settling.get(key);
    if (settling?.writer !== delivery) return;
    this.#settling.delete(key);
    for (const notice of settling.held) {
      try {
        notice();
      } catch (error) {
        failed(error);
      }
    }
  }
}
