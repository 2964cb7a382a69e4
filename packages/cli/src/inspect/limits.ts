import { dialectFor } from "@sqlinbox/kysely-dialects";
import type { FlowLimitStatus, GroupStatus } from "@sqlinbox/dashboard";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";

/**
 * The caps and rate limits the module declares on a table's subscriptions, with what the database
 * holds now: the rows in work (of the route's group on a grouped table, as the status counted them)
 * and the starts in the rate limit's last window (from `sqlinbox_slots`). Notes say what could not be read.
 */
export async function readLimits(opened: OpenedDatabase, table: QueueTable, groups: readonly GroupStatus[], now: Date, notes: string[]): Promise<FlowLimitStatus[] | undefined> {
  const declared = table.limits ?? [];
  if (declared.length === 0) return undefined;
  const { flow } = dialectFor(opened.engine);
  const { spec } = table;
  const out: FlowLimitStatus[] = [];
  for (const limit of declared) {
    // On a grouped table the route name is the group the subscription claims.
    const inWork = spec.group === undefined ? sumInWork(groups) : (groups.find((g) => g.group === limit.route)?.inWork ?? (groups.some((g) => g.inWork === null) ? null : 0));
    let startedInWindow: number | null = null;
    if (limit.rateLimit !== undefined) {
      const place = { schema: spec.schema, name: `rate:${spec.table}:${limit.route}` };
      try {
        const row = (await opened.db.executeQuery(flow.startsSince(place, limit.rateLimit.max, now.getTime() - limit.rateLimit.perMs))).rows[0];
        startedInWindow = Number(row?.started ?? 0);
      } catch (error) {
        notes.push(`rate limit of ${limit.route}: starts unknown (${flow.slotTable}: ${(error as Error).message})`);
      }
    }
    out.push({
      route: limit.route,
      maxInWork: limit.maxInWork ?? null,
      inWork: limit.maxInWork === undefined ? null : inWork,
      rateLimit: limit.rateLimit ?? null,
      startedInWindow,
    });
  }
  return out;
}

function sumInWork(groups: readonly GroupStatus[]): number | null {
  if (groups.some((g) => g.inWork === null)) return null;
  return groups.reduce((sum, g) => sum + (g.inWork ?? 0), 0);
}
