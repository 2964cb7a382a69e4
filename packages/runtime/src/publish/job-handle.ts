import type { AnyInboxSpec, InboxDescription, RolesOf } from "@sqlinbox/core/internal";
import { cancelRow, type CancelResult } from "@sqlinbox/database";
import { noRoute } from "../errors.js";
import { deadLetterIdGenerated, JobEnded } from "../errors/job-errors.js";
import type { DeadLetterDestination } from "../declare/queue-rules.js";
import type { BrokerParts } from "./broker.js";
import type { Published } from "./publisher.js";
import { readJobState, type DeadLetteredJobState, type DoneJobState, type GoneJobState, type JobDeadLetterPlace, type JobState } from "./job-state.js";

/** The table description of a job of a route whose spec is `S`: `S`, or any when the broker's type does not know the route (`never`). */
export type JobSpecOf<S> = [S] extends [never] ? AnyInboxSpec : S extends AnyInboxSpec ? S : AnyInboxSpec;

/** What names a job: its id (text, as `Published.id` gives it, or a number), or what its publish resolved to (then the handle knows the row existed). */
export type JobId = string | number | bigint | Published;

/** Options of `broker.job(route, id, options)` for a job of a table described by `S`. */
export interface JobOptions<S extends AnyInboxSpec = AnyInboxSpec, D = unknown> {
  /**
   * Where the route's subscription sends dead letters, as `InboxQueue.deadLetter` takes it: a table
   * described like the job's (its id column not generated, so a dead letter keeps the job's id), or
   * `{ group }` of the job's table. Without it a dead-lettered job reads as `gone` (moved to a
   * table) or by its row as it is (moved to a group).
   */
  readonly deadLetter?: DeadLetterDestination<S, D> & D;
}

/** `JobOptions` as the handle reads them. */
interface LooseJobOptions {
  readonly deadLetter?: AnyInboxSpec | { readonly group: string } | undefined;
}

/** Options of `job.finished()`. */
export interface FinishedOptions {
  /** Give up after this many ms: rejects with `JobEnded` (`reason` `"timeout"`). No limit by default. */
  readonly timeoutMs?: number;
  /** Give up when it aborts: rejects with `JobEnded` (`reason` `"aborted"`). The job itself goes on. */
  readonly signal?: AbortSignal;
  /** How often the row is read, in ms: 500 by default. Each read is one indexed lookup by id (two on the row-lock and advisory forms while the row is due). */
  readonly pollMs?: number;
}

/** How `finished()` resolves: the job was handled (`done` where the table keeps handled rows, else `gone` once it had been seen). */
export type FinishedJob<S extends AnyInboxSpec = AnyInboxSpec> = DoneJobState<RolesOf<S>> | GoneJobState;

/** Cancels recorded per broker (id text by route), so this process's handles tell a cancelled row from a handled one. Bounded: the oldest go first. */
const cancelsOf = new WeakMap<BrokerParts, Map<string, true>>();
const CANCELS_KEPT = 10_000;

/**
 * Cancels row `id` of the table `route` goes to (`broker.cancel`, a handle's `cancel`), and records it
 * for this broker's handles. "In work" is a live lease on the database's clock, as the claims judge it: never the host's.
 */
export async function cancelJob(parts: BrokerParts, route: string, id: unknown): Promise<CancelResult> {
  const spec = parts.routes.route(route);
  if (spec === undefined) throw noRoute(route, parts.routes.all);
  const database = await parts.database();
  // The request names the table, not the route: another app may serve a route of the same name on a table of its own.
  const { table } = spec.description;
  const result = await cancelRow(database.controlPlace, spec.description, table, id, (await parts.clock()).now());
  recordCancel(parts, route, id, result);
  return result;
}

/** Records that row `id` of `route` was cancelled through this broker. */
function recordCancel(parts: BrokerParts, route: string, id: unknown, result: CancelResult): void {
  if (result === "not found") return;
  const cancels = cancelsOf.get(parts) ?? new Map<string, true>();
  cancelsOf.set(parts, cancels);
  cancels.set(`${route}\u0000${String(id)}`, true);
  if (cancels.size > CANCELS_KEPT) cancels.delete(cancels.keys().next().value as string);
}

function wasCancelled(parts: BrokerParts, route: string, id: string): boolean {
  return cancelsOf.get(parts)?.has(`${route}\u0000${id}`) === true;
}

/**
 * One job of a route: what its row says now (`state()`), a wait for its end (`finished()`), and its
 * cancel. Made by `broker.job(route, id)`; reads the broker's database when asked, never before.
 *
 * @example
 * const published = await broker.publish("reports", { title: "Q3" })
 * const job = broker.job("reports", published)
 * await job.state()     // { state: "waiting", id: "41", attempt: 0, leaseUntil: null }
 * await job.finished({ timeoutMs: 60_000 })
 */
export class JobHandle<S extends AnyInboxSpec = AnyInboxSpec> {
  /** The row's id as text, as `Published.id` gives it. */
  readonly id: string;
  readonly route: string;
  readonly #parts: BrokerParts;
  readonly #spec: InboxDescription;
  readonly #deadLetter: JobDeadLetterPlace | undefined;
  /** A state other than `gone` was read, or the handle came from a publish: `gone` now means it ended. */
  #seen: boolean;
  /** A cancel request for the row was seen in the control table while it was in work. */
  #cancelSeen = false;

  /** @internal `broker.job` builds handles. */
  constructor(parts: BrokerParts, route: string, id: JobId, options: LooseJobOptions = {}) {
    const spec = parts.routes.route(route);
    if (spec === undefined) throw noRoute(route, parts.routes.all);
    this.#parts = parts;
    this.route = route;
    this.#spec = spec.description;
    this.#seen = typeof id === "object";
    this.id = typeof id === "object" ? id.id : String(id);
    const dead = options.deadLetter;
    if (dead !== undefined && "description" in dead && dead.description.id.generated) throw deadLetterIdGenerated(route, dead.description.table);
    this.#deadLetter = dead === undefined ? undefined : "description" in dead ? { table: dead.description } : { group: dead.group };
  }

  /**
   * What the row is now: `scheduled`, `waiting`, `running`, `done` (a table with processedAt),
   * `deadLettered` (with `deadLetter` given), or `gone`; with the attempt, run-at, lease and last
   * error where the table has those columns. One read by id, plus one on the row-lock form (a
   * `SKIP LOCKED` probe) and the advisory form (a lock lookup) while the row is due.
   */
  async state(): Promise<JobState<S>> {
    const parts = this.#parts;
    const database = await parts.database();
    const state = await readJobState({
      route: this.route,
      spec: this.#spec,
      id: this.id,
      deadLetter: this.#deadLetter,
      database,
      clock: await parts.clock(),
      keys: parts.connection.keys,
      lockDatabase: () => lockDatabaseOf(this.#parts, this.#spec),
    });
    if (state.state !== "gone") this.#seen = true;
    return state as unknown as JobState<S>;
  }

  /**
   * Waits for the job to end, reading its state every `pollMs` (500 ms by default). Resolves with its
   * last state when it is `done`, or `gone` after it had been seen (handled and deleted). Rejects
   * with `JobEnded`: `deadLettered` (with the last error), `cancelled` (cancelled through this
   * broker, or while in work from anywhere), `timeout`, `aborted`, or `notFound` (no row was ever
   * seen under the id: handled before the first read, or never there).
   */
  async finished(options: FinishedOptions = {}): Promise<FinishedJob<S>> {
    const pollMs = options.pollMs ?? 500;
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    const place = { route: this.route, table: this.#spec.table, id: this.id };
    let last: JobState<S> | undefined;
    for (;;) {
      if (options.signal?.aborted === true) throw new JobEnded("aborted", place, { last });
      if (deadline !== undefined && Date.now() >= deadline) throw new JobEnded("timeout", place, { last, timeoutMs: options.timeoutMs });
      const seenBefore = this.#seen;
      last = await this.state();
      // A cancel request stays while the row is in work, and until its app's next control read after the row settles.
      const mayBeCancelled = last.state === "running" || last.state === "done" || (last.state === "gone" && seenBefore);
      if (mayBeCancelled && !this.#cancelSeen) this.#cancelSeen = await this.#cancelRequested();
      const ended = this.#ended(last, seenBefore, place);
      if (ended !== undefined) return ended;
      await pause(deadline === undefined ? pollMs : Math.max(0, Math.min(pollMs, deadline - Date.now())), options.signal);
    }
  }

  /** The end `state` means: resolved (returned), rejected (thrown), or `undefined` while the job goes on. */
  #ended(state: JobState<S>, seenBefore: boolean, place: { route: string; table: string; id: string }): FinishedJob<S> | undefined {
    const cancelled = this.#cancelSeen || wasCancelled(this.#parts, this.route, this.id);
    switch (state.state) {
      case "scheduled":
      case "waiting":
      case "running":
        return undefined;
      case "deadLettered": {
        const dead = state as DeadLetteredJobState;
        throw new JobEnded("deadLettered", place, { last: state, lastError: dead.lastError });
      }
      case "done":
        if (cancelled) throw new JobEnded("cancelled", place, { last: state });
        return state as FinishedJob<S>;
      case "gone":
        if (cancelled) throw new JobEnded("cancelled", place, { last: state });
        if (!seenBefore) throw new JobEnded("notFound", place, { last: state });
        return state;
    }
  }

  /**
   * Cancels the job, as `broker.cancel` does: `"removed"` (it will never start), `"signalled"` (in work:
   * its `ctx.signal` aborts), `"not found"`. A `finished()` of this broker then rejects with `cancelled`.
   */
  cancel(): Promise<CancelResult> {
    return cancelJob(this.#parts, this.route, this.id);
  }

  /** A cancel request waits for the row in the control table (no control table: none). */
  async #cancelRequested(): Promise<boolean> {
    const database = await this.#parts.database();
    try {
      return (await database.execute("observe", database.dialect.jobs.cancelRequested(this.#spec, this.route, this.id))).rows.length > 0;
    } catch (error) {
      if (database.dialect.missingTable(error) || database.dialect.missingTable((error as { cause?: unknown }).cause)) return false;
      throw error;
    }
  }
}

/** Each broker's connection database name (what an advisory lock name holds when the table names no schema), read once. */
const connectionDatabases = new WeakMap<BrokerParts, Promise<string>>();

/** The lock names' database, as the advisory claims name it: the table's schema, else the broker connection's (read once per broker). */
export function lockDatabaseOf(parts: BrokerParts, spec: InboxDescription): Promise<string> {
  if (spec.schema !== undefined) return Promise.resolve(spec.schema);
  let read = connectionDatabases.get(parts);
  if (read === undefined) {
    read = parts.database().then(async (database) => String((await database.execute("observe", database.dialect.schema.currentDatabase())).rows[0]?.name ?? ""));
    connectionDatabases.set(parts, read);
  }
  return read;
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
