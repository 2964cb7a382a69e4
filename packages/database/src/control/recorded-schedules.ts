import { type ControlPlace, onControl } from "./control-procedures.js";

/** A cron schedule a running app recorded in the control table. */
export interface RecordedSchedule {
  /** The route each tick is published to. */
  readonly route: string;
  /** The app that runs it (every process of it records the same row). */
  readonly app: string;
  /** The cron pattern, as declared. */
  readonly pattern: string;
  /** The IANA zone its ticks are computed in (the app host's when none was declared). */
  readonly timeZone: string;
  /** The next tick, as the app computed it with its cron parser. */
  readonly nextTick: Date;
  /** The last tick an app published (or found published); absent before the first. */
  readonly lastTick?: Date;
  /**
   * The next tick is more than `overdueAfterMs` behind `now`: no running app moved it on (every
   * process of the app is stopped, or stuck); the ticks since were missed, unless an app's
   * `catchUp` publishes them when it starts.
   */
  readonly overdue: boolean;
}

/**
 * The cron schedules running apps recorded (`recordSchedule`: when a schedule starts and at each
 * tick), oldest route first, judged at `now` (the database's time). A record is a day old at most
 * past its next tick; older ones are pruned by the apps.
 */
export async function recordedSchedules(place: ControlPlace, now: Date, overdueAfterMs = 60_000): Promise<readonly RecordedSchedule[]> {
  const rows = (await onControl(place, place.db, place.dialect.control.readSchedules())).rows;
  const time = (value: unknown) => place.dialect.time.decode(value) ?? new Date(Number.NaN);
  const last = new Map(rows.filter((r) => r.kind === "lastTick").map((r) => [r.route, time(r.requested_at)]));
  const schedules: RecordedSchedule[] = [];
  for (const row of rows) {
    if (row.kind !== "schedule") continue;
    const { app, pattern, timeZone } = JSON.parse(row.target) as { app: string; pattern: string; timeZone: string };
    const nextTick = time(row.requested_at);
    const lastTick = last.get(row.route);
    schedules.push({
      route: row.route,
      app,
      pattern,
      timeZone,
      nextTick,
      ...(lastTick === undefined ? {} : { lastTick }),
      overdue: now.getTime() - nextTick.getTime() > overdueAfterMs,
    });
  }
  return schedules.sort((a, b) => a.route.localeCompare(b.route) || a.app.localeCompare(b.app));
}
