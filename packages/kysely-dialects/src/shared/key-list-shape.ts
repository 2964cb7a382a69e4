import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";

/**
 * A statement over a list of keys, one parameter each in list order, whose text depends only on
 * the list's length (a batch claim's lock and unlock statements): compiled once per length, then
 * reused with the parameters of each call. A batch claim sends one per batch and per settled group,
 * and building a select of up to 512 function calls each time costs more than the rest of its statement.
 */
export class KeyListShape {
  readonly #byLength = new Map<number, CompiledQuery<RawRow>>();
  readonly #build: (keys: readonly string[]) => CompiledQuery<RawRow>;

  constructor(build: (keys: readonly string[]) => CompiledQuery<RawRow>) {
    this.#build = build;
  }

  /** The statement for `keys`, whose parameters are `parameters` (the keys as the engine names them, in the same order). */
  of(keys: readonly string[], parameters: readonly unknown[]): CompiledQuery<RawRow> {
    let shape = this.#byLength.get(keys.length);
    if (shape === undefined) {
      shape = this.#build(keys);
      if (shape.parameters.length !== keys.length) throw new Error(`key list statement: ${shape.parameters.length} parameters for ${keys.length} keys`);
      this.#byLength.set(keys.length, shape);
    }
    return { sql: shape.sql, parameters, query: shape.query, queryId: shape.queryId } as CompiledQuery<RawRow>;
  }
}
