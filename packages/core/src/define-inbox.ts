import { specFromDefinition, type CheckDefinition, type DefinitionErrorAt, type InboxDefinition, type OnColumns, type SpecOfDefinition } from "./define.js";
import type { ColumnRole } from "./roles.js";
import type { SpecError } from "./type-errors.js";

/** The application's table names, offered for completion; any other string reaches the readable error. */
type TableName<DB> = (keyof DB & string) | (string & {});

/** What a Kysely column type selects as (`ColumnType<S, I, U>` or a plain type); read structurally. */
type SelectOf<V> = V extends { readonly __select__: infer S } ? S : V;
type TableOf<DB, D extends InboxDefinition> = D["table"] extends keyof DB ? DB[D["table"]] : never;
type Cols<D extends InboxDefinition> = D["columns"];
type NameAt<D extends InboxDefinition, K extends keyof Cols<D>> = Cols<D>[K]["name"] extends string ? Cols<D>[K]["name"] : K & string;
type NameWithRole<D extends InboxDefinition, Role extends ColumnRole> = { [K in keyof Cols<D>]: Cols<D>[K]["role"] extends Role ? NameAt<D, K> : never }[keyof Cols<D>];
type Missing<DB, D extends InboxDefinition> = Exclude<{ [K in keyof Cols<D>]: NameAt<D, K> }[keyof Cols<D>], keyof TableOf<DB, D>>;
type ColumnValue<DB, D extends InboxDefinition, Role extends ColumnRole> = NonNullable<SelectOf<TableOf<DB, D>[NameWithRole<D, Role> & keyof TableOf<DB, D>]>>;
type Holds<V, T> = [V] extends [never] ? true : [V] extends [T] ? true : false;

/**
 * The rules a database interface adds: the table and every column exist, the lease column
 * holds a date (a `Date`, or ISO text on SQLite), the attempt column holds a number, the dedup key text.
 */
export type CheckAgainstDatabase<DB, D extends InboxDefinition> = D["table"] extends keyof DB
  ? [Missing<DB, D>] extends [never]
    ? Holds<ColumnValue<DB, D, "lease">, Date | string> extends false
      ? SpecError<`the lease column "${NameWithRole<D, "lease"> & string}" of "${D["table"]}" does not hold a date: give the lease role to a column typed Date (or ISO-8601 text on SQLite)`>
      : Holds<ColumnValue<DB, D, "attempt">, number> extends false
        ? SpecError<`the attempt column "${NameWithRole<D, "attempt"> & string}" of "${D["table"]}" does not hold a number: give the attempt role to an integer column`>
        : Holds<ColumnValue<DB, D, "key">, string> extends false
          ? SpecError<`the key column "${NameWithRole<D, "key"> & string}" of "${D["table"]}" does not hold text: give the key role to a text column`>
          : unknown
    : SpecError<`table "${D["table"]}" has no column "${Missing<DB, D> & string}" in the database interface: check the name, or give the column's name as the field's argument`>
  : SpecError<`the database interface has no table "${D["table"]}": check the name, or add the table to the interface`>;

type KeyWithRole<D extends InboxDefinition, Role extends ColumnRole> = { [K in keyof Cols<D>]: Cols<D>[K]["role"] extends Role ? K : never }[keyof Cols<D>];
type KeyNamed<D extends InboxDefinition, Name> = { [K in keyof Cols<D>]: NameAt<D, K> extends Name ? K : never }[keyof Cols<D>];

/** The database's first broken rule placed on its property: `table`, or the column it names. */
type DatabaseErrorAt<DB, D extends InboxDefinition> =
  CheckAgainstDatabase<DB, D> extends infer E extends SpecError<string>
    ? D["table"] extends keyof DB
      ? [Missing<DB, D>] extends [never]
        ? Holds<ColumnValue<DB, D, "lease">, Date | string> extends false
          ? OnColumns<KeyWithRole<D, "lease">, E>
          : Holds<ColumnValue<DB, D, "attempt">, number> extends false
            ? OnColumns<KeyWithRole<D, "attempt">, E>
            : OnColumns<KeyWithRole<D, "key">, E>
        : OnColumns<KeyNamed<D, Missing<DB, D>>, E>
      : { readonly table: E }
    : unknown;

/** The definition's own rules first, then the database's: one readable error at a time, on the property that breaks it. */
type CheckWithDatabase<DB, D extends InboxDefinition> = CheckDefinition<D> extends SpecError<string> ? DefinitionErrorAt<D> : DatabaseErrorAt<DB, D>;

/**
 * Describes a queue table declaratively.
 *
 * @example
 * const RenderReport = defineInbox({
 *   table: "report_jobs",
 *   columns: {
 *     id: field.id().generated(),
 *     attempt: field.attempt().generated(),
 *     lockedUntil: field.lease("locked_until"),
 *     payload: field.payload<Report>(),
 *   },
 * });
 *
 * Given the application's Kysely database interface, `defineInbox<DB>()({ … })` also checks
 * the table, the column names and the lease, attempt and dedup key columns' types against it.
 */
export function defineInbox<const D extends InboxDefinition>(definition: D & DefinitionErrorAt<D>): SpecOfDefinition<D>;
export function defineInbox<DB>(): <const D extends InboxDefinition & { readonly table: TableName<DB> }>(definition: D & CheckWithDatabase<DB, D>) => SpecOfDefinition<D>;
export function defineInbox(definition?: InboxDefinition): unknown {
  if (definition === undefined) return (d: InboxDefinition) => specFromDefinition(d);
  return specFromDefinition(definition);
}
