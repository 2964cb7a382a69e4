import type { ColumnDescription, InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import { headersWithoutColumn, publishOptionWithoutColumn } from "../errors.js";
import { encodePayload, type PayloadStorage } from "../declare/payload.js";

/** Metadata carried from a publish to `keys.headers`: string pairs such as a W3C `traceparent`. */
export type MessageHeaderValues = Readonly<Record<string, string>>;

/** What a publish writes beside the payload, as the runtime receives it (typed by the route on `SqlBroker`). */
export interface RowOptions {
  readonly headers?: MessageHeaderValues | undefined;
  readonly priority?: number | undefined;
  /** When the row may be claimed first (an instant, judged on the database's clock). */
  readonly runAt?: Date | undefined;
  /** Ms from now on the database's clock before the row may be claimed: the publisher turns it into `runAt`. */
  readonly delay?: number | undefined;
  /** Data columns by key: one object for every row, or one per payload. */
  readonly columns?: Readonly<Record<string, unknown>> | ((payload: unknown, index: number) => Readonly<Record<string, unknown>>) | undefined;
  /** The dedup key of each row, in order (`undefined`: no key). */
  readonly keys?: readonly (string | undefined)[] | undefined;
  /**
   * Headers of each row, in order (an inbox bridge's messages, each with its own), written into the headers
   * column with the call's `headers` merged over them. Ignored by a table without a headers column.
   */
  readonly rowHeaders?: readonly (MessageHeaderValues | undefined)[] | undefined;
  /**
   * Keyed rows are inserted in the order given, their ids following it, rather than in key order (which keeps two
   * publishers of the same keys from waiting on each other in a circle): an inbox bridge's messages, in delivery order.
   */
  readonly inGivenOrder?: boolean | undefined;
  /**
   * The call's keyed inserts share one transaction of their own also where each keyed row is an insert of its own
   * that would commit alone (MySQL/MariaDB): there a publisher holding some of the same keys may then deadlock
   * with it, and the whole call fails (nothing written) for the caller to try again. An inbox bridge's batch, which
   * is stored one message at a time when it fails. (Elsewhere a call's rows go in one insert per chunk, in one
   * transaction when there are several.)
   */
  readonly oneTransaction?: boolean | undefined;
  /** A held key's row takes this publish's values unless it is in work (lease tables with a retryAfter column). */
  readonly replace?: boolean | undefined;
}

/**
 * The rows a publish writes, keyed by column name: each payload encoded for its column (or, in
 * row mode, the described columns it names), the headers as JSON text in the headers column, the
 * published name in the group column (a prefix route's published name is the group value), and
 * the options: priority, the time to run at (the retryAfter column, else the lease column, which
 * hides the row from claims just as well), data columns, the dedup key. An option the table has
 * no column for is a `Declaration` error.
 */
export function publishedRows(spec: InboxDescription, name: string, payloads: readonly unknown[], storage: PayloadStorage, options: RowOptions = {}): RawRow[] {
  const { headers, priority, runAt, columns, keys, replace, rowHeaders } = options;
  const refuse = (message: string, column?: string) => publishOptionWithoutColumn(name, spec.table, message, column);
  if (headers !== undefined && spec.headers === undefined) throw headersWithoutColumn(name, spec.table);
  if (priority !== undefined && spec.priority === undefined)
    throw refuse("a publish with a priority needs a priority column: describe one with field.priority() or .priority(column(…))");
  const runAtColumn = spec.retryAfter ?? spec.lease;
  if (runAt !== undefined && runAtColumn === undefined)
    throw refuse("a publish with runAt or delay needs somewhere to store the time: a retryAfter column (field.retryAfter()) or a lease column");
  if (runAt !== undefined && Number.isNaN(runAt.getTime())) throw refuse("runAt is not a valid Date");
  if (keys?.some((k) => k !== undefined) && spec.key === undefined) throw refuse("a publish with a key needs a dedup key column: describe one with field.key() or .key(column(…))");
  if (replace === true && (spec.key === undefined || spec.lease === undefined || spec.retryAfter === undefined))
    throw refuse("replace needs a dedup key column, a lease column (it tells a row in work) and a retryAfter column (it holds the run-at)");
  // Without a key there is no row to debounce: each publish would insert while the caller believes it replaces.
  if (replace === true && !keys?.some((k) => k !== undefined))
    throw refuse("replace: true debounces the row that holds the publish's key: give the publish a key (key: …; keys on publishMany)");
  if (keys !== undefined && keys.length !== payloads.length) throw refuse(`publishMany got ${keys.length} keys for ${payloads.length} payloads: give one key per payload`);
  if (rowHeaders !== undefined && rowHeaders.length !== payloads.length)
    throw refuse(`publishMany got headers for ${rowHeaders.length} rows, ${payloads.length} payloads: give one per payload`);
  const headersText = headers === undefined ? undefined : JSON.stringify(headers);
  // One place for every row's encoding error (a bulk publish builds nothing per row it does not write).
  const place = { route: name, table: spec.table };
  return payloads.map((payload, index) => {
    const row: RawRow = {};
    if (spec.payload !== undefined) {
      row[spec.payload.name] = encodePayload(payload, storage, place);
    } else {
      const values = (payload ?? {}) as Record<string, unknown>;
      for (const col of spec.columns) if (!col.generated && col.key in values) row[col.name] = values[col.key];
    }
    const data = typeof columns === "function" ? columns(payload, index) : columns;
    if (data !== undefined) {
      for (const [key, value] of Object.entries(data)) {
        // Data columns and the order key: the values the application chooses for a row.
        const writable = (c: ColumnDescription) => c.role === "data" || c.role === "orderKey";
        const col = spec.columns.find((c) => writable(c) && c.key === key) ?? spec.columns.find((c) => writable(c) && c.name === key);
        if (col === undefined) throw refuse(`publish(…, { columns }) names "${key}", which is not a data column or the order key of the table`, key);
        if (value !== undefined) row[col.name] = value;
      }
    }
    const own = rowHeaders?.[index];
    if (spec.headers !== undefined) {
      if (own !== undefined && Object.keys(own).length > 0) row[spec.headers.name] = JSON.stringify(headers === undefined ? own : { ...own, ...headers });
      else if (headersText !== undefined) row[spec.headers.name] = headersText;
    }
    if (spec.group !== undefined) row[spec.group.name] = name;
    if (priority !== undefined && spec.priority !== undefined) row[spec.priority.name] = priority;
    if (runAt !== undefined && runAtColumn !== undefined) row[runAtColumn.name] = runAt;
    const key = keys?.[index];
    if (key !== undefined && spec.key !== undefined) row[spec.key.name] = key;
    return row;
  });
}

/**
 * Splits rows into inserts that each carry at most `maxParameters` bound values (65535 on
 * Postgres and MySQL, 32766 on SQLite): one multi-row insert per chunk.
 */
export function chunkRows(rows: readonly RawRow[], maxParameters: number): RawRow[][] {
  const perRow = Math.max(1, ...rows.map((r) => Object.keys(r).length));
  const size = Math.max(1, Math.floor(maxParameters / perRow));
  const chunks: RawRow[][] = [];
  for (let i = 0; i < rows.length; i += size) chunks.push(rows.slice(i, i + size));
  return chunks;
}

/** A publish's options as `SqlBroker.publish` and `publishMany` receive them, but `via` and `keys`. */
interface PublishedOptions extends Omit<RowOptions, "columns" | "keys"> {
  readonly columns?: unknown;
  readonly key?: string;
}

/** The run-time options of a publish (the publisher turns a `delay` into a `runAt` on the database's clock, which claims compare against). */
export function rowOptions(options: PublishedOptions, keys: readonly (string | undefined)[] | undefined): RowOptions {
  const { headers, priority, runAt, delay, columns, replace } = options;
  return { headers, priority, runAt, delay: runAt === undefined ? delay : undefined, columns: columns as RowOptions["columns"], keys, replace };
}
