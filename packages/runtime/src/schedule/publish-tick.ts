import { isSqlInboxError } from "@sqlinbox/core/internal";
import { isDuplicateKey } from "../drivers/database.js";
import { errorFields, type Logger } from "../logger.js";
import { brokerParts } from "../publish/sql-broker.js";
import type { CronDeclaration } from "./cron.js";
import type { PublishTick, TickOutcome, TickToPublish } from "./cron-runner.js";

/** How long a process publishes unmarked ticks after it found no control table, before it looks again. */
const MISSING_CONTROL_RECHECK_MS = 5 * 60_000;

/**
 * How an app's processes publish a tick, each at its own time, once. Every tick goes with its key
 * (`cron:<route>:<time>`), so while its row is in the table no second row is made. On a table that
 * keeps handled rows (processedAt) that is all. On one whose ack deletes the row, a process that
 * publishes a tick after another's row of it was handled would find the key free again; there the
 * tick is also marked in the control table, in the publish's transaction: a process that finds the
 * mark publishes nothing. The marks of ticks no process publishes any more (past `oldestLive`) are
 * pruned by the process that marks a tick. Without the control table, the ticks go unmarked, with
 * one warning saying what that risks.
 */
export function tickPublisher(logger: Logger): PublishTick {
  let unmarkedUntil = 0;
  let warned = false;
  return async (cron: CronDeclaration, tick: TickToPublish): Promise<TickOutcome> => {
    const parts = brokerParts(cron.broker);
    const keepsRows = parts.routes.route(cron.route)?.description.processedAt !== undefined;
    const plain = () => parts.publisher.publish(cron.route, tick.payload, undefined, { keys: [tick.key] });
    if (keepsRows || Date.now() < unmarkedUntil) return plain();
    const database = await parts.database();
    const control = database.dialect.control;
    let marking = true;
    try {
      const outcome = await database.transaction("publish", async (trx): Promise<TickOutcome> => {
        try {
          const marked = await database.execute("control", control.markTick(cron.route, tick.at), trx);
          if (Number(marked.numAffectedRows ?? 0n) === 0) return { created: false };
        } catch (error) {
          if (isDuplicateKey(error)) return { created: false };
          throw error;
        }
        marking = false;
        return parts.publisher.publish(cron.route, tick.payload, trx, { keys: [tick.key] });
      });
      if (outcome.created) {
        await database
          .execute("control", control.pruneTicks(cron.route, tick.oldestLive))
          .catch((error: unknown) => logger.debug({ ...errorFields(error), route: cron.route }, "pruning old cron tick marks failed; the next tick prunes them"));
      }
      return outcome;
    } catch (error) {
      if (!marking || !isSqlInboxError(error, "Schema") || !database.dialect.missingTable(error.cause)) throw error;
      unmarkedUntil = Date.now() + MISSING_CONTROL_RECHECK_MS;
      if (!warned) {
        warned = true;
        logger.warn(
          { route: cron.route, table: cron.table, controlTable: control.table },
          "cron on a table whose ack deletes the row, without the control table: a process that publishes a tick after its row was handled publishes it again; create the control table (createControlTable) or give the table a processedAt column",
        );
      }
      return plain();
    }
  };
}
