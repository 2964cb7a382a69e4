import type { Engine } from "@sqlinbox/kysely-dialects";

/** The engine a URL literal names (`Engine` when the type system cannot tell, e.g. a `string`). */
export type EngineOfUrl<U extends string> = string extends U
  ? Engine
  : U extends `postgres://${string}` | `postgresql://${string}`
    ? "postgres"
    : U extends `mysql://${string}` | `mariadb://${string}`
      ? "mysql"
      : U extends `sqlite:${string}`
        ? "sqlite"
        : Engine;
