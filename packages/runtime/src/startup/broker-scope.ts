import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import type { Subscriber } from "../declare/subscriber.js";
import type { SqlBroker } from "../publish/sql-broker.js";

/** The subscribers an app runs on one broker: `(b) => b.include(render).include(notify)`. */
export class BrokerScope {
  readonly subscribers: readonly Subscriber[];
  private constructor(subscribers: readonly Subscriber[]) {
    this.subscribers = Object.freeze([...subscribers]);
    Object.freeze(this);
  }
  /** @internal */
  static empty(): BrokerScope {
    return new BrokerScope([]);
  }
  include<S extends AnyInboxSpec>(sub: Subscriber<S>): BrokerScope {
    return new BrokerScope([...this.subscribers, sub as unknown as Subscriber]);
  }
}

/** One broker an app runs, and the subscribers it runs there. */
export interface BrokerUse {
  readonly broker: SqlBroker<Record<string, AnyInboxSpec>>;
  readonly scope: BrokerScope;
}
