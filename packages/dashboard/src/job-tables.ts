import type { InboxDescription } from "@sqlinbox/core/internal";
import { advisoryKeyOf, dialectFor, type Engine, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { DeadLetterPlace } from "@sqlinbox/kysely-dialects/operator";
import type { CompiledQuery } from "kysely";

/**
 * What the job browser reads from: the open database and the tables the dashboard serves, with
 * their dead-letter places. `sqlinbox dashboard` passes its operator console, which has both.
 */
export interface JobTables {
  readonly opened: {
    readonly db: { executeQuery<R>(query: CompiledQuery<R>): Promise<{ readonly rows: R[] }> };
    readonly engine: Engine;
    /** The database (MySQL) or schema name, as advisory lock names are prefixed with it. */
    readonly database: string;
    /** The database's time. */
    now(): Date;
  };
  readonly tables: readonly {
    readonly spec: InboxDescription;
    readonly deadLetters: readonly DeadLetterPlace[];
    /** The policies of the routes that consume the table, as a `--module` declares them (none without one). */
    readonly policies?: readonly RoutePolicy[];
  }[];
}

/**
 * What a route's queue declares about how its jobs run and fail, as the job page and `jobs show`
 * tell it: read from the queues and subscribers a `--module` exports (an operator tool has no app).
 */
export interface RoutePolicy {
  readonly route: string;
  /** The attempt at which a throw becomes a dead letter; absent: a throw is retried for ever. */
  readonly maxAttempts?: number;
  /** Where dead letters go, in words (`table dead_jobs`, `group dead`); absent: none is declared. */
  readonly deadLetter?: string;
  /** How long a delivery may run before `ctx.signal` aborts it, and the grace after; absent: as long as it takes. */
  readonly timeout?: { readonly ms: number; readonly graceMs: number };
  /** The lease term in ms (lease form); absent: the broker's. */
  readonly leaseMs?: number;
  /** What a throw becomes: the default backoff (1 s doubling to 1 h, jittered), or the queue's own `onError`. */
  readonly onError: "default backoff" | "the queue's own policy";
  readonly workers: number;
  readonly batch: number;
  readonly pollIntervalMs: number;
  readonly maxInWork?: number;
  readonly maxInWorkPerKey?: number;
  readonly rateLimit?: { readonly max: number; readonly perMs: number };
  /** How long handled rows and dead letters are kept, in ms; absent: for ever. */
  readonly retain?: { readonly doneMs?: number; readonly deadLetteredMs?: number };
}

/** The policies that apply to a row of the table: the route its group column names, else every route of the table. */
export function policiesOf(table: JobTables["tables"][number], row: Readonly<Record<string, unknown>>): readonly RoutePolicy[] {
  const all = table.policies ?? [];
  const group = table.spec.group?.name;
  if (group === undefined || all.length <= 1) return all;
  const route = row[group];
  const mine = all.filter((p) => p.route === String(route));
  // A dead group's row names no route of its own: every route's policy is shown, each under its name.
  return mine.length > 0 ? mine : all;
}

/** A request the page or a script got wrong: the server answers 400 with its message. */
export class BadRequest extends Error {}

/** The described table by name, or a 400 that lists the tables served. */
export function tableOf(source: JobTables, name: string | undefined) {
  const found = source.tables.find((t) => t.spec.table === name);
  if (found === undefined) throw new BadRequest(`no table "${name ?? ""}" is served here; the tables are ${source.tables.map((t) => t.spec.table).join(", ")}`);
  return found;
}

/** Whether a row's hold lives in the row (a lease column), so SQL alone tells running from waiting. */
export const holdsInRow = (spec: InboxDescription): boolean => spec.lease !== undefined;

/**
 * Of due rows (no live lease, no retryAfter ahead), which ones a worker holds now: a row lock is
 * probed with `FOR UPDATE SKIP LOCKED`, an advisory key looked up among the sessions' locks.
 * `"unknown"` where it cannot be seen from outside (advisory keys on SQLite live in the app's process).
 */
export async function heldOf(source: JobTables, spec: InboxDescription, rows: readonly RawRow[]): Promise<("held" | "free")[] | "unknown"> {
  if (rows.length === 0) return [];
  const { db, engine, database } = source.opened;
  const dialect = dialectFor(engine);
  const ids = rows.map((r) => r[spec.id.name]);
  if (spec.advisoryKey !== undefined) {
    if (dialect.capabilities.advisoryLocks !== "session") return "unknown";
    const keys = rows.map((r) => advisoryKeyOf(spec, r));
    const held = new Set((await db.executeQuery(dialect.jobs.keysHeld([...new Set(keys)], database))).rows.map((r) => r.key));
    return keys.map((k) => (held.has(k) ? "held" : "free"));
  }
  if (!dialect.capabilities.rowLock) return "unknown";
  const free = new Set((await db.executeQuery(dialect.jobs.lockProbeMany(spec, ids))).rows.map((r) => String(r.id)));
  return ids.map((id) => (free.has(String(id)) ? "free" : "held"));
}

/** A column value fit for JSON: times as ISO-8601 (text times decoded), bytes as a note, big integers as text. */
export function plain(engine: Engine, spec: InboxDescription, name: string, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  const timeRoles = [spec.lease, spec.retryAfter, spec.processedAt].map((c) => c?.name);
  if (timeRoles.includes(name) || value instanceof Date) {
    const decoded = dialectFor(engine).time.decode(value);
    return decoded instanceof Date && !Number.isNaN(decoded.getTime()) ? decoded.toISOString() : String(value);
  }
  if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`;
  if (typeof value === "bigint") return value.toString();
  return value;
}
