import type { AnyInboxSpec, DataOf, HasLeaseColumn, HasRole, RoleMarker, RolesOf, SpecError } from "@sqlinbox/core/internal";
import { updateRow, type UpdateResult } from "@sqlinbox/database";
import { noRoute, publishOptionWithoutColumn } from "../errors.js";
import { encodePayload } from "../declare/payload.js";
import type { PayloadOfSpec } from "../declare/queue.js";
import type { BrokerParts } from "./broker.js";
import type { JobId } from "./job-handle.js";

export type { UpdateResult } from "@sqlinbox/database";

type When<Has extends boolean, Option, Message extends string> = Has extends true ? Option : { readonly [K in keyof Option]?: SpecError<Message> };

/**
 * What `broker.update` may change in a row of a table described by `S`, each only where the table
 * has a column for it: `runAt` (a retryAfter column, else the lease column), `priority` (a priority
 * column), `payload` (a payload column), `columns` (its data columns).
 */
export type JobChangesFor<S> = [S] extends [never]
  ? JobChanges
  : S extends AnyInboxSpec
    ? RunAtChange<RolesOf<S>> & PriorityChange<RolesOf<S>> & PayloadChange<S> & ColumnsChange<S>
    : JobChanges;
type RunAtChange<R extends readonly RoleMarker[]> = When<
  HasRole<R, "retryAfter"> extends true ? true : HasLeaseColumn<R>,
  { readonly runAt?: Date },
  "update(…, { runAt }) needs somewhere to store the time: a retryAfter column (field.retryAfter()) or a lease column"
>;
type PriorityChange<R extends readonly RoleMarker[]> = When<
  HasRole<R, "priority">,
  { readonly priority?: number },
  "update(…, { priority }) needs a priority column: describe one with field.priority() or .priority(column(…))"
>;
type PayloadChange<S extends AnyInboxSpec> = When<
  HasRole<RolesOf<S>, "payload">,
  { readonly payload?: PayloadOfSpec<S> },
  "update(…, { payload }) needs a payload column: a row-mode table has none; change its data columns with { columns }"
>;
type ColumnsChange<S extends AnyInboxSpec> = [keyof DataOf<S>] extends [never]
  ? { readonly columns?: SpecError<"update(…, { columns }) sets data columns: this table describes none (field.data() or .data(column(…)))"> }
  : { readonly columns?: { readonly [K in keyof DataOf<S>]?: DataOf<S>[K] } };

/** `JobChangesFor` as the runtime reads it. */
export interface JobChanges {
  readonly runAt?: Date;
  readonly priority?: number;
  readonly payload?: unknown;
  readonly columns?: Readonly<Record<string, unknown>>;
}

/**
 * Changes row `id` of route `name` unless it is in work (see `updateRow`): the payload encoded as a
 * publish encodes it, the run-at in the retryAfter column (else the lease column), the priority and
 * data columns as given. A change the table has no column for is a `Declaration` error.
 */
export async function updateJob(parts: BrokerParts, name: string, id: JobId, changes: JobChanges): Promise<UpdateResult> {
  const route = parts.routes.route(name);
  if (route === undefined) throw noRoute(name, parts.routes.all);
  const spec = route.description;
  const refuse = (message: string, column?: string): never => {
    throw publishOptionWithoutColumn(name, spec.table, message, column);
  };
  const values: Record<string, unknown> = {};
  if (changes.payload !== undefined) {
    if (spec.payload === undefined) throw refuse("update(…, { payload }) needs a payload column");
    await parts.database();
    const { storage } = await parts.routes.table(spec, undefined);
    values[spec.payload.name] = encodePayload(changes.payload, storage, { route: name, table: spec.table });
  }
  if (changes.runAt !== undefined) {
    const column = spec.retryAfter ?? spec.lease ?? refuse("update(…, { runAt }) needs a retryAfter column or a lease column");
    if (Number.isNaN(changes.runAt.getTime())) throw refuse("runAt is not a valid Date");
    values[column.name] = changes.runAt;
  }
  if (changes.priority !== undefined) values[(spec.priority ?? refuse("update(…, { priority }) needs a priority column")).name] = changes.priority;
  for (const [key, value] of Object.entries(changes.columns ?? {})) {
    const column = spec.columns.find((c) => (c.role === "data" || c.role === "orderKey") && (c.key === key || c.name === key));
    if (column === undefined) throw refuse(`update(…, { columns }) names "${key}", which is not a data column or the order key of the table`, key);
    if (value !== undefined) values[column.name] = value;
  }
  return write(parts, spec, id, values);
}

/**
 * Makes row `id` of route `name` due now (on the database's clock) unless it is in work: its run-at
 * (the retryAfter column, else the lease column) set to now.
 */
export async function retryJobNow(parts: BrokerParts, name: string, id: JobId): Promise<UpdateResult> {
  const route = parts.routes.route(name);
  if (route === undefined) throw noRoute(name, parts.routes.all);
  const spec = route.description;
  const column = spec.retryAfter ?? spec.lease;
  if (column === undefined) throw publishOptionWithoutColumn(name, spec.table, "retryNow needs a retryAfter column or a lease column: this table schedules no row");
  return write(parts, spec, id, { [column.name]: (await parts.clock()).now() });
}

async function write(parts: BrokerParts, spec: BrokerSpec, id: JobId, values: Readonly<Record<string, unknown>>): Promise<UpdateResult> {
  const database = await parts.database();
  const rowId = typeof id === "object" ? id.id : id;
  const now = (await parts.clock()).now();
  // Where advisory keys live in this process (SQLite), its registry fences the write as a claim's lock would.
  const keys = database.dialect.capabilities.advisoryLocks === "process" ? parts.connection.keys : undefined;
  return updateRow(database.db, database.dialect, spec, rowId, values, now, keys);
}

type BrokerSpec = NonNullable<ReturnType<BrokerParts["routes"]["route"]>>["description"];
