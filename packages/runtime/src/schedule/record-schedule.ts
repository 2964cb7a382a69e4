import { ROUTE_RECORD_KEPT_MS } from "@sqlinbox/database";
import { brokerParts } from "../publish/sql-broker.js";
import { errorFields, type Logger } from "../logger.js";
import type { CronDeclaration } from "./cron.js";

/** Records a schedule's next tick, and the tick just published when there is one; `now` is the schedule's clock (the database's time). */
export type RecordSchedule = (cron: CronDeclaration, next: Date | undefined, last: Date | undefined, now: Date) => Promise<void>;

/**
 * How an app tells the operator tools about its schedules: in the control table, one row per
 * schedule (its pattern and zone, as JSON, and its next tick), written when the schedule starts
 * and moved on at each tick, and the last tick published. `sqlinbox status` and the dashboard read
 * them. A schedule record whose next tick passed a day ago is no running app's, and is pruned (the
 * last tick of a route stays: one small row).
 * Without the control table the schedules simply go unrecorded (said once, at debug level).
 */
export function scheduleRecorder(app: string, logger: Logger): RecordSchedule {
  let missingSaid = false;
  return async (cron, next, last, now) => {
    const database = await brokerParts(cron.broker).database();
    const { control } = database.dialect;
    // The zone the ticks are computed in: the host's when none was declared.
    const timeZone = cron.schedule.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    const schedule = JSON.stringify({ app, pattern: cron.schedule.pattern, timeZone });
    try {
      // One transaction: a reader never sees the new last tick beside the old next one.
      await database.transaction("control", async (trx) => {
        if (last !== undefined) await database.execute("control", control.recordLastTick(cron.route, last), trx);
        // A schedule with no more ticks keeps its record at the last one, pruned a day later.
        await database.execute("control", control.recordSchedule(cron.route, schedule, next ?? last ?? now), trx);
      });
      await database.execute("control", control.pruneSchedules(new Date(now.getTime() - ROUTE_RECORD_KEPT_MS)));
    } catch (error) {
      const missing = database.dialect.missingTable((error as { cause?: unknown }).cause ?? error);
      if (missing && !missingSaid) {
        missingSaid = true;
        logger.debug({ route: cron.route, table: control.table }, "no control table: this app's cron schedules are not shown by sqlinbox status");
      } else if (!missing)
        logger.warn({ ...errorFields(error), route: cron.route }, "recording the cron schedule in the control table failed; sqlinbox status may show an old next tick");
    }
  };
}
