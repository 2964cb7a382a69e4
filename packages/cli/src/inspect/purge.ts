import { operatorFor, waitingOf } from "@sqlinbox/kysely-dialects/operator";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";
import { groupKey } from "./in-work.js";
import { countDeadLetters } from "./dead-letters.js";
import { placesOf, type RowSelection } from "./rows.js";

export interface PurgeRequest {
  readonly state: RowSelection;
  readonly group?: string | undefined;
  readonly ids?: readonly string[] | undefined;
  readonly now: Date;
  /** Only rows handled before this time (`--older-than`, done rows). */
  readonly processedBefore?: Date;
}

const STATE_COLUMN = { ready: "claimable", delayed: "delayed", leased: "leased", done: "done", all: "total" } as const;

/** How many rows a purge would delete (what the prompt asks about); the named ids count as given. */
export async function countPurge(opened: OpenedDatabase, table: QueueTable, request: PurgeRequest): Promise<number> {
  if (request.ids !== undefined) return request.ids.length;
  if (request.state === "dead") return countDeadLetters(opened, table, request.group);
  if (request.processedBefore !== undefined) {
    const { state, group, processedBefore, now } = request;
    const rows = (await opened.db.executeQuery(operatorFor(opened.engine).countRows({ spec: table.spec }, { state, group, processedBefore, now }))).rows;
    return Number(rows[0]?.rows ?? 0);
  }
  const rows = (await opened.db.executeQuery(operatorFor(opened.engine).countByState({ spec: table.spec }, request.now))).rows;
  const { state } = request;
  // The statement counts the due rows and their heads; the waiting rows are the difference.
  return rows
    .filter((r) => request.group === undefined || groupKey(r.grp) === request.group)
    .reduce((sum, r) => sum + (state === "waiting" ? (waitingOf(table.spec, r) ?? 0) : Number(r[STATE_COLUMN[state]] ?? 0)), 0);
}

/** Deletes the rows in one transaction and returns how many went. */
export async function purgeRows(opened: OpenedDatabase, table: QueueTable, request: PurgeRequest): Promise<number> {
  const ops = operatorFor(opened.engine);
  return opened.db.transaction().execute(async (trx) => {
    if (request.state !== "dead") {
      const result = await trx.executeQuery(ops.purge({ spec: table.spec }, { ...request, state: request.state }));
      return Number(result.numAffectedRows ?? 0n);
    }
    let deleted = 0;
    for (const place of placesOf(table, request.group)) {
      deleted += Number((await trx.executeQuery(ops.purgeDeadLetters(table.spec, place, request.ids))).numAffectedRows ?? 0n);
    }
    return deleted;
  });
}
