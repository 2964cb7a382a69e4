import type { InboxDescription } from "@sqlinbox/core/internal";
import { dialectFor, jobListRowsExist, payloadSearch, SEARCH_WINDOW, type JobListFilter, type JobListRows, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import { BadRequest, heldOf, holdsInRow, type JobTables, plain, tableOf } from "./job-tables.js";

/** The states the job browser pages through. */
export type JobBrowseState = "scheduled" | "waiting" | "running" | "done" | "deadLettered";
const STATES: readonly JobBrowseState[] = ["scheduled", "waiting", "running", "done", "deadLettered"];

/** What `GET /api/jobs` asks: its query parameters, as text. */
export interface JobListRequest {
  readonly table?: string;
  /** A route of a table with a group column: only its rows. */
  readonly route?: string;
  readonly state?: string;
  /** The dedup key (else the order key) equals this. */
  readonly key?: string;
  /** `column:value`: a data column equals the value. */
  readonly where?: string;
  /** Text the payload holds (case-insensitive): a page reads at most `SEARCH_WINDOW` rows from its cursor. */
  readonly search?: string;
  /** `id` (default) or `runAt` (scheduled rows, by their retryAfter). */
  readonly sort?: string;
  /** The `next` of the page before. */
  readonly after?: string;
  readonly limit?: string;
}

/** One job as a row of the list. */
export interface ListedJob {
  readonly id: string;
  readonly state: JobBrowseState;
  readonly attempt: number | null;
  /** The retryAfter time (ISO-8601), or `null`. */
  readonly runAt: string | null;
  /** The lease deadline (ISO-8601), or `null`. */
  readonly leaseUntil: string | null;
  readonly key: string | null;
  readonly lastError: string | null;
  /** The payload's first 200 characters, as text. */
  readonly preview: string | null;
  /** A dead letter in a table of its own: that table (open the job there). */
  readonly deadLetterTable?: string;
}

/** A page of jobs and the cursor of the next one (`null`: the last page). */
export interface JobListPage {
  readonly table: string;
  readonly state: JobBrowseState;
  readonly sort: "id" | "runAt";
  readonly jobs: readonly ListedJob[];
  readonly next: string | null;
  /** Why a page may be short or empty, in words. */
  readonly notes: readonly string[];
}

const PREVIEW = 200;

/**
 * A page of a table's jobs in one state, keyset paged (the cursor holds the last row's id, or its
 * run-at and id), through the dialect's `jobs.list` statements: the primary key's walk from the
 * cursor, or the index of the equality filtered on. Row-lock and advisory pages read the due rows
 * then probe which of them a worker holds, so such a page may show fewer jobs than the limit while
 * `next` is still set.
 */
export async function listJobs(source: JobTables, request: JobListRequest): Promise<JobListPage> {
  const table = tableOf(source, request.table);
  const { spec } = table;
  const state = request.state as JobBrowseState;
  if (!STATES.includes(state)) throw new BadRequest(`state must be one of ${STATES.join(", ")}, got "${request.state ?? ""}"`);
  const limit = request.limit === undefined ? 50 : Number(request.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new BadRequest(`limit must be a whole number from 1 to 500, got "${request.limit}"`);
  const sort = request.sort === undefined || request.sort === "" || request.sort === "id" ? "id" : request.sort === "runAt" ? "runAt" : null;
  if (sort === null) throw new BadRequest(`sort must be "id" or "runAt", got "${request.sort}"`);
  if (sort === "runAt" && (state !== "scheduled" || spec.retryAfter === undefined)) {
    throw new BadRequest(
      `sort by run-at lists scheduled jobs of a table with a retryAfter column; "${spec.table}" ${spec.retryAfter === undefined ? "has none" : `lists ${state} jobs by id`}`,
    );
  }
  const search = request.search === undefined || request.search === "" ? undefined : request.search;
  if (search !== undefined && sort === "runAt") throw new BadRequest("a search lists jobs by id: drop sort=runAt, or the search");
  if (search !== undefined && search.length > 200) throw new BadRequest(`search takes at most 200 characters, got ${search.length}`);
  const cursor = request.after === undefined || request.after === "" ? undefined : readCursor(request.after, state, sort);
  const equals = equalities(spec, request);
  const { engine } = source.opened;
  const jobs = dialectFor(engine).jobs;
  const notes: string[] = [];
  const place = table.deadLetters[0];
  // A searched page ends at its window's end when it found fewer jobs than its size.
  let through: unknown;
  const page = (rows: readonly RawRow[], of: InboxDescription, listed: ListedJob[]): JobListPage => {
    const last = rows.at(-1);
    const next =
      rows.length === limit && last !== undefined
        ? writeCursor(state, sort, of, last, engine)
        : through !== undefined
          ? writeCursor(state, sort, of, { [of.id.name]: through }, engine)
          : null;
    return { table: spec.table, state, sort, jobs: listed, next, notes };
  };
  const searched = async (of: InboxDescription) => {
    if (search === undefined) return {};
    if (of.payload === undefined) throw new BadRequest(`${of.table} has no payload column to search`);
    notes.push(
      `a search reads the payload's text of each row (no index serves it): a page reads at most ${SEARCH_WINDOW.toLocaleString("en-US")} rows from its cursor, so it may list fewer jobs than its size while more pages follow`,
    );
    return { search: await payloadSearch(source.opened.db, engine, of, search) };
  };
  const windowEnd = async (query: Parameters<typeof source.opened.db.executeQuery>[0]): Promise<unknown> => {
    const end = (await source.opened.db.executeQuery(query)).rows[0] as { id: unknown } | undefined;
    return end?.id;
  };
  const after = cursor?.id;

  if (state === "deadLettered" && place?.kind === "table") {
    const destination = place.destination;
    const missing = Object.keys(equals).find((name) => !destination.columns.some((c) => c.name === name));
    if (missing !== undefined) throw new BadRequest(`the dead-letter table "${destination.table}" has no column "${missing}" to filter on`);
    const base = { after, limit, equals, ...(await searched(destination)) };
    if (base.search !== undefined) through = await windowEnd(jobs.deadLettersWindowEnd(destination, base, SEARCH_WINDOW));
    const rows = (await source.opened.db.executeQuery(jobs.listDeadLetters(destination, base.search === undefined ? base : { ...base, search: { ...base.search, through } }))).rows;
    return page(
      rows,
      destination,
      rows.map((r) => listed(source, destination, r, state, destination.table)),
    );
  }
  if (state === "deadLettered" && place === undefined) {
    notes.push(`no dead-letter place is declared for ${spec.table}: start the dashboard with --dead-letter-table or --dead-letter-group (or a --module that declares it)`);
    return { table: spec.table, state, sort, jobs: [], next: null, notes };
  }
  const deadGroup = place?.kind === "group" ? place.deadGroup : undefined;
  if (request.route !== undefined && request.route !== "" && spec.group !== undefined && state !== "deadLettered") equals[spec.group.name] = request.route;
  const rowsOf: Record<JobBrowseState, JobListRows> = {
    scheduled: "scheduled",
    waiting: "due",
    running: holdsInRow(spec) ? "leased" : "due",
    done: "done",
    deadLettered: "deadGroup",
  };
  const filter: JobListFilter = {
    rows: rowsOf[state],
    now: source.opened.now(),
    limit,
    equals,
    ...(after !== undefined && sort === "id" ? { after } : {}),
    ...(sort === "runAt" ? { byRunAt: cursor === undefined ? {} : { after: { at: new Date(cursor.at ?? ""), id: cursor.id } } } : {}),
    ...(deadGroup !== undefined ? { deadGroup } : {}),
  };
  if (!jobListRowsExist(spec, filter)) {
    const missing = {
      scheduled: "a retryAfter column",
      running: "a lease column",
      done: "a processedAt column (it deletes handled rows)",
      waiting: "",
      deadLettered: "a group column",
    };
    notes.push(`${spec.table} holds no ${state} jobs: it has no ${missing[state]}`);
    return { table: spec.table, state, sort, jobs: [], next: null, notes };
  }
  const looked = await searched(spec);
  if (looked.search !== undefined) through = await windowEnd(jobs.listWindowEnd(spec, filter, SEARCH_WINDOW));
  const rows = (await source.opened.db.executeQuery(jobs.list(spec, looked.search === undefined ? filter : { ...filter, search: { ...looked.search, through } }))).rows;
  const probed = (state === "waiting" || state === "running") && !holdsInRow(spec);
  const held = probed ? await heldOf(source, spec, rows) : [];
  if (held === "unknown") {
    notes.push("which due jobs are in work cannot be seen from outside here (advisory keys live in the app's process on SQLite): waiting and running both list every due job");
    return page(
      rows,
      spec,
      rows.map((r) => listed(source, spec, r, state)),
    );
  }
  if (probed) notes.push("row locks and advisory keys are probed a page at a time: a page may list fewer jobs than its size while more pages follow");
  const kept = rows.flatMap((r, i) => (!probed || (held[i] === "free") === (state === "waiting") ? [listed(source, spec, r, state)] : []));
  return page(rows, spec, kept);
}

/** The equalities by column: the key filter on the dedup key (else the order key), `where` on a data column. */
export function equalities(spec: InboxDescription, request: JobListRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (request.key !== undefined && request.key !== "") {
    const column = spec.key ?? spec.orderKey;
    if (column === undefined) throw new BadRequest(`${spec.table} has no dedup key or order key column to filter on`);
    out[column.name] = request.key;
  }
  if (request.where !== undefined && request.where !== "") {
    const at = request.where.indexOf(":");
    if (at <= 0) throw new BadRequest(`where takes column:value, got "${request.where}"`);
    const name = request.where.slice(0, at);
    const column = spec.columns.find((c) => (c.role === "data" || c.role === "orderKey" || c.role === "key") && (c.name === name || c.key === name));
    const data = spec.columns.filter((c) => c.role === "data").map((c) => c.name);
    if (column === undefined) throw new BadRequest(`where names "${name}", which is not a data column of ${spec.table} (its data columns: ${data.join(", ") || "none"})`);
    out[column.name] = request.where.slice(at + 1);
  }
  return out;
}

function listed(source: JobTables, spec: InboxDescription, row: RawRow, state: JobBrowseState, deadLetterTable?: string): ListedJob {
  const { engine } = source.opened;
  const value = (c: { name: string } | undefined) => (c === undefined ? null : plain(engine, spec, c.name, row[c.name]));
  const attempt = value(spec.attempt ?? spec.failedAttempts);
  const key = value(spec.key ?? spec.orderKey);
  const error = value(spec.lastError);
  const payload = spec.payload === undefined ? null : row[spec.payload.name];
  const text =
    payload === null || payload === undefined
      ? null
      : payload instanceof Uint8Array
        ? Buffer.from(payload).toString("utf8")
        : typeof payload === "string"
          ? payload
          : JSON.stringify(payload);
  return {
    id: String(row[spec.id.name]),
    state,
    attempt: typeof attempt === "number" ? attempt : attempt === null ? null : Number(attempt),
    runAt: value(spec.retryAfter) as string | null,
    leaseUntil: value(spec.lease) as string | null,
    key: key === null ? null : String(key),
    lastError: error === null ? null : String(error),
    preview: text === null ? null : text.length > PREVIEW ? `${text.slice(0, PREVIEW)}…` : text,
    ...(deadLetterTable !== undefined ? { deadLetterTable } : {}),
  };
}

interface Cursor {
  readonly id: string | number;
  readonly at?: string;
}

/** The cursor after a row: base64url of `[state, sort, id, runAt?]`, opaque to the page. */
function writeCursor(state: JobBrowseState, sort: "id" | "runAt", spec: InboxDescription, row: RawRow, engine: Parameters<typeof plain>[0]): string {
  const raw = row[spec.id.name];
  const id = typeof raw === "number" ? raw : String(raw);
  const at = sort === "runAt" && spec.retryAfter !== undefined ? plain(engine, spec, spec.retryAfter.name, row[spec.retryAfter.name]) : undefined;
  return Buffer.from(JSON.stringify(at === undefined ? [state, sort, id] : [state, sort, id, at]), "utf8").toString("base64url");
}

function readCursor(text: string, state: JobBrowseState, sort: "id" | "runAt"): Cursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    parsed = null;
  }
  const ok =
    Array.isArray(parsed) &&
    parsed[0] === state &&
    parsed[1] === sort &&
    (typeof parsed[2] === "string" || typeof parsed[2] === "number") &&
    (sort === "id" ? parsed.length === 3 : typeof parsed[3] === "string" && !Number.isNaN(Date.parse(parsed[3])));
  if (!ok) throw new BadRequest(`the cursor "${text}" is not one of a ${state} page sorted by ${sort}: start again without after`);
  const [, , id, at] = parsed as [string, string, string | number, string?];
  return at === undefined ? { id } : { id, at };
}
