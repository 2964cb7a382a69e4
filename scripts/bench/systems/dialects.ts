import type { EngineDialect } from "@sqlinbox/kysely-dialects";
import type { EngineName } from "../types.js";

/** Looks up an engine's statements in @sqlinbox/kysely-dialects; a reason string while the package does not export them yet. */
export async function loadDialect(engine: EngineName): Promise<EngineDialect | string> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import("@sqlinbox/kysely-dialects")) as Record<string, unknown>;
  } catch (e) {
    return `@sqlinbox/kysely-dialects does not load: ${(e as Error).message.split("\n")[0]}`;
  }
  const name = engine === "mariadb" ? "mysql" : engine;
  if (typeof mod.dialectFor !== "function") return `@sqlinbox/kysely-dialects has no dialectFor yet (exports: ${Object.keys(mod).join(", ") || "none"})`;
  return (mod.dialectFor as (e: string) => EngineDialect)(name);
}
