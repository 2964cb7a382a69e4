/** A row's notices as a map key: its subscription and its id (a binary id compares by its bytes). */
const rowKey = (subscription: string, id: unknown): string => `${subscription}\u0000${String(id)}`;

/**
 * Keeps `published` before `started`. A publish outside a transaction commits its row before the
 * insert's reply is read, so a subscription polling on another connection may claim it first. While
 * publishes of this app are in flight, a delivery that starts has its notices (`started` and what
 * follows) held until every publish that was in flight then has ended: its `published`, when it is
 * this app's, is told by then. No publish in flight: told at once.
 */
export class PublishOrder {
  readonly #inFlight = new Set<object>();
  /** Held rows, each with the publishes it waits for and its notices in order. */
  readonly #held = new Map<string, { readonly waiting: Set<object>; readonly notices: Array<() => void> }>();

  /** A publish begins; the function returned ends it (once told, or failed). */
  readonly publishing = (): (() => void) => {
    const token = {};
    this.#inFlight.add(token);
    return () => {
      if (!this.#inFlight.delete(token)) return;
      for (const [key, held] of [...this.#held]) {
        if (!held.waiting.delete(token) || held.waiting.size > 0) continue;
        this.#held.delete(key);
        for (const notice of held.notices) notice();
      }
    };
  };

  /** Tells `notice` of a row now, or behind the publishes in flight (`starts`: the notice begins a delivery). */
  notify(subscription: string, id: unknown, starts: boolean, notice: () => void): void {
    const key = rowKey(subscription, id);
    const held = this.#held.get(key);
    if (held !== undefined) held.notices.push(notice);
    else if (starts && this.#inFlight.size > 0) this.#held.set(key, { waiting: new Set(this.#inFlight), notices: [notice] });
    else notice();
  }
}
