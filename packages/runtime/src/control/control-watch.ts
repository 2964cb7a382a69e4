import { namesSubscription, ROUTE_RECORD_KEPT_MS } from "@sqlinbox/database";
import type { ControlRow } from "@sqlinbox/kysely-dialects";
import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import type { Clock, Timer } from "../clock.js";
import type { Subscription } from "../consume/subscription.js";
import type { CancelCheck } from "../consume/setup.js";
import type { Database } from "../drivers/database.js";
import { cancelled } from "../errors.js";
import { errorFields, type Logger } from "../logger.js";

/** How long an app waits before it looks for a control table that was missing: a failed read every poll would fill the server's log. */
const MISSING_CONTROL_RECHECK_MS = 30_000;

/** At most this many cancel requests run in work elsewhere are looked up per read (a lookup per request, by primary key). */
const STALE_CHECKS_PER_READ = 16;

/** How often an app records the routes it serves in the control table, for `sqlinbox pause` to check a name against. */
const ROUTE_RECORD_MS = 60 * 60 * 1000;

/** What a watch needs to know of a route name: the table it goes to (a cancel names a route, the delivery knows its table). */
export type TableOfRoute = (route: string) => string | undefined;

/** One subscription as the watch serves it, with the cancel requests it must serve. */
interface Served {
  readonly subscription: Subscription;
  /** The ids (as text) a cancel request names, each with the route the request was written under. */
  targets: Map<string, string>;
  /** Requests this app served (a delivery's signal aborted here): cleared once the delivery is gone. */
  readonly interrupted: Map<string, string>;
}

/**
 * Reads the control table once per poll interval for every subscription of one broker in one app
 * (one statement, whatever the number of subscriptions, and none in the claims): pauses and
 * resumes subscriptions whose route is paused, aborts the signal of deliveries in work that a
 * cancel request names, and clears a served request once its delivery settled. A request for a row
 * not in work here is looked up by its id (at most `STALE_CHECKS_PER_READ` per read): one whose row
 * is gone finished before any app read it, and is cleared. On Postgres with
 * `listenNotify()` a pause or cancel notifies its channel, and the watch reads at once.
 *
 * Without a control table (an app that never pauses or cancels) nothing is paused; the watch looks
 * for the table again every `MISSING_CONTROL_RECHECK_MS`.
 *
 * At its first read and then once an hour, it records the routes it serves (one row per route and
 * app, `kind = 'route'`) and prunes the records no app refreshed for a day: what `sqlinbox pause`
 * checks a route name against.
 */
export class ControlWatch {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #tableOf: TableOfRoute;
  readonly #served = new Map<string, Served>();
  /** Each subscription's check, by its name: told how many requests it serves (`requested`) whenever they are read. */
  readonly #checks = new Map<string, { requested: number }>();
  #timer: Timer | undefined;
  #reading: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #missing = false;
  /** The app's name, under which its routes are recorded. */
  readonly #app: string;
  /** When the routes were last recorded (ms on the watch's clock). */
  #recordedAt: number | undefined;

  constructor(options: { database: Database; clock: Clock; logger: Logger; intervalMs: number; tableOf: TableOfRoute; app: string }) {
    this.#app = options.app;
    this.#database = options.database;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#intervalMs = options.intervalMs;
    this.#tableOf = options.tableOf;
  }

  /** What a subscription named `name` checks as a delivery starts: a row a cancel request names starts with its signal aborted. */
  checkFor(name: string, table: string): CancelCheck {
    const check = {
      requested: 0,
      starting: (delivery: ClaimedDelivery) => {
        const served = this.#served.get(name);
        if (served === undefined || served.targets.size === 0) return;
        const target = String(delivery.id);
        if (!served.targets.has(target)) return;
        delivery.interrupt(cancelled({ subscription: name, table, id: delivery.id }));
        served.interrupted.set(target, served.targets.get(target) ?? name);
      },
    };
    this.#checks.set(name, check);
    return check;
  }

  /** The subscriptions it serves (built with `checkFor`). */
  attach(subscriptions: readonly Subscription[]): void {
    for (const subscription of subscriptions) this.#served.set(subscription.name, { subscription, targets: new Map(), interrupted: new Map() });
  }

  /** Reads now (startup: before the first claim, so a paused route claims nothing), then every interval. */
  async start(): Promise<void> {
    await this.read();
    this.#schedule(this.#intervalMs);
  }

  /** Reads now (a notification from another process); a read under way reads once more when it ends. */
  refresh(): void {
    if (this.#stopped) return;
    if (this.#reading !== undefined) {
      this.#again = true;
      return;
    }
    void this.read();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** One read of the control table, applied to every subscription. */
  read(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
      if (this.#again && !this.#stopped) {
        this.#again = false;
        void this.read();
      }
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    const database = this.#database;
    let rows: ControlRow[];
    try {
      rows = (await database.execute("control", database.dialect.control.read())).rows;
    } catch (error) {
      // The app is stopping: its pool may close under this read.
      if (this.#stopped) return;
      const missing = database.dialect.missingTable((error as { cause?: unknown }).cause ?? error);
      // Most apps never pause or cancel: a missing table is news only to one that does, and `pause` itself says it is missing.
      if (missing && !this.#missing) this.#logger.debug({ table: database.dialect.control.table }, "no control table: pause and cancel are off for this app until it exists");
      else if (!missing) this.#logger.warn({ ...errorFields(error) }, "reading the control table failed; trying again after the poll interval");
      this.#missing = missing;
      return;
    }
    if (this.#missing) this.#logger.info({ table: database.dialect.control.table }, "control table found: pause and cancel are on");
    this.#missing = false;
    if (!this.#stopped) await this.#apply(rows);
    if (!this.#stopped) await this.#recordRoutes();
  }

  /** Records the routes served here (and prunes stale records), at the first read and then once per `ROUTE_RECORD_MS`. */
  async #recordRoutes(): Promise<void> {
    const now = this.#clock.now();
    if (this.#recordedAt !== undefined && now.getTime() - this.#recordedAt < ROUTE_RECORD_MS) return;
    this.#recordedAt = now.getTime();
    const routes = [...this.#served.keys()];
    if (routes.length === 0) return;
    const { control } = this.#database.dialect;
    try {
      await this.#database.execute("control", control.recordRoutes(routes, this.#app, now));
      await this.#database.execute("control", control.pruneRoutes(new Date(now.getTime() - ROUTE_RECORD_KEPT_MS)));
    } catch (error) {
      if (!this.#stopped)
        this.#logger.warn({ ...errorFields(error) }, "recording the routes this app serves in the control table failed; sqlinbox pause may say no app serves them");
    }
  }

  async #apply(rows: readonly ControlRow[]): Promise<void> {
    const pauses = rows.filter((r) => r.kind === "pause").map((r) => r.route);
    const cancels = rows.filter((r) => r.kind === "cancel");
    const clears: Array<{ route: string; target: string }> = [];
    // Requests for rows of these tables that are not in work here: in work in another app, queued again, or finished.
    const elsewhere: Array<{ served: Served; route: string; target: string }> = [];
    for (const served of this.#served.values()) {
      const { subscription } = served;
      const paused = pauses.some((route) => namesSubscription(route, subscription.name));
      if (paused && !subscription.paused) {
        this.#logger.info({ subscription: subscription.name }, "route paused: no more claims; deliveries in work finish");
        await subscription.pause();
      } else if (!paused && subscription.paused) {
        this.#logger.info({ subscription: subscription.name }, "route resumed");
        subscription.resume();
      }
      // A request names the row's route (or a route to the same table), or the table itself (the operator tools).
      const mine = cancels.filter((r) => r.route === subscription.name || r.route === subscription.table || this.#tableOf(r.route) === subscription.table);
      served.targets = new Map(mine.map((r) => [r.target, r.route]));
      const check = this.#checks.get(subscription.name);
      if (check !== undefined) check.requested = served.targets.size;
      const reason = (id: unknown) => cancelled({ subscription: subscription.name, table: subscription.table, id });
      const inWork = new Set(served.targets.size === 0 ? [] : subscription.interrupt(served.targets, reason));
      for (const target of inWork) if (!served.interrupted.has(target)) served.interrupted.set(target, served.targets.get(target) ?? subscription.name);
      // Served here and settled since: the request is done.
      for (const [target, route] of served.interrupted) {
        if (inWork.has(target)) continue;
        served.interrupted.delete(target);
        clears.push({ route, target });
      }
      for (const [target, route] of served.targets) if (!inWork.has(target) && !served.interrupted.has(target)) elsewhere.push({ served, route, target });
    }
    for (const done of await this.#finished(elsewhere.slice(0, STALE_CHECKS_PER_READ))) {
      // Done: a row that takes its id from now on starts as any other.
      done.served.targets.delete(done.target);
      clears.push(done);
    }
    const cleared = new Set<string>();
    for (const { route, target } of clears) {
      const key = `${route}\u0000${target}`;
      if (cleared.has(key)) continue;
      cleared.add(key);
      try {
        await this.#database.execute("control", this.#database.dialect.control.clearCancel(route, target));
      } catch (error) {
        this.#logger.warn({ ...errorFields(error), route, id: target }, "clearing a served cancel request failed; a later cancel clears it");
      }
    }
  }

  /**
   * The requests among `requests` whose row is finished (no such row, or a processed one): a row
   * that settled before any app read its request (or in an app that stopped before it cleared it).
   * Such a request is done, and must not wait for a later row that takes the same id. A row that
   * still exists keeps its request: in work in another app, or queued again, to be cancelled as it starts.
   */
  async #finished<R extends { readonly served: Served; readonly route: string; readonly target: string }>(requests: readonly R[]): Promise<R[]> {
    const done: R[] = [];
    for (const request of requests) {
      try {
        const found = await this.#database.execute("control", this.#database.dialect.control.findRow(request.served.subscription.spec, request.target));
        if (found.rows.length === 0) done.push(request);
      } catch (error) {
        if (!this.#stopped)
          this.#logger.warn({ ...errorFields(error), route: request.route, id: request.target }, "looking up a cancelled row failed; its request stays until a later read");
      }
    }
    return done;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = this.#clock.setTimer(delayMs, () => {
      this.#timer = undefined;
      void this.read().finally(() => this.#schedule(this.#missing ? MISSING_CONTROL_RECHECK_MS : this.#intervalMs));
    });
  }
}
