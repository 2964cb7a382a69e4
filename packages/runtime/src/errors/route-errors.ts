import { SqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";
import { causeMessage } from "./cause-message.js";

/** Routes, publishes and schedules: a name nobody declared, declared twice, an option its table has no column for. */

// Routes and subscribers.

/** The routes a broker declares, by name. */
type Routes = ReadonlyMap<string, unknown>;

export function noRoute(name: string, routes: Routes, table?: string): SqlInboxError {
  const known = [...routes.keys()].map((n) => `"${n}"`).join(", ") || "none";
  return new SqlInboxError(
    "NoRoute",
    `no route named "${name}" (declared: ${known}): declare it with broker.route(spec, "${name}")`,
    table === undefined ? { route: name } : { route: name, table },
  );
}

export function noRouteInApp(route: string): SqlInboxError {
  return new SqlInboxError("NoRoute", `no broker of this app declares route "${route}"`, { route });
}

export function routeOnOtherTable(name: string, routeTable: string, queueTable: string): SqlInboxError {
  return new SqlInboxError("Declaration", `route "${name}" is on table "${routeTable}", the subscriber's queue on "${queueTable}"`, { subscription: name });
}

export function routeAlreadyDeclared(name: string, knownTable: string, table: string): SqlInboxError {
  return new SqlInboxError("Declaration", `route "${name}" is already declared on table "${knownTable}"`, { route: name, table });
}

export function routeSubscribedTwice(name: string): SqlInboxError {
  return new SqlInboxError("AlreadySubscribed", "a route has one subscriber per app", { subscription: name });
}

export function queueSubscribedTwice(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "AlreadySubscribed",
    "this queue already has a subscriber on this broker (in this or another running app): one subscriber per queue, raise its workers instead",
    place,
  );
}

// Publish options.

/** A publish option the route's table has no column for (`priority`, `runAt`/`delay`, `key`, a data column). */
export function publishOptionWithoutColumn(route: string, table: string, message: string, column?: string): SqlInboxError {
  return new SqlInboxError("Declaration", message, { subscription: route, table, ...(column !== undefined ? { column } : {}) });
}

export function headersWithoutColumn(route: string, table: string): SqlInboxError {
  return new SqlInboxError("Declaration", "a publish with headers needs a headers column: describe one with field.headers() or .headers(column(…))", {
    route,
    table,
  });
}

// Schedules (app.cron).

const inZone = (timeZone: string | undefined): string => (timeZone === undefined ? "" : ` in time zone "${timeZone}"`);

/** croner refused the pattern: its reason, first line. */
export function cronPatternInvalid(pattern: string, timeZone: string | undefined, cause: unknown, route: string): SqlInboxError {
  const why = causeMessage(cause).split("\n")[0];
  return new SqlInboxError(
    "Declaration",
    `app.cron(…) cannot read the pattern "${pattern}"${inZone(timeZone)}: ${why}; give 5 fields (minute hour day month weekday), or 6 with seconds first`,
    { route },
    { cause },
  );
}

/** The pattern reads, the time zone is one this host does not know. */
export function cronTimeZoneInvalid(pattern: string, timeZone: string, cause: unknown, route: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `app.cron(…, { timeZone: "${timeZone}" }): this host knows no time zone "${timeZone}" (for the pattern "${pattern}"): give an IANA name such as "Europe/Berlin" or "America/New_York"; Intl.supportedValuesOf("timeZone") lists them`,
    { route },
    { cause },
  );
}

export function cronNeverFires(pattern: string, timeZone: string | undefined, route: string): SqlInboxError {
  return new SqlInboxError("Declaration", `app.cron(…): the pattern "${pattern}"${inZone(timeZone)} never fires from now on: check its day and month fields`, { route });
}

export function cronNeedsKey(route: string, table: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "app.cron(…) needs a dedup key column on the route's table: each tick is published with the key cron:<route>:<tick time>, so that every process running the app publishes it once; describe one with field.key() or .key(column(…))",
    { route, table },
  );
}

export function cronCatchUpNeedsProcessedAt(route: string, table: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "app.cron(…, { catchUp }) needs a processedAt column on the route's table: on a table whose ack deletes the row, a handled tick's key is free again, and every start would publish it again; describe one with field.processedAt(), or drop catchUp",
    { route, table },
  );
}

export function cronCatchUpInvalid(catchUp: number, route: string): SqlInboxError {
  return new SqlInboxError("Declaration", `app.cron(…, { catchUp: ${catchUp} }): catchUp is how many missed ticks to publish at start, a whole number from 0`, { route });
}
