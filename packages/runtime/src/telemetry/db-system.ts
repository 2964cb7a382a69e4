import { dialectFor, type Engine } from "@sqlinbox/kysely-dialects";

/** `db.system.name` of the semantic conventions: the engine's, for the server its version check labelled (MariaDB or MySQL). */
export function dbSystemOf(engine: Engine, serverLabel: string): string {
  return dialectFor(engine).dbSystemName(serverLabel);
}
