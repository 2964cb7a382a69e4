import { validateIdentifier } from "./identifier.js";
import { validatePortableType, type PortableType } from "./portable-type.js";

/**
 * A column of the by-hand form: `column("id").generated()`.
 * Immutable; the name is validated as an identifier when the column is made.
 * `Type` is the portable type given with `.type(…)`, `undefined` while none is.
 */
export interface Column<Name extends string = string, Generated extends boolean = boolean, Value = unknown, Type extends PortableType | undefined = PortableType | undefined> {
  readonly name: Name;
  readonly isGenerated: Generated;
  /** The portable type given with `.type(…)`. */
  readonly sqlType: Type;
  /** @internal phantom: what the column holds, as a row-mode handler reads it. */
  readonly value?: Value;
  /** The database fills this column (an identity, a default): a publish never writes it. */
  generated(): Column<Name, true, Value, Type>;
  /**
   * Types what the column holds for row-mode handlers: `column("customer_id").holds<string>()`.
   * A method, not `column<T>(…)`: TypeScript infers no type argument once one is given, so the name's literal would be lost.
   */
  holds<T>(): Column<Name, Generated, T, Type>;
  /**
   * The column's type in the table `createInboxTable` creates: `column("customer_id").type("bigint")`.
   * For the columns whose values the application chooses (data, an id it fills);
   * every other role's type is fixed by the role. It does not change what `holds` says.
   */
  type<const T extends PortableType>(type: T): Column<Name, Generated, Value, T>;
}

/** Describes a column by its name in the table. */
export function column<const Name extends string>(name: Name): Column<Name, false, unknown, undefined> {
  validateIdentifier(name, "column");
  return makeColumn(name, false, undefined);
}

function makeColumn<Name extends string, G extends boolean, Value, Type extends PortableType | undefined>(name: Name, isGenerated: G, sqlType: Type): Column<Name, G, Value, Type> {
  return Object.freeze({
    name,
    isGenerated,
    sqlType,
    generated: () => makeColumn<Name, true, Value, Type>(name, true, sqlType),
    holds: <T>() => makeColumn<Name, G, T, Type>(name, isGenerated, sqlType),
    type: <const T extends PortableType>(type: T) => makeColumn<Name, G, Value, T>(name, isGenerated, validatePortableType(type, name) as T),
  });
}
