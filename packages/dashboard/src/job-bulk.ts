import { equalities } from "./job-list.js";
import { BadRequest, type JobTables, tableOf } from "./job-tables.js";
import type { BulkJobAction, BulkJobRequest } from "./source.js";

const ACTIONS: readonly BulkJobAction[] = ["cancel", "delete", "retry", "reschedule"];
const STATES = ["scheduled", "waiting", "running", "deadLettered"] as const;
/** At most this many named ids in one request: a larger selection is a filter. */
const MOST_IDS = 5000;

/**
 * What `POST /api/jobs/bulk` is sent, as JSON: the table, the action, the state the list shows, and
 * either the rows picked (`ids`) or the list's filter (`route`, `key`, `where`, as `GET /api/jobs`
 * takes them); `runAt` (ISO-8601) for reschedule; `dryRun` to count first.
 */
export interface BulkJobBody {
  readonly table?: unknown;
  readonly action?: unknown;
  readonly state?: unknown;
  readonly ids?: unknown;
  readonly route?: unknown;
  readonly key?: unknown;
  readonly where?: unknown;
  /** Refused: a payload search is paged a window at a time, so its matches are sent as `ids`. */
  readonly search?: unknown;
  readonly runAt?: unknown;
  readonly dryRun?: unknown;
}

const text = (value: unknown, name: string): string | undefined => {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new BadRequest(`${name} must be text, got ${JSON.stringify(value)}`);
  return value;
};

/**
 * The bulk request a body asks for, checked against the table's description before anything runs:
 * done jobs take no action; dead letters are moved back (retry) or deleted; retry and reschedule of
 * the table's own rows write its retryAfter column, so the table needs one.
 */
export function bulkRequestOf(source: JobTables, body: BulkJobBody): BulkJobRequest {
  const table = tableOf(source, text(body.table, "table"));
  const { spec } = table;
  const action = body.action as BulkJobAction;
  if (!ACTIONS.includes(action)) throw new BadRequest(`action must be one of ${ACTIONS.join(", ")}, got ${JSON.stringify(body.action ?? "")}`);
  const state = body.state as (typeof STATES)[number];
  if (!STATES.includes(state)) {
    throw new BadRequest(`state must be one of ${STATES.join(", ")} (done jobs take no bulk action), got ${JSON.stringify(body.state ?? "")}`);
  }
  const dead = state === "deadLettered";
  if (dead && action !== "retry" && action !== "delete") throw new BadRequest(`dead letters are moved back (retry) or deleted (delete); ${action} does not take them`);
  if (dead && table.deadLetters.length !== 1) {
    throw new BadRequest(
      `${spec.table} has ${table.deadLetters.length === 0 ? "no dead-letter place" : "more than one dead-letter place"}: the page cannot tell which dead letters to act on`,
    );
  }
  if (!dead && (action === "retry" || action === "reschedule") && spec.retryAfter === undefined) {
    throw new BadRequest(`${action} sets a job's run-at, and ${spec.table} has no retryAfter column`);
  }
  const runAtText = text(body.runAt, "runAt");
  if (action !== "reschedule" && runAtText !== undefined) throw new BadRequest(`runAt is for reschedule, not ${action}`);
  const runAt = runAtText === undefined ? undefined : new Date(runAtText);
  if (action === "reschedule" && (runAt === undefined || Number.isNaN(runAt.getTime()))) {
    throw new BadRequest(`reschedule needs runAt, an ISO-8601 time such as 2030-01-01T09:00:00Z; got ${JSON.stringify(body.runAt ?? "")}`);
  }
  if (body.dryRun !== undefined && typeof body.dryRun !== "boolean") throw new BadRequest(`dryRun must be true or false, got ${JSON.stringify(body.dryRun)}`);
  const dryRun = body.dryRun === true;
  if (body.search !== undefined && body.search !== "") {
    throw new BadRequest("a bulk action does not take a payload search as its filter (a search reads a window of rows a page): pick the jobs it listed and send their ids");
  }
  const common = { table: spec.table, action, dryRun, ...(runAt === undefined ? {} : { runAt }) };
  if (body.ids !== undefined) {
    const ids = body.ids;
    if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => (typeof id === "string" && id.length > 0) || typeof id === "number")) {
      throw new BadRequest('ids must be a list of the jobs\' ids, such as ["1", "2"]');
    }
    if (ids.length > MOST_IDS) throw new BadRequest(`at most ${MOST_IDS} ids at once, got ${ids.length}: act on the filter instead`);
    if (body.route !== undefined || body.key !== undefined || body.where !== undefined) throw new BadRequest("send ids, or a filter (route, key, where), not both");
    return { ...common, ids: ids.map(String), equals: {}, ...(dead ? { state } : {}) };
  }
  const equals = equalities(spec, { key: text(body.key, "key"), where: text(body.where, "where") });
  const route = text(body.route, "route");
  if (route !== undefined && spec.group !== undefined && !dead) equals[spec.group.name] = route;
  return { ...common, state, equals };
}
