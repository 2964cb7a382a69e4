import { SqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";
import { causeMessage } from "./cause-message.js";

/** Outbox relays and inbox bridges: a send a message broker did not confirm, a route a bridge cannot dedup on. */

export function relayNotConfirmed(broker: string, failedIds: readonly string[], rows: number, place: ErrorPlace, cause: unknown): SqlInboxError {
  const shown = failedIds.slice(0, 10).join(", ") + (failedIds.length > 10 ? ", …" : "");
  return new SqlInboxError(
    "Handler",
    `${broker} did not confirm ${failedIds.length} of ${rows} messages (row ids ${shown}): ${causeMessage(cause)}; the rows stay in the table and the queue's onError policy retries them`,
    place,
    { cause },
  );
}

export function inboxRouteWithoutKey(route: string, table: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "an inbox bridge stores each message under its message id as the dedup key: describe a dedup key column on the route's table (field.key() or .key(column(…)))",
    { route, table },
  );
}
