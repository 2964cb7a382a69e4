import type { AnyInboxSpec, DataOf, HasRole, InboxDescription, RolesOf, SpecError } from "@sqlinbox/core/internal";
import { jobListRowsExist, type JobListRows, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import { noRoute } from "../errors.js";
import { badListCursor, badListLimit, badListQuery, deadLetterIdGenerated } from "../errors/job-errors.js";
import { heldOutsideRows, holdsInRow } from "../claim/held/job-hold.js";
import { decodePayloadNow } from "../declare/payload.js";
import type { PayloadOfSpec } from "../declare/queue.js";
import type { BrokerParts } from "./broker.js";
import { lockDatabaseOf } from "./job-handle.js";
import { columnsOf, numberOrNull, textOrNull, type DeadLetteredJobState, type DoneJobState, type LiveJobState } from "./job-state.js";

/** The states `list` pages through: every state of `JobStateName` but `gone`. */
export type JobListState = "scheduled" | "waiting" | "running" | "done" | "deadLettered";

/** The states a table described by `S` can list: `done` only where it has a processedAt column. */
export type JobListStateOf<S extends AnyInboxSpec> = HasRole<RolesOf<S>, "processedAt"> extends true ? JobListState : Exclude<JobListState, "done">;

type KeyFilter<S extends AnyInboxSpec> =
  HasRole<RolesOf<S>, "key"> extends true
    ? { readonly key?: string }
    : HasRole<RolesOf<S>, "orderKey"> extends true
      ? { readonly key?: string | number | bigint }
      : { readonly key?: SpecError<"list({ key }) needs a dedup key or an order key column: describe one with field.key() or field.orderKey()"> };
type ColumnsFilter<S extends AnyInboxSpec> = [keyof DataOf<S>] extends [never]
  ? { readonly columns?: SpecError<"list({ columns }) filters on data columns: this table describes none (field.data() or .data(column(…)))"> }
  : { readonly columns?: { readonly [K in keyof DataOf<S>]?: DataOf<S>[K] } };

/**
 * What `list` asks for, typed by the route's table: a `state`; rows whose `key` (the dedup key
 * column, else the order key column) and data `columns` equal the values given; at most `limit`
 * jobs (50 by default, at most 1000); after the cursor `after` (the `next` of the page before).
 */
export type JobListQuery<S extends AnyInboxSpec, St extends JobListState> = {
  readonly state: St;
  readonly limit?: number;
  readonly after?: string | null;
} & KeyFilter<S> &
  ColumnsFilter<S>;

/** One listed job: the state `state()` would read for it, and its payload (a row-mode table: its columns by key). */
export type ListedJob<S extends AnyInboxSpec, St extends JobListState = JobListState> = (St extends "deadLettered"
  ? DeadLetteredJobState
  : St extends "done"
    ? DoneJobState<RolesOf<S>>
    : LiveJobState<RolesOf<S>> & { readonly state: St }) & { readonly payload: PayloadOfSpec<S> };

/** A page of jobs in id order, and the cursor of the next page (`null`: this page is the last). */
export interface JobPage<S extends AnyInboxSpec, St extends JobListState = JobListState> {
  readonly jobs: ReadonlyArray<ListedJob<S, St>>;
  readonly next: string | null;
}

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 1000;
const STATES: readonly JobListState[] = ["scheduled", "waiting", "running", "done", "deadLettered"];

/** Where `list` looks for dead letters, as `broker.job(…, { deadLetter })` takes it. */
type DeadLetterPlace = { readonly table: InboxDescription } | { readonly group: string } | undefined;

/** The loose query the runtime reads. */
interface LooseQuery {
  readonly state: string;
  readonly limit?: number;
  readonly after?: string | null;
  readonly key?: unknown;
  readonly columns?: Readonly<Record<string, unknown>>;
}

/**
 * The jobs of one route, a page at a time (`broker.jobs(route).list(…)`), in id order, keyset paged.
 * Each state is SQL over the row's columns, read from the cursor in id order through an index (the
 * primary key's, or the route's group's or a key's when the list filters on one; never the whole table):
 * `scheduled` (its retryAfter ahead on the database's clock, not leased), `waiting` (due and not
 * in work), `running` (in work), `done` (processedAt set), `deadLettered` (in the dead-letter
 * table or group the list was given).
 *
 * A lease is in the row, so the lease form's `running` and `waiting` are read by SQL alone. A row
 * lock or an advisory key is not: on those forms `waiting` and `running` read a page of due rows,
 * then probe that page as `state()` does one row (one `FOR UPDATE SKIP LOCKED` probe of the page's
 * ids; one lookup of the page's keys, or the process's key registry on SQLite), and keep the rows
 * in the state asked for. A page there may hold fewer than `limit` jobs, or none, while `next` is
 * still set: page on until `next` is `null`.
 *
 * @example
 * let page = await broker.jobs("reports").list({ state: "waiting", limit: 100 })
 * while (page.next !== null) page = await broker.jobs("reports").list({ state: "waiting", limit: 100, after: page.next })
 */
export class JobList<S extends AnyInboxSpec = AnyInboxSpec> {
  readonly route: string;
  readonly #parts: BrokerParts;
  readonly #spec: InboxDescription;
  readonly #deadLetter: DeadLetterPlace;

  /** @internal `broker.jobs` builds lists. */
  constructor(parts: BrokerParts, route: string, deadLetter?: AnyInboxSpec | { readonly group: string }) {
    const spec = parts.routes.route(route);
    if (spec === undefined) throw noRoute(route, parts.routes.all);
    this.#parts = parts;
    this.route = route;
    this.#spec = spec.description;
    if (deadLetter !== undefined && "description" in deadLetter && deadLetter.description.id.generated)
      throw deadLetterIdGenerated(route, deadLetter.description.table, "broker.jobs");
    this.#deadLetter = deadLetter === undefined ? undefined : "description" in deadLetter ? { table: deadLetter.description } : { group: deadLetter.group };
  }

  /** A page of the route's jobs in `query.state`, in id order after `query.after`; see the class. */
  async list<St extends JobListStateOf<S>>(query: JobListQuery<S, St>): Promise<JobPage<S, St>> {
    const page = await this.#list(query as unknown as LooseQuery);
    return page as unknown as JobPage<S, St>;
  }

  async #list(query: LooseQuery): Promise<{ jobs: unknown[]; next: string | null }> {
    const spec = this.#spec;
    const state = query.state as JobListState;
    if (!STATES.includes(state)) throw badListQuery(`jobs(…).list({ state }) must be one of ${STATES.join(", ")}, got ${JSON.stringify(query.state)}`, this.route, spec.table);
    const limit = query.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw badListLimit(query.limit, MAX_LIMIT, this.route);
    const after = query.after === undefined || query.after === null ? undefined : this.#cursorId(query.after, state);
    const equals = this.#equals(query);
    const database = await this.#parts.database();
    const jobs = database.dialect.jobs;
    const dead = this.#deadLetter;
    if (state === "deadLettered" && dead !== undefined && "table" in dead) {
      const destination = dead.table;
      const missing = Object.keys(equals).find((name) => !destination.columns.some((c) => c.name === name));
      if (missing !== undefined) {
        throw badListQuery(
          `jobs(…).list({ state: "deadLettered" }) filters on "${missing}", which the dead-letter table "${destination.table}" has no column for`,
          this.route,
          spec.table,
          missing,
        );
      }
      const rows = (await database.execute("observe", jobs.listDeadLetters(destination, { after, limit, equals }))).rows;
      return this.#page(rows, destination, limit, state, (row) => deadLettered(destination, row, this.#payload(destination, row)));
    }
    if (state === "deadLettered" && dead === undefined) {
      throw badListQuery(
        'jobs(…).list({ state: "deadLettered" }) needs to know where the dead letters go: give broker.jobs(route, { deadLetter }) the table or { group } the subscription dead-letters into',
        this.route,
        spec.table,
      );
    }
    if (state === "done" && spec.processedAt === undefined) {
      throw badListQuery('jobs(…).list({ state: "done" }) needs a processedAt column: this table deletes handled rows, so none is done', this.route, spec.table);
    }
    const deadGroup = dead !== undefined && "group" in dead ? dead.group : undefined;
    if (state === "deadLettered" && spec.group === undefined) {
      throw badListQuery(`jobs(…).list({ state: "deadLettered" }) looks for dead letters in the group "${deadGroup}", but the table has no group column`, this.route, spec.table);
    }
    // A table shared by routes keeps each route's rows under its name in the group column (a prefix route's: every name it takes).
    if (spec.group !== undefined && state !== "deadLettered" && !this.route.endsWith("*")) equals[spec.group.name] = this.route;
    const rowsOf: Record<JobListState, JobListRows> = {
      scheduled: "scheduled",
      waiting: "due",
      running: holdsInRow(spec) ? "leased" : "due",
      done: "done",
      deadLettered: "deadGroup",
    };
    const now = (await this.#parts.clock()).now();
    const filter = { rows: rowsOf[state], now, after, limit, equals, ...(deadGroup !== undefined ? { deadGroup } : {}) };
    // A table without a retryAfter column schedules no row (a lease table keeps its run-at in the lease: running).
    if (!jobListRowsExist(spec, filter)) return { jobs: [], next: null };
    const rows = (await database.execute("observe", jobs.list(spec, filter))).rows;
    const decode = (raw: unknown) => database.dialect.time.decode(raw);
    if (state === "deadLettered") return this.#page(rows, spec, limit, state, (row) => deadLettered(spec, row, this.#payload(spec, row), columnsOf(spec, row, decode)["attempt"]));
    if (state === "done") {
      return this.#page(rows, spec, limit, state, (row) => ({
        state,
        id: String(row[spec.id.name]),
        processedAt: decode(row[spec.processedAt?.name ?? ""]),
        ...columnsOf(spec, row, decode),
        payload: this.#payload(spec, row),
      }));
    }
    const probed = (state === "waiting" || state === "running") && !holdsInRow(spec);
    const holds = probed ? await heldOutsideRows({ spec, database, keys: this.#parts.connection.keys, lockDatabase: () => lockDatabaseOf(this.#parts, this.#spec) }, rows) : [];
    return this.#page(rows, spec, limit, state, (row, i) => {
      const hold = holds[i];
      if (probed && (hold === "gone" || (hold === "free") !== (state === "waiting"))) return undefined;
      const columns = columnsOf(spec, row, decode);
      // The row-lock claim's count commits with its settlement: the attempt in work is one past the row's.
      if (hold === "held, count uncommitted" && typeof columns["attempt"] === "number") columns["attempt"] += 1;
      return { state, id: String(row[spec.id.name]), ...columns, payload: this.#payload(spec, row) };
    });
  }

  /** The page's jobs (rows `item` keeps), and the next cursor when the page read `limit` rows. */
  #page(
    rows: readonly RawRow[],
    spec: InboxDescription,
    limit: number,
    state: JobListState,
    item: (row: RawRow, index: number) => unknown,
  ): { jobs: unknown[]; next: string | null } {
    const jobs = rows.flatMap((row, i) => {
      const listed = item(row, i);
      return listed === undefined ? [] : [listed];
    });
    const last = rows.at(-1);
    return { jobs, next: rows.length === limit && last !== undefined ? cursorOf(state, last[spec.id.name]) : null };
  }

  #payload(spec: InboxDescription, row: RawRow): unknown {
    return decodePayloadNow(spec, row, (id) => ({ route: this.route, table: spec.table, id: String(id) }), row[spec.id.name]);
  }

  /** The equalities by column name: `key` on the dedup key column (else the order key), `columns` on data columns by key or name. */
  #equals(query: LooseQuery): Record<string, unknown> {
    const spec = this.#spec;
    const out: Record<string, unknown> = {};
    if (query.key !== undefined) {
      const column = spec.key ?? spec.orderKey;
      if (column === undefined) throw badListQuery("jobs(…).list({ key }) needs a dedup key or an order key column: this table has neither", this.route, spec.table);
      out[column.name] = query.key;
    }
    for (const [key, value] of Object.entries(query.columns ?? {})) {
      const column = spec.columns.find((c) => (c.role === "data" || c.role === "orderKey") && (c.key === key || c.name === key));
      if (column === undefined)
        throw badListQuery(`jobs(…).list({ columns }) names "${key}", which is not a data column or the order key of the table`, this.route, spec.table, key);
      if (value !== undefined) out[column.name] = value;
    }
    return out;
  }

  /** The id a cursor holds, checked to be one of a page of `state`. */
  #cursorId(after: string, state: JobListState): unknown {
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(after, "base64url").toString("utf8"));
    } catch {
      throw badListCursor(after, state, this.route);
    }
    if (!Array.isArray(parsed) || parsed.length !== 2 || parsed[0] !== state || (typeof parsed[1] !== "string" && typeof parsed[1] !== "number"))
      throw badListCursor(after, state, this.route);
    return parsed[1];
  }
}

/** The cursor after row id `id` of a `state` page: opaque text (base64url of the state and the id). */
function cursorOf(state: JobListState, id: unknown): string {
  const value = typeof id === "number" ? id : String(id);
  return Buffer.from(JSON.stringify([state, value]), "utf8").toString("base64url");
}

/** A dead letter as `state()` reads one: in a destination table (its own columns) or a group of the source (`attempt` the row's). */
function deadLettered(table: InboxDescription, row: RawRow, payload: unknown, attempt?: unknown): DeadLetteredJobState & { payload: unknown } {
  const attempts = table.failedAttempts !== undefined ? numberOrNull(row[table.failedAttempts.name]) : typeof attempt === "number" ? attempt : null;
  return {
    state: "deadLettered",
    id: String(row[table.id.name]),
    lastError: textOrNull(table.lastError === undefined ? null : row[table.lastError.name]),
    attempts,
    payload,
  };
}
