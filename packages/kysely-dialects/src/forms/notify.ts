import { notOnEngine } from "../shared/no-statement.js";
import type { EngineTraits, NotifyStatements } from "./engine-traits.js";

/** The engine's notifications, or, where the server relays none, statements that each refuse. */
export function notifyStatements(engine: EngineTraits): NotifyStatements {
  if (engine.notify !== "no notifications") return engine.notify;
  const refuse = (statement: string) => (): never =>
    notOnEngine(engine.capabilities.engine, `notify.${statement}`, "the server relays no notifications (capabilities.listenNotify is false)");
  return Object.freeze({ listen: refuse("listen"), unlistenAll: refuse("unlistenAll"), notify: refuse("notify") });
}
