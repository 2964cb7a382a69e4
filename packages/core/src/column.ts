import { validateIdentifier } from "./identifier.js";

/**
 * A column of the by-hand form: `column("id").generated()`.
 * Immutable; the name is validated as an identifier when the column is made.
 */
export interface Column<Name extends string = string, Generated extends boolean = boolean> {
  readonly name: Name;
  readonly isGenerated: Generated;
  /** The database fills this column (an identity, a default): a publish never writes it. */
  generated(): Column<Name, true>;
}

/** Describes a column by its name in the table. */
export function column<const Name extends string>(name: Name): Column<Name, false> {
  validateIdentifier(name, "column");
  return makeColumn(name, false);
}

function makeColumn<Name extends string, G extends boolean>(name: Name, isGenerated: G): Column<Name, G> {
  return Object.freeze({
    name,
    isGenerated,
    generated: () => makeColumn(name, true),
  });
}
