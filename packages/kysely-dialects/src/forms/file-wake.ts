import { notOnEngine } from "../shared/no-statement.js";
import type { EngineTraits, FileWakeStatements } from "./engine-traits.js";

/** The engine's file-wake statements, or, where processes share no file, statements that each refuse. */
export function fileWakeStatements(engine: EngineTraits): FileWakeStatements {
  if (engine.fileWake !== "no shared file") return engine.fileWake;
  const refuse = (statement: string) => (): never =>
    notOnEngine(engine.capabilities.engine, `fileWake.${statement}`, "processes share no database file (capabilities.fileWakes is false)");
  return Object.freeze({ databaseFile: refuse("databaseFile"), dataVersion: refuse("dataVersion") });
}
