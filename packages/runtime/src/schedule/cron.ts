import type { AnyInboxSpec, HasRole, RolesOf, SpecError } from "@sqlinbox/core/internal";
import { cronCatchUpInvalid, cronCatchUpNeedsProcessedAt, cronNeedsKey, noRouteInApp } from "../errors.js";
import type { PublishPayload, RouteSpecOf } from "../publish/sql-broker.js";
import { CronSchedule } from "./cron-schedule.js";

/** One tick of a schedule, as a payload function sees it. */
export interface CronTick {
  /** The tick's time (whole seconds). */
  readonly at: Date;
  /** Its dedup key: `cron:<route>:<at, ISO 8601 in UTC>`. */
  readonly key: string;
}

/** Options of `app.cron(…)`. */
export interface CronOptions {
  /** The IANA time zone the pattern's fields are read in (`"Europe/Berlin"`); default: the host's. */
  readonly timeZone?: string;
  /**
   * How many ticks missed while no process ran the app to publish at start: the most recent
   * `catchUp` ticks at or before the start (default 0: none). Needs a processedAt column, whose
   * processed rows keep their keys, so that a tick handled before the start is not published again.
   */
  readonly catchUp?: number;
}

/** The payload of each tick: a value, or a function of the tick. */
export type CronPayload<P> = P | ((tick: CronTick) => P);

type Routes = Record<string, AnyInboxSpec>;

/** `app.cron(route, …)` compiles when the app's brokers route the name (or it is a `string`) to a table with a dedup key column. */
export type CronRouteAllowed<R extends Routes, N extends string> = string extends N
  ? unknown
  : [RouteSpecOf<R, N>] extends [never]
    ? SpecError<"no broker of this app routes this name: declare it with broker.route(spec, name), and call cron(…) after withBroker(broker, …)">
    : HasRole<RolesOf<RouteSpecOf<R, N>>, "key"> extends true
      ? unknown
      : SpecError<"app.cron(…) needs a dedup key column on the route's table: each tick is published with the key cron:<route>:<tick time>, so that every process publishes it once; describe one with field.key() or .key(column(…))">;

/** `catchUp` compiles on a table with a processedAt column (or when the route is a `string`). */
export type CronOptionsFor<R extends Routes, N extends string> = [RouteSpecOf<R, N>] extends [never]
  ? CronOptions
  : HasRole<RolesOf<RouteSpecOf<R, N>>, "processedAt"> extends true
    ? CronOptions
    : {
        readonly timeZone?: string;
        readonly catchUp?: SpecError<"catchUp needs a processedAt column: on a table whose ack deletes the row, a handled tick's key is free again and a start would publish it again; describe one with field.processedAt(), or drop catchUp">;
      };

/** The payload a tick of route `N` publishes. */
export type CronPayloadFor<R extends Routes, N extends string> = CronPayload<PublishPayload<R, N>>;

/** A schedule an app declared: checked when declared, run by every process that starts the app. */
export interface CronDeclaration {
  readonly route: string;
  readonly table: string;
  readonly schedule: CronSchedule;
  readonly payload: CronPayload<unknown>;
  readonly catchUp: number;
  /** The broker (one the app runs) whose routes take `route`: its publisher publishes the ticks. */
  readonly broker: object;
}

/**
 * Checks a schedule where it is declared: the route on one of the app's brokers, a key column on its
 * table (and a processedAt column for `catchUp`), the pattern and the time zone.
 */
export function declareCron(
  route: string,
  pattern: string,
  payload: CronPayload<unknown>,
  options: CronOptions,
  routeOf: (route: string) => { readonly spec: AnyInboxSpec; readonly broker: object } | undefined,
): CronDeclaration {
  const routed = routeOf(route);
  if (routed === undefined) throw noRouteInApp(route);
  const spec = routed.spec.description;
  if (spec.key === undefined) throw cronNeedsKey(route, spec.table);
  const catchUp = options.catchUp ?? 0;
  if (!Number.isInteger(catchUp) || catchUp < 0) throw cronCatchUpInvalid(catchUp, route);
  if (catchUp > 0 && spec.processedAt === undefined) throw cronCatchUpNeedsProcessedAt(route, spec.table);
  const schedule = CronSchedule.parse(pattern, options.timeZone, route, new Date());
  return Object.freeze({ route, table: spec.table, schedule, payload, catchUp, broker: routed.broker });
}
