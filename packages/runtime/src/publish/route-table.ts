import type { AnyInboxSpec, InboxDescription } from "@sqlinbox/core/internal";
import { checkSchema } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery } from "kysely";
import type { AnyKysely } from "../drivers/database.js";
import { routeAlreadyDeclared, schemaUnsupported } from "../errors.js";
import { payloadStorageOf, type PayloadStorage } from "../declare/payload.js";
import type { BrokerConnection } from "./connection.js";
import { matchRoute } from "./route-match.js";

/** A routed table as the broker runs it, learned at startup. */
export interface TableRuntime {
  /** Fractional second digits of the lease column. */
  readonly precision: number;
  readonly storage: PayloadStorage;
}

/** One broker's routes (names to the tables they go to), and each table's schema check, run once. */
export class RouteTable {
  readonly #connection: BrokerConnection;
  readonly #routes = new Map<string, AnyInboxSpec>();
  readonly #tables = new Map<string, Promise<TableRuntime>>();

  constructor(connection: BrokerConnection) {
    this.#connection = connection;
  }

  /** Every declared route, by name. */
  get all(): ReadonlyMap<string, AnyInboxSpec> {
    return this.#routes;
  }

  /** The tables the routes go to, one description per route. */
  get tables(): InboxDescription[] {
    return [...this.#routes.values()].map((spec) => spec.description);
  }

  /** Declares route `name` on `spec`'s table; the same name on another table is `AlreadyDeclared`. */
  declare(name: string, spec: AnyInboxSpec): void {
    const known = this.#routes.get(name);
    if (known !== undefined && known.description.table !== spec.description.table) throw routeAlreadyDeclared(name, known.description.table, spec.description.table);
    this.#routes.set(name, spec);
  }

  /** The route a name goes to: its exact route, else the longest prefix route (`"reports.*"`). */
  route(name: string): AnyInboxSpec | undefined {
    return matchRoute(this.#routes, name);
  }

  /**
   * The schema check of a routed table (once): every described column exists with a fitting type.
   * A first publish runs it on its `via`, which may hold the only connection (SQLite).
   */
  table(spec: InboxDescription, via?: AnyKysely): Promise<TableRuntime> {
    const place = spec.schema === undefined ? spec.table : `${spec.schema}.${spec.table}`;
    const known = this.#tables.get(place);
    if (known) return known;
    const checking = this.#checkTable(spec, via);
    this.#tables.set(place, checking);
    checking.catch(() => this.#tables.delete(place));
    return checking;
  }

  async #checkTable(spec: InboxDescription, via: AnyKysely | undefined): Promise<TableRuntime> {
    const database = this.#connection.require();
    const capabilities = database.dialect.capabilities;
    if (spec.schema !== undefined && !capabilities.tableSchemas) throw schemaUnsupported(capabilities.engine, spec.schema, spec.table);
    const schema = database.dialect.schema;
    const rows = (await database.execute("schema", schema.describeTable(spec.table, spec.schema), via)).rows;
    const found = database.dialect.readFoundColumns(rows);
    // What a generated id and a dedup key stand on, read only for a table that has them (and exists).
    const names = async (query: CompiledQuery<{ name: string }>): Promise<string[]> => (await database.execute("schema", query, via)).rows.map((r) => String(r.name));
    const keys =
      found.length === 0
        ? undefined
        : {
            filled: spec.id.generated ? await names(schema.filledColumns(spec.table, spec.schema)) : [],
            unique: spec.key === undefined ? [] : await names(schema.uniqueColumns(spec.table, spec.schema)),
          };
    const precision = checkSchema(spec, found, database.dialect.capabilities.engine, keys)?.precision ?? 0;
    const payloadType = spec.payload === undefined ? undefined : found.find((c) => c.name === spec.payload?.name)?.dataType;
    return { precision, storage: payloadStorageOf(payloadType) };
  }
}
