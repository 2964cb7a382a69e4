import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { pruneQuery, type PruneOptions } from "../statements/retention.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * Retention (`InboxQueue.retain`): handled rows deleted once they are older than a window, in
 * small batches, by every app at once. A dead-letter table is pruned by the same statement over
 * its own processedAt column, which a move into it stamps.
 */
export interface RetentionStatements {
  /**
   * Deletes up to `options.limit` rows whose processedAt is before `options.before`, oldest first;
   * fewer than the limit affected means none is left. Refuses (`Declaration`) a table with no
   * processedAt column.
   */
  prune(spec: InboxDescription, options: PruneOptions): CompiledQuery;
}

/** Retention on every engine; how a batch is bounded is the engine's (`EngineTraits.batchDelete`). */
export function retentionStatements(engine: EngineTraits): RetentionStatements {
  return Object.freeze({ prune: (spec: InboxDescription, options: PruneOptions) => pruneQuery(engine.statements, engine.batchDelete, spec, options) });
}
