import type { AnyInboxSpec, HasRole, RolesOf, SpecError } from "@sqlinbox/core/internal";
import type { Engine } from "@sqlinbox/kysely-dialects";
import { inboxRouteWithoutKey, noRoute } from "../errors.js";
import { brokerParts, type Published, type PublishPayload, type RouteSpecOf, type SqlBroker } from "../publish/sql-broker.js";

/** A message a broker delivered, as an inbox bridge stores it. */
export interface InboundMessage<P> {
  /** The message's id (JetStream's `Nats-Msg-Id` or stream sequence, a Redis entry's id field): the row's dedup key. */
  readonly key: string;
  readonly payload: P;
  /** The message's headers, kept in the table's headers column when it has one (dropped otherwise). */
  readonly headers: Readonly<Record<string, string>>;
}

type Routes = Record<string, AnyInboxSpec>;

/**
 * `unknown` when route `N`'s table has a dedup key column (or `N` is a `string` known only at run time,
 * checked then), else the sentence saying what to add.
 */
export type InboxRouteAllowed<R extends Routes, N extends string> = string extends N
  ? unknown
  : [RouteSpecOf<R, N>] extends [never]
    ? SpecError<"this broker's type routes no such name: declare it with .route(spec, name) and pass the broker .route() returns">
    : HasRole<RolesOf<RouteSpecOf<R, N>>, "key"> extends true
      ? unknown
      : SpecError<"an inbox bridge stores each message under its message id as the dedup key: describe a dedup key column on the route's table (field.key() or .key(column(…)))">;

/**
 * Stores one message: a keyed publish; `created: false` when a row already holds its key. `many` stores
 * several in one call: one multi-row insert per chunk on Postgres and SQLite (`ON CONFLICT DO NOTHING`; one
 * transaction when there are several chunks), one insert per row inside one transaction on MySQL/MariaDB (where
 * a keyed row is a plain insert), each message keeping its own headers, the new rows' ids in the messages' order; one
 * `Published` per message, in order, once they committed.
 */
export interface InboxWrite<P> {
  (message: InboundMessage<P>): Promise<Published>;
  many(messages: readonly InboundMessage<P>[]): Promise<Published[]>;
}

/**
 * The write of an inbox bridge: each message becomes a row of route `route`'s table under its message id
 * as the dedup key (insert-or-nothing, see "Dedup keys" in the publishing guide), committed when the
 * returned promise resolves. A bridge acks the message to its broker only then, so a message whose ack
 * is lost comes back, finds its key taken (`created: false`) and is acked again without a second row.
 * Throws `NoRoute` for a route the broker does not declare and `Declaration` for a table with no key column.
 */
export function inboxWriter<R extends Routes, N extends string, E extends Engine>(broker: SqlBroker<R, E>, route: N): InboxWrite<PublishPayload<R, N>> {
  const routes = brokerParts(broker).routes;
  const spec = routes.route(route);
  if (spec === undefined) throw noRoute(route, routes.all);
  const { key, headers, table } = spec.description;
  if (key === undefined) throw inboxRouteWithoutKey(route, table);
  const publish = broker.publish.bind(broker) as (name: string, payload: unknown, options: { key: string; headers?: Readonly<Record<string, string>> }) => Promise<Published>;
  const write = (message: InboundMessage<PublishPayload<R, N>>) =>
    publish(route, message.payload, headers === undefined ? { key: message.key } : { key: message.key, headers: message.headers });
  const many = async (messages: readonly InboundMessage<PublishPayload<R, N>>[]): Promise<Published[]> => {
    if (messages.length === 0) return [];
    const rowHeaders = headers === undefined ? undefined : messages.map((m) => m.headers);
    return brokerParts(broker).publisher.publishMany(
      route,
      messages.map((m) => m.payload),
      undefined,
      { keys: messages.map((m) => m.key), rowHeaders, inGivenOrder: true, oneTransaction: true },
      broker.listening,
    );
  };
  return Object.assign(write, { many });
}
