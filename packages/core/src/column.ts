import { validateIdentifier } from "./identifier.js";

/**
 * A column of the by-hand form: `column("id").generated()`.
 * Immutable; the name is validated as an identifier when the column is made.
 */
export interface Column<Name extends string = string, Generated extends boolean = boolean, Value = unknown> {
  readonly name: Name;
  readonly isGenerated: Generated;
  /** @internal phantom: what the column holds, as a row-mode handler reads it. */
  readonly value?: Value;
  /** The database fills this column (an identity, a default): a publish never writes it. */
  generated(): Column<Name, true, Value>;
  /**
   * Types what the column holds for row-mode handlers: `column("customer_id").holds<string>()`.
   * A method, not `column<T>(…)`: TypeScript infers no type argument once one is given, so the name's literal would be lost.
   */
  holds<T>(): Column<Name, Generated, T>;
}

/** Describes a column by its name in the table. */
export function column<const Name extends string>(name: Name): Column<Name, false, unknown> {
  validateIdentifier(name, "column");
  return makeColumn(name, false);
}

function makeColumn<Name extends string, G extends boolean, Value>(name: Name, isGenerated: G): Column<Name, G, Value> {
  return Object.freeze({
    name,
    isGenerated,
    generated: () => makeColumn<Name, true, Value>(name, true),
    holds: <T>() => makeColumn<Name, G, T>(name, isGenerated),
  });
}
