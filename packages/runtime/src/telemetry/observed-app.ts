import type { InboxDescription } from "@sqlinbox/core/internal";
import type { ClaimStrategy } from "../claim/claim-strategy.js";
import type { Database } from "../drivers/database.js";
import { headersColumnOf } from "./trace-headers.js";
import type { ObservedDatabase, ObservedSubscription, SubscriptionPlace } from "./telemetry.js";

/** Where a subscription's spans and points come from. */
export function subscriptionPlace(route: string, spec: InboxDescription, form: string, dbSystem: string): SubscriptionPlace {
  return { route, table: spec.table, form, dbSystem, headersColumn: headersColumnOf(spec) };
}

/** What the observable instruments read of one running subscription (`inFlight`: its deliveries in work now). */
export function observedSubscription(place: SubscriptionPlace, inFlight: () => number, strategy: ClaimStrategy, database: Database, spec: InboxDescription): ObservedSubscription {
  const depthQuery = database.dialect.observe.queueDepth(spec, spec.group === undefined ? {} : { group: place.route });
  return {
    ...place,
    inFlight,
    connectionsPerDelivery: strategy.profile.connectionsPerDelivery,
    countDepth: async () => Number((await database.execute("observe", depthQuery)).rows[0]?.depth ?? 0),
  };
}

/** What the observable instruments read of one open database. */
export function observedDatabase(database: Database, dbSystem: string): ObservedDatabase {
  return { dbSystem, running: () => database.running, deadlocksRetried: () => database.deadlocks };
}
