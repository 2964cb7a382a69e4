import type { InboxDescription } from "@sqlinbox/core/internal";
import { advisoryKeyOf, dialectFor, jobListRowsExist, type PayloadSearch, payloadSearch, SEARCH_WINDOW, type JobListRows, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { DeadLetterPlace } from "@sqlinbox/kysely-dialects/operator";
import type { OpenedDatabase } from "../connect.js";
import { CliError, ExitCode } from "../exit-codes.js";
import type { QueueTable } from "../queue-tables.js";
import { decodePayload, plain } from "./rows.js";

/** The states `sqlinbox jobs` lists, as the runtime's `jobs(route).list` names them, and `all`. */
export const JOB_STATES = ["scheduled", "waiting", "running", "done", "deadLettered", "all"] as const;
export type JobState = (typeof JOB_STATES)[number];

/** One listed job: its id, state, described columns (times as ISO-8601) and decoded payload; a dead letter names the table it is in. */
export interface ListedJob {
  readonly id: string;
  readonly state: Exclude<JobState, "all">;
  readonly columns: Record<string, unknown>;
  readonly payload?: unknown;
  readonly deadLetterTable?: string;
}

/** What a page selects: a state, equalities by column name, the cursor (the last id of the page before), the size. */
export interface JobListRequest {
  readonly state: JobState;
  readonly equals: Readonly<Record<string, unknown>>;
  readonly after?: string | undefined;
  readonly limit: number;
  /** Text the payload holds (case-insensitive): each row set reads at most `SEARCH_WINDOW` rows from the cursor. */
  readonly search?: string | undefined;
}

/** A page in id order, and the cursor of the next (`null`: this page is the last). */
export interface JobPage {
  readonly rows: ListedJob[];
  readonly next: string | null;
}

const usage = (message: string): never => {
  throw new CliError(ExitCode.usage, message);
};

/** The one dead-letter place of the table, or a usage error naming what is missing or ambiguous. */
export function deadLetterPlace(table: QueueTable): DeadLetterPlace {
  const places = table.deadLetters;
  if (places.length === 1) return places[0]!;
  if (places.length === 0) {
    return usage(
      `table "${table.spec.table}" has no dead-letter place for state deadLettered: export deadLetters from the module, or give --dead-letter-table / --dead-letter-group`,
    );
  }
  return usage(`table "${table.spec.table}" has ${places.length} dead-letter places: name one with --dead-letter-table or --dead-letter-group`);
}

/** Why the table cannot hold rows of `state` (`done` without processedAt, …), or undefined when it can. */
function stateMissing(spec: InboxDescription, state: JobState): string | undefined {
  if (state === "done" && spec.processedAt === undefined) return `table "${spec.table}" has no processedAt column, so no row is ever in state done (handled rows are deleted)`;
  if (state === "scheduled" && spec.retryAfter === undefined) return `table "${spec.table}" has no retryAfter column, so no row is ever in state scheduled`;
  return undefined;
}

/** A row as a listed job: the payload decoded, every other column plain, the role times as ISO-8601. */
function listed(opened: OpenedDatabase, spec: InboxDescription, row: RawRow, state: ListedJob["state"], deadLetterTable?: string): ListedJob {
  const { time } = dialectFor(opened.engine);
  const times = new Set([spec.lease?.name, spec.retryAfter?.name, spec.processedAt?.name]);
  const columns: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    if (name === spec.payload?.name) continue;
    columns[name] = times.has(name) && value !== null ? (time.decode(value)?.toISOString() ?? plain(value)) : plain(value);
  }
  return {
    id: String(row[spec.id.name]),
    state,
    columns,
    ...(spec.payload === undefined ? {} : { payload: decodePayload(row[spec.payload.name]) }),
    ...(deadLetterTable === undefined ? {} : { deadLetterTable }),
  };
}

/**
 * Of due rows, which a claim holds now: a row lock (one `FOR UPDATE SKIP LOCKED` probe of their
 * ids, and a second of those it passed over, as the runtime's list does), an advisory key (one
 * lookup of their keys in the server's lock table). A lease is in the row; SQLite has no row locks
 * and keeps its keys in the application's process: there no due row reads as held.
 */
export async function heldIds(opened: OpenedDatabase, spec: InboxDescription, rows: readonly RawRow[]): Promise<Set<string>> {
  const dialect = dialectFor(opened.engine);
  const ids = rows.map((row) => row[spec.id.name]);
  if (rows.length === 0 || spec.form === "lease") return new Set();
  if (spec.form === "rowLock") {
    if (!dialect.capabilities.rowLock) return new Set();
    const probe = async (of: readonly unknown[]) => (await opened.db.executeQuery(dialect.jobs.lockProbeMany(spec, of))).rows.map((r) => String(r.id));
    const free = new Set(await probe(ids));
    const passed = ids.filter((id) => !free.has(String(id)));
    if (passed.length > 0) for (const id of await probe(passed)) free.add(id);
    return new Set(ids.map(String).filter((id) => !free.has(id)));
  }
  if (dialect.capabilities.advisoryLocks !== "session") return new Set();
  const keys = rows.map((row) => advisoryKeyOf(spec, row));
  const held = new Set((await opened.db.executeQuery(dialect.jobs.keysHeld([...new Set(keys)], spec.schema ?? opened.database))).rows.map((r) => r.key));
  return new Set(rows.flatMap((row, i) => (held.has(keys[i]!) ? [String(row[spec.id.name])] : [])));
}

/** The dead group of the table's place, when its dead letters stay in the table under a group. */
const deadGroupOf = (table: QueueTable): string | undefined => {
  const places = table.deadLetters.filter((p) => p.kind === "group");
  return places.length === 1 && places[0]!.kind === "group" ? places[0]!.deadGroup : undefined;
};

/**
 * A page of the table's jobs in one state, in id order after the cursor, through the runtime's
 * job-list statements (keyset paged on the id, never `OFFSET`). `waiting` and `running` on the
 * row-lock and advisory forms read a page of due rows and probe it (`heldIds`), so such a page may
 * hold fewer rows than the limit while `next` is set. `all` merges the pages of every row set.
 * `deadLettered` reads the table's one dead-letter place: a dead-letter table, or a dead group.
 */
export async function listJobs(opened: OpenedDatabase, table: QueueTable, request: JobListRequest): Promise<JobPage> {
  const { spec } = table;
  const dialect = dialectFor(opened.engine);
  const missing = stateMissing(spec, request.state);
  if (missing !== undefined) usage(missing);
  const now = opened.now();
  const limit = request.limit;
  if (request.state === "deadLettered") {
    const place = deadLetterPlace(table);
    if (place.kind === "table") {
      const destination = place.destination;
      const unknown = Object.keys(request.equals).find((name) => !destination.columns.some((c) => c.name === name));
      if (unknown !== undefined) usage(`the dead-letter table "${destination.table}" has no column "${unknown}" to filter on`);
      const base = { after: request.after, limit, equals: request.equals };
      const search = await searchOf(opened, destination, request);
      const through = search === undefined ? undefined : await windowEnd(opened, dialect.jobs.deadLettersWindowEnd(destination, { ...base, search }, SEARCH_WINDOW));
      const rows = (await opened.db.executeQuery(dialect.jobs.listDeadLetters(destination, search === undefined ? base : { ...base, search: { ...search, through } }))).rows;
      return page(
        rows.map((row) => listed(opened, destination, row, "deadLettered", destination.table)),
        rows,
        destination,
        limit,
        through,
      );
    }
    const { rows, through } = await read("deadGroup", place.deadGroup);
    return page(
      rows.map((row) => listed(opened, spec, row, "deadLettered")),
      rows,
      spec,
      limit,
      through,
    );
  }
  const search = await searchOf(opened, spec, request);
  // Reads a row set's page; with a search, only up to its window's end (`through`, unset when the window reached the set's end).
  async function read(rows: JobListRows, deadGroup = deadGroupOf(table)): Promise<{ rows: RawRow[]; through?: unknown }> {
    const filter = { rows, now, after: request.after, limit, equals: request.equals, ...(deadGroup === undefined ? {} : { deadGroup }) };
    if (!jobListRowsExist(spec, filter)) return { rows: [] };
    if (search === undefined) return { rows: (await opened.db.executeQuery(dialect.jobs.list(spec, filter))).rows };
    const through = await windowEnd(opened, dialect.jobs.listWindowEnd(spec, filter, SEARCH_WINDOW));
    return { rows: (await opened.db.executeQuery(dialect.jobs.list(spec, { ...filter, search: { ...search, through } }))).rows, through };
  }
  const due = async (): Promise<{ rows: RawRow[]; through?: unknown; held: Set<string> }> => {
    const read_ = await read("due");
    return { ...read_, held: await heldIds(opened, spec, read_.rows) };
  };
  switch (request.state) {
    case "scheduled":
    case "done": {
      const { rows, through } = await read(request.state);
      return page(
        rows.map((row) => listed(opened, spec, row, request.state as ListedJob["state"])),
        rows,
        spec,
        limit,
        through,
      );
    }
    case "waiting":
    case "running": {
      if (request.state === "running" && spec.form === "lease") {
        const { rows, through } = await read("leased");
        return page(
          rows.map((row) => listed(opened, spec, row, "running")),
          rows,
          spec,
          limit,
          through,
        );
      }
      const { rows, held, through } = await due();
      const keep = rows.filter((row) => held.has(String(row[spec.id.name])) === (request.state === "running"));
      return page(
        keep.map((row) => listed(opened, spec, row, request.state as ListedJob["state"])),
        rows,
        spec,
        limit,
        through,
      );
    }
    case "all": {
      const deadGroup = deadGroupOf(table);
      const { held, ...dueRead } = await due();
      const sets: Array<[{ rows: RawRow[]; through?: unknown }, (row: RawRow) => ListedJob["state"]]> = [
        [dueRead, (row) => (held.has(String(row[spec.id.name])) ? "running" : "waiting")],
        [await read("scheduled"), () => "scheduled"],
        [await read("leased"), () => "running"],
        [await read("done"), () => "done"],
        [deadGroup === undefined ? { rows: [] } : await read("deadGroup"), () => "deadLettered"],
      ];
      // Where each set goes on from: past its last row when its read was full, past its window's end
      // when a search stopped there; a set with neither is read to its end. Rows past the nearest of
      // these wait for the next page, so no set's rows are skipped.
      const goesOn = sets.flatMap(([read]) => {
        const last = read.rows.at(-1);
        return read.rows.length === limit && last !== undefined ? [last[spec.id.name]] : read.through !== undefined ? [read.through] : [];
      });
      const bound = goesOn.sort(compareIds)[0];
      const merged = sets
        .flatMap(([read, stateOf]) => read.rows.map((row) => ({ row, state: stateOf(row) })))
        .filter(({ row }) => bound === undefined || compareIds(row[spec.id.name], bound) <= 0);
      merged.sort((a, b) => compareIds(a.row[spec.id.name], b.row[spec.id.name]));
      const taken = merged.slice(0, limit);
      const last = taken.at(-1);
      const next = taken.length === limit && last !== undefined ? String(last.row[spec.id.name]) : bound === undefined ? null : String(bound);
      return { rows: taken.map(({ row, state }) => listed(opened, spec, row, state)), next };
    }
  }
}

/** The search of a request, on a table with a payload column (else a usage error). */
async function searchOf(opened: OpenedDatabase, spec: InboxDescription, request: JobListRequest): Promise<PayloadSearch | undefined> {
  if (request.search === undefined || request.search === "") return undefined;
  if (spec.payload === undefined) usage(`--search looks in the payload, and table "${spec.table}" has no payload column`);
  return payloadSearch(opened.db, opened.engine, spec, request.search);
}

/** A searched window's end: the id of its last row, or `undefined` when the window reaches the row set's end. */
async function windowEnd(opened: OpenedDatabase, query: Parameters<OpenedDatabase["db"]["executeQuery"]>[0]): Promise<unknown> {
  const row = (await opened.db.executeQuery(query)).rows[0] as { id: unknown } | undefined;
  return row?.id;
}

/** Ids in the order the database sorts them: numbers (and numeric text) by value, other text as text. */
function compareIds(a: unknown, b: unknown): number {
  const [x, y] = [String(a), String(b)];
  if (/^-?\d+$/.test(x) && /^-?\d+$/.test(y)) {
    const d = BigInt(x) - BigInt(y);
    return d === 0n ? 0 : d < 0n ? -1 : 1;
  }
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The page's jobs, and the cursor past the last row read when the read was full, else past a searched window's end. */
function page(jobs: ListedJob[], read: readonly RawRow[], spec: InboxDescription, limit: number, through?: unknown): JobPage {
  const last = read.at(-1);
  return { rows: jobs, next: read.length === limit && last !== undefined ? String(last[spec.id.name]) : through === undefined ? null : String(through) };
}
