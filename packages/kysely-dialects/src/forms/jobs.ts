import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { notOnEngine } from "../shared/no-statement.js";
import { CONTROL_TABLE } from "../statements/control.js";
import {
  deadLetterListQuery,
  deadLetterWindowEndQuery,
  jobListQuery,
  jobListWindowEndQuery,
  jobsLockProbeQuery,
  type DeadLetterListFilter,
  type JobListFilter,
} from "../statements/job-list.js";
import { cancelRequestedQuery, deadLetterReadQuery, jobLockProbeQuery, jobReadQuery } from "../statements/job-state.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * What a job handle reads to tell one row's state (`broker.job(route, id).state()`): the row, then,
 * for a row that is due, whether it is in work the way its form holds it (a live lease is in the
 * row; a row lock needs `lockProbe`, where `capabilities.rowLock`; an advisory key `keyHeld`, where
 * `capabilities.advisoryLocks` is `"session"`: on SQLite the keys live in the process's registry,
 * and these refuse).
 */
export interface JobStatements {
  /** The row by id, with the columns that tell its state, each under its own name: no row, no such job. */
  read(spec: InboxDescription, id: unknown): CompiledQuery<RawRow>;
  /** Row lock: the row's id unless a transaction holds the row (`FOR UPDATE SKIP LOCKED`, alone in its statement). */
  lockProbe(spec: InboxDescription, id: unknown): CompiledQuery<{ id: unknown }>;
  /** Advisory: `{ key }` when some session holds the key (`pg_locks`, `IS_USED_LOCK`); `database` as `tryLock` takes it. */
  keyHeld(key: string, database: string): CompiledQuery<{ key: string }>;
  /** A dead letter in a destination table by the id it kept: the id, last error and failed attempts where it has them. */
  readDeadLetter(destination: InboxDescription, id: unknown): CompiledQuery<RawRow>;
  /** A page of the table's rows in one row set, in id order after the cursor; a set the table cannot hold (`jobListRowsExist`) fails. */
  list(spec: InboxDescription, filter: JobListFilter): CompiledQuery<RawRow>;
  /** A searched page's window end: the id of the `window`-th row of the set after the cursor, no search applied; no row when fewer follow. */
  listWindowEnd(spec: InboxDescription, filter: JobListFilter, window: number): CompiledQuery<{ id: unknown }>;
  /** A page of a dead-letter table in id order after the cursor. */
  listDeadLetters(destination: InboxDescription, filter: DeadLetterListFilter): CompiledQuery<RawRow>;
  /** A dead-letter table's searched window end, as `listWindowEnd`. */
  deadLettersWindowEnd(destination: InboxDescription, filter: DeadLetterListFilter, window: number): CompiledQuery<{ id: unknown }>;
  /** Row lock: of `ids`, those no transaction holds (`FOR UPDATE SKIP LOCKED`, alone in its statement). */
  lockProbeMany(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<{ id: unknown }>;
  /** Advisory: of `keys`, those some session holds, as `keyHeld` for one. */
  keysHeld(keys: readonly string[], database: string): CompiledQuery<{ key: string }>;
  /** The cancel requests waiting for the row in the control table (under `route` or the table's name). */
  cancelRequested(spec: InboxDescription, route: string, id: unknown): CompiledQuery<{ target: string }>;
}

/** The job-state statements on one engine: the same text everywhere but the lock probe and the key lookup, each where the engine has them. */
export function jobStatements(engine: EngineTraits): JobStatements {
  const ctx = engine.statements;
  const engineName = ctx.capabilities.engine;
  const held = engine.operator.heldAdvisoryKeys;
  return Object.freeze({
    read: (spec: InboxDescription, id: unknown) => jobReadQuery(ctx, spec, id),
    lockProbe: (spec: InboxDescription, id: unknown) =>
      ctx.capabilities.rowLock ? jobLockProbeQuery(ctx, spec, id) : notOnEngine(engineName, "jobs.lockProbe", "it has no row locks (capabilities.rowLock is false)"),
    keyHeld: (key: string, database: string) =>
      held === "process registry"
        ? notOnEngine(engineName, "jobs.keyHeld", 'advisory keys live in the application\'s process (capabilities.advisoryLocks is "process")')
        : held([key], database),
    list: (spec: InboxDescription, filter: JobListFilter) => jobListQuery(ctx, spec, filter, engine.listWalk),
    listWindowEnd: (spec: InboxDescription, filter: JobListFilter, window: number) => jobListWindowEndQuery(ctx, spec, filter, engine.listWalk, window),
    listDeadLetters: (destination: InboxDescription, filter: DeadLetterListFilter) => deadLetterListQuery(ctx, destination, filter),
    deadLettersWindowEnd: (destination: InboxDescription, filter: DeadLetterListFilter, window: number) => deadLetterWindowEndQuery(ctx, destination, filter, window),
    lockProbeMany: (spec: InboxDescription, ids: readonly unknown[]) =>
      ctx.capabilities.rowLock ? jobsLockProbeQuery(ctx, spec, ids) : notOnEngine(engineName, "jobs.lockProbeMany", "it has no row locks (capabilities.rowLock is false)"),
    keysHeld: (keys: readonly string[], database: string) =>
      held === "process registry"
        ? notOnEngine(engineName, "jobs.keysHeld", 'advisory keys live in the application\'s process (capabilities.advisoryLocks is "process")')
        : held(keys, database),
    readDeadLetter: (destination: InboxDescription, id: unknown) => deadLetterReadQuery(ctx, destination, id),
    cancelRequested: (spec: InboxDescription, route: string, id: unknown) => cancelRequestedQuery(ctx, CONTROL_TABLE, spec, route, id),
  });
}
