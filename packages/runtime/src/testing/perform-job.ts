import type { AnyInboxSpec, HasRole, RoleMarker, RoleName, RolesOf, SpecError } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import type { Clock } from "../clock.js";
import { commitsHandlerWrites, decideSettlement, type Settlement } from "../claim/settlement.js";
import { batchContext, deliveryContext, type ContextSource } from "../declare/context.js";
import { defaultOnError, reasonOf, type FailureContext } from "../declare/failure-policy.js";
import { toOutcome, type HandlerOutcome } from "../declare/outcome.js";
import { decodePayload } from "../declare/payload.js";
import type { DeliveredOf } from "../declare/queue-rules.js";
import type { Outputs, Subscriber } from "../declare/subscriber.js";
import type { AnyTransaction } from "../drivers/database.js";
import type { BrokerParts } from "../publish/broker.js";
import { publishedRows, type MessageHeaderValues } from "../publish/publish-rows.js";
import type { DataColumns } from "../publish/sql-broker.js";

/** An option a table has no column for: the sentence says what to add. */
type NeedsRole<S extends AnyInboxSpec, Role extends RoleName, T, Message extends string> = HasRole<RolesOf<S>, Role> extends true ? T : SpecError<Message>;

/** How `performJob` runs a handler: what its context reads. Each option only where the table has its column. */
export interface PerformOptions<S extends AnyInboxSpec = AnyInboxSpec> {
  /** `keys.attempt` (default 1): a table with an attempt column. */
  readonly attempt?: NeedsRole<S, "attempt", number, "performJob(…, { attempt }) needs an attempt column: describe one with field.attempt()">;
  /** `keys.headers` (default `{}`): a table with a headers column. */
  readonly headers?: NeedsRole<S, "headers", MessageHeaderValues, "performJob(…, { headers }) needs a headers column: describe one with field.headers()">;
  /** The row's data columns (in row mode the handler's row carries them). */
  readonly columns?: DataColumns<S>;
  /** `ctx.id` (default: the count of jobs this app performed, from 1). */
  readonly id?: unknown;
  /** `ctx.signal` (default: one that never aborts): abort it to test a handler's reaction. */
  readonly signal?: AbortSignal;
}

/** What `performJob` returns: the outcome the row would settle with, and what the handler threw, if it did. */
export interface PerformedJob {
  /**
   * What the handler returned (nothing: `ack`), or, when it threw, what the queue's `onError` policy
   * made of the error; then `maxAttempts` applied, as the runtime applies it (a retry at the last
   * attempt is a dead letter).
   */
  readonly outcome: HandlerOutcome;
  /** What the handler threw. */
  readonly error?: unknown;
}

/** What a performed job runs on: the broker that routes its subscriber, the app's clock, the job's id. */
export interface PerformPlace {
  readonly parts: BrokerParts;
  readonly clock: Clock;
  readonly id: unknown;
}

/**
 * Runs `sub`'s handler once on `payload`, with no row claimed: the payload goes through the table's
 * encoding and decoding (and its Standard Schema) as a published one would, and the context is the
 * one a delivery gets. On a transactional queue `ctx.tx` is a real transaction on the broker's
 * database, committed when the outcome is an ack and rolled back otherwise.
 */
export async function performJob<S extends AnyInboxSpec>(sub: Subscriber<S>, payload: unknown, options: PerformOptions<S>, place: PerformPlace): Promise<PerformedJob> {
  const { parts, clock, id } = place;
  const spec = sub.queue.spec.description;
  const queue = sub.queue.options;
  const where = { subscription: sub.name, table: spec.table, id };
  const attempt = (options.attempt as number | undefined) ?? (spec.attempt === undefined ? undefined : 1);
  const headers = options.headers as MessageHeaderValues | undefined;
  const columns = options.columns as Readonly<Record<string, unknown>> | undefined;
  const { storage } = await parts.routes.table(spec);
  const row = publishedRows(spec, sub.name, [payload], storage, { headers, columns })[0] as RawRow;
  if (spec.attempt !== undefined) row[spec.attempt.name] = attempt;
  const delivered = spec.payload === undefined ? Object.freeze({ ...(payload as object), ...columns }) : await decodePayload(spec, row, where);
  const leaseMs = queue.lease ?? 30_000;
  const source: ContextSource = {
    id,
    row,
    attempt,
    signal: options.signal ?? new AbortController().signal,
    leaseDeadline: () => (spec.lease === undefined ? undefined : new Date(clock.now().getTime() + leaseMs)),
  };
  const contextPlace = { subscription: sub.name, table: spec.table, headersColumn: spec.headers?.name };
  const outs: Outputs = { publish: async (route, body) => void (await parts.publisher.publish(route, body, undefined)) };
  const call = async (tx: AnyTransaction | undefined): Promise<unknown> => {
    if (sub.kind === "batch") {
      const result = await sub.invoke([delivered as DeliveredOf<S>], batchContext<RolesOf<S>>(contextPlace, [source], clock));
      return Array.isArray(result) ? result[0] : result;
    }
    return sub.invoke(delivered as DeliveredOf<S>, deliveryContext<readonly RoleMarker[]>(contextPlace, source, clock, tx) as never, outs);
  };
  /** The settlement as the runtime would decide it: of what the handler returned (`threw` false) or of the onError policy's outcome, then the cap. */
  const decide = (threw: boolean, value: unknown): { readonly performed: PerformedJob; readonly settlement: Settlement } => {
    const error = threw ? value : undefined;
    const failure: FailureContext = { ...where, deadLetter: queue.deadLetter !== undefined, maxAttempts: queue.deadLetter?.maxAttempts, keepMs: leaseMs };
    const outcome = threw ? toOutcome((queue.onError ?? defaultOnError())(error, attempt, failure)) : toOutcome(value);
    const rules = { maxAttempts: queue.deadLetter?.maxAttempts, deadLetter: true, keepMs: leaseMs, storesDelay: true };
    const reason = () => (threw ? reasonOf(error) : `attempt ${attempt} reached maxAttempts ${queue.deadLetter?.maxAttempts}`);
    const settlement = decideSettlement(outcome, attempt, rules, reason);
    return { performed: threw ? { outcome: settlement.outcome, error } : { outcome: settlement.outcome }, settlement };
  };
  if (queue.transactional !== true) {
    try {
      return decide(false, await call(undefined)).performed;
    } catch (error) {
      return decide(true, error).performed;
    }
  }
  const database = parts.connection.require(sub.name);
  const tx = await database.db.startTransaction().execute();
  let decided: ReturnType<typeof decide>;
  try {
    decided = decide(false, await call(tx as unknown as AnyTransaction));
  } catch (error) {
    decided = decide(true, error);
  }
  if (commitsHandlerWrites(decided.settlement)) await tx.commit().execute();
  else await tx.rollback().execute();
  return decided.performed;
}
