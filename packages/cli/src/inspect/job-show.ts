import type { InboxDescription } from "@sqlinbox/core/internal";
import { type JobWorkflow, policiesOf, type RoutePolicy, workflowOfJob } from "@sqlinbox/dashboard";
import { advisoryKeyOf, dialectFor, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import { operatorFor } from "@sqlinbox/kysely-dialects/operator";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";
import { heldIds, type ListedJob } from "./job-list.js";
import { decodePayload, plain } from "./rows.js";

/** The payload shown at most, as pretty JSON text. */
const PAYLOAD_SHOWN_BYTES = 64 * 1024;

/** One job in full: its state, the columns that matter named by role, the other columns, and its payload (cut at 64 KiB). */
export interface ShownJob {
  readonly id: string;
  readonly table: string;
  readonly state: ListedJob["state"];
  readonly attempt?: unknown;
  readonly runAt?: string | null;
  readonly leaseUntil?: string | null;
  readonly processedAt?: string | null;
  /**
   * Who holds the job in work, in words, where the form tells: the lease (its deadline is the
   * worker's token) and when it runs out; a session's row lock or advisory key. `null` when nothing
   * holds it; absent where it cannot be seen from outside (advisory keys on SQLite).
   */
  readonly holder?: string | null;
  readonly lastError?: unknown;
  readonly headers?: unknown;
  readonly result?: unknown;
  readonly progress?: unknown;
  readonly columns: Record<string, unknown>;
  /** The payload as pretty JSON text. */
  readonly payload?: string;
  /** Set when the payload was cut: its full size in bytes. */
  readonly payloadBytes?: number;
  /** The policy of the route(s) that run the job, as `--module` declares them; empty without one. */
  readonly policies: readonly RoutePolicy[];
  /** The workflow run the job is a step of, with every step of the run; `null` when it is none's. */
  readonly workflow: JobWorkflow | null;
  /** A dead letter in a table of its own: that table. */
  readonly deadLetterTable?: string;
}

const encoder = new TextEncoder();

/** Pretty JSON, cut at `PAYLOAD_SHOWN_BYTES` bytes (on a character boundary); the full size when cut. */
function capped(value: unknown): { text: string; bytes?: number } {
  const text = typeof value === "string" ? value : (JSON.stringify(value, null, 2) ?? String(value));
  const bytes = encoder.encode(text).byteLength;
  if (bytes <= PAYLOAD_SHOWN_BYTES) return { text };
  let cut = text.slice(0, PAYLOAD_SHOWN_BYTES);
  while (encoder.encode(cut).byteLength > PAYLOAD_SHOWN_BYTES) cut = cut.slice(0, -1);
  return { text: cut, bytes };
}

const parsedJson = (value: unknown): unknown => {
  if (typeof value !== "string") return plain(value);
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
};

/** The job built from its row: the role columns named, the other columns plain, the times as ISO-8601. */
function shown(opened: OpenedDatabase, spec: InboxDescription, row: RawRow, state: ListedJob["state"], holder?: string | null): Omit<ShownJob, "policies" | "workflow"> {
  const { time } = dialectFor(opened.engine);
  const at = (name: string | undefined) => (name === undefined ? undefined : row[name] === null ? null : (time.decode(row[name])?.toISOString() ?? String(row[name])));
  // The role columns are named below: `columns` holds the others.
  const named = new Set([spec.payload, spec.attempt, spec.retryAfter, spec.lease, spec.processedAt, spec.lastError, spec.headers, spec.result, spec.progress].map((c) => c?.name));
  const columns: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) if (!named.has(name)) columns[name] = plain(value);
  const payload = spec.payload === undefined ? undefined : capped(decodePayload(row[spec.payload.name]));
  const role = (column: { name: string } | undefined, read: (v: unknown) => unknown = plain) => (column === undefined ? {} : { value: read(row[column.name]) });
  const roles: Record<string, unknown> = {};
  for (const [key, found] of [
    ["attempt", role(spec.attempt)],
    ["lastError", role(spec.lastError)],
    ["headers", role(spec.headers, parsedJson)],
    ["result", role(spec.result, parsedJson)],
    ["progress", role(spec.progress, parsedJson)],
  ] as const) {
    if ("value" in found) roles[key] = found.value;
  }
  return {
    id: String(row[spec.id.name]),
    table: spec.table,
    state,
    ...roles,
    ...(spec.retryAfter === undefined ? {} : { runAt: at(spec.retryAfter.name) }),
    ...(spec.lease === undefined ? {} : { leaseUntil: at(spec.lease.name) }),
    ...(spec.processedAt === undefined ? {} : { processedAt: at(spec.processedAt.name) }),
    ...(holder === undefined ? {} : { holder }),
    columns,
    ...(payload === undefined ? {} : { payload: payload.text, ...(payload.bytes === undefined ? {} : { payloadBytes: payload.bytes }) }),
  };
}

/**
 * Job `id` of the table, or of its dead-letter tables when the table has no such row; `undefined`
 * when neither has it. Its state as the list tells it: done, dead-lettered (in a dead group or a
 * dead-letter table), running (a live lease, or held by a claim's row lock or advisory key),
 * scheduled (its run-at ahead), or waiting.
 */
export async function showJob(opened: OpenedDatabase, table: QueueTable, id: string): Promise<ShownJob | undefined> {
  const found = await jobOf(opened, table, id);
  if (found === undefined) return undefined;
  // A dead letter in a table of its own is the run's job only when that table kept the job's id (not generated).
  const linked =
    found.job.deadLetterTable === undefined || table.deadLetters.some((p) => p.kind === "table" && p.destination.table === found.job.table && !p.destination.id.generated);
  return { ...found.job, policies: policiesOf(table, found.row), workflow: linked ? await workflowOfJob({ opened }, table.spec, id) : null };
}

async function jobOf(opened: OpenedDatabase, table: QueueTable, id: string): Promise<{ job: Omit<ShownJob, "policies" | "workflow">; row: RawRow } | undefined> {
  const job = (row: RawRow, shownJob: Omit<ShownJob, "policies" | "workflow">, deadLetterTable?: string) => ({
    job: { ...shownJob, ...(deadLetterTable === undefined ? {} : { deadLetterTable }) },
    row,
  });
  const ops = operatorFor(opened.engine);
  const { time } = dialectFor(opened.engine);
  const { spec } = table;
  const now = opened.now();
  const row = (await opened.db.executeQuery(ops.peek({ spec, createdAt: table.createdAt }, { state: "all", ids: [id], limit: 1, now }))).rows[0];
  if (row === undefined) {
    for (const place of table.deadLetters) {
      if (place.kind !== "table") continue;
      const dead = (await opened.db.executeQuery(ops.peekDeadLetters(spec, place, 1, [id]))).rows[0];
      // A dead-letter table's row names no route: every route's policy is shown.
      if (dead !== undefined) return job({}, shown(opened, place.destination, dead, "deadLettered", null), place.destination.table);
    }
    return undefined;
  }
  const ahead = (name: string | undefined) => {
    const value = name === undefined ? null : time.decode(row[name]);
    return value !== null && value.getTime() > now.getTime();
  };
  const deadGroups = new Set(table.deadLetters.flatMap((p) => (p.kind === "group" ? [p.deadGroup] : [])));
  const outside = spec.form === "advisory" && dialectFor(opened.engine).capabilities.advisoryLocks !== "session";
  if (spec.processedAt !== undefined && row[spec.processedAt.name] !== null) return job(row, shown(opened, spec, row, "done", null));
  if (spec.group !== undefined && deadGroups.has(String(row[spec.group.name]))) return job(row, shown(opened, spec, row, "deadLettered", null));
  if (ahead(spec.lease?.name)) return job(row, shown(opened, spec, row, "running", leaseHolder(spec, time.decode(row[spec.lease!.name])!)));
  if (ahead(spec.retryAfter?.name)) return job(row, shown(opened, spec, row, "scheduled", null));
  if ((await heldIds(opened, spec, [row])).size > 0) return job(row, shown(opened, spec, row, "running", sessionHolder(spec, row)));
  // Advisory keys on SQLite live in the application's process: whether one is held cannot be read here.
  return job(row, shown(opened, spec, row, "waiting", outside ? undefined : null));
}

/** The lease's holder: the worker whose token is the deadline in the lease column, until then. */
const leaseHolder = (spec: InboxDescription, until: Date): string => `a worker's lease (${spec.lease?.name} holds its token), until ${until.toISOString()}`;

/** A row-lock or advisory holder: a database session, as the running probes find it. */
const sessionHolder = (spec: InboxDescription, row: RawRow): string =>
  spec.form === "advisory" ? `a session holds its advisory key "${advisoryKeyOf(spec, row)}"` : "a session holds its row lock (a claim's open transaction)";
