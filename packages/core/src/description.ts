import type { PortableType } from "./portable-type.js";
import type { ClaimForm, ColumnRole } from "./roles.js";

/** One described column: its name in the database and the key it has in a row object. */
export interface ColumnDescription {
  /** The column's name in the table. */
  readonly name: string;
  /** The property a row object carries it under (the declarative key; the name when described by hand). */
  readonly key: string;
  readonly role: ColumnRole;
  /** Filled by the database (an identity, a default): never written by a publish. */
  readonly generated: boolean;
  /** The portable type given with `.type(…)` (id, order key and data columns only); absent when none was given. */
  readonly type?: PortableType;
}

/** One piece of an advisory key template: literal text or a column's value. */
export type AdvisoryKeyPart = { readonly text: string } | { readonly column: ColumnDescription };

export interface AdvisoryKey {
  readonly template: string;
  readonly parts: readonly AdvisoryKeyPart[];
}

/**
 * The plain value of a table description: what the statements of `@sqlinbox/kysely-dialects`
 * and the runtime read. Both ways to describe a table produce it.
 */
export interface InboxDescription {
  readonly table: string;
  /** The Postgres schema or MySQL/MariaDB database that holds the table; unset: the connection's own. */
  readonly schema?: string;
  readonly form: ClaimForm;
  readonly id: ColumnDescription;
  readonly attempt?: ColumnDescription;
  readonly lease?: ColumnDescription;
  readonly payload?: ColumnDescription;
  readonly retryAfter?: ColumnDescription;
  readonly processedAt?: ColumnDescription;
  readonly group?: ColumnDescription;
  readonly priority?: ColumnDescription;
  /** The order key: rows that share its value run one at a time, in id order. */
  readonly orderKey?: ColumnDescription;
  readonly headers?: ColumnDescription;
  /** Dead-letter destinations: the last error a moved row failed with. */
  readonly lastError?: ColumnDescription;
  /** Dead-letter destinations: the attempts a moved row had spent. */
  readonly failedAttempts?: ColumnDescription;
  /** The dedup key: a unique index holds one row per key. */
  readonly key?: ColumnDescription;
  /** Where an ack writes the handler's result (JSON); only with processedAt. */
  readonly result?: ColumnDescription;
  /** Where `ctx.progress(value)` writes (JSON). */
  readonly progress?: ColumnDescription;
  /** Every column in the order it was described, the role columns included. */
  readonly columns: readonly ColumnDescription[];
  readonly advisoryKey?: AdvisoryKey;
  readonly fifo: boolean;
  /** The payload's Standard Schema (validated at decode) or type marker, when one was given. */
  readonly payloadType?: unknown;
}
