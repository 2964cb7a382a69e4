import type { Engine } from "@sqlinbox/kysely-dialects";

/** `db.system.name` of the semantic conventions; MariaDB is told apart by the version the server reported. */
export function dbSystemOf(engine: Engine, serverLabel: string): string {
  if (engine === "postgres") return "postgresql";
  if (engine === "sqlite") return "sqlite";
  return serverLabel.startsWith("MariaDB") ? "mariadb" : "mysql";
}
