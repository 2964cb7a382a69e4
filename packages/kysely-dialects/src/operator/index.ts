/**
 * `@sqlinbox/kysely-dialects/operator` — the statements the operator tools (`sqlinbox` and its
 * dashboard) run: status counts, probes of what is in work, peeks, dead-letter retries and purges.
 * Pure, like every statement of this package: descriptions in, `CompiledQuery` out.
 *
 * @example
 * const ops = operatorFor("postgres");
 * const { rows } = await db.executeQuery(ops.countByState({ spec, createdAt: "created_at" }, new Date()));
 * // rows: [{ grp: null, total: "12", done: "0", leased: "3", delayed: "1", claimable: "8", oldest: …, max_attempt: 4 }]
 */
import type { EngineTraits } from "../forms/engine-traits.js";
import { traitsOf } from "../forms/dialect.js";
import { dialectFor } from "../index.js";
import type { Engine } from "../types.js";
import { cappedCountDeadLettersQuery, countDeadLettersQuery, lockDeadLetterIdsQuery, peekDeadLettersQuery, purgeDeadLettersQuery, retryDeadLettersQueries } from "./dead-letter.js";
import { cappedDoneQuery, rowSpanQuery, sampledExpiringLeasesQuery, sampledStateQuery } from "./capped-status.js";
import { advisoryCandidatesQuery, lockableProbeQuery } from "./probe.js";
import { countRowsQuery, peekQuery, purgeQuery } from "./rows-by-state.js";
import { attemptHistogramQuery, countByStateQuery, expiringLeasesQuery } from "./status.js";
import { countProcessedBetweenQuery } from "./throughput.js";
import type { OperatorStatements } from "./types.js";
import { notForTable, notOnEngine } from "../shared/no-statement.js";

export type { OperatorStatements, OperatorTable, DeadLetterPlace, RowState, PeekOptions } from "./types.js";
export { copiedColumns } from "./dead-letter.js";
export { waitingOf } from "./status.js";
export { hasHeads } from "./row-state.js";

/** The operator statements over one engine's traits: the shared text, and the engine's `operator` differences. */
function statements(engine: EngineTraits): OperatorStatements {
  const ctx = engine.statements;
  const { operator } = engine;
  const engineName = ctx.capabilities.engine;
  const held = operator.heldAdvisoryKeys;
  // Where processedAt sits in the claim index (no partial index), a large table's reads order by it too.
  const { partialIndexes } = engine.tableTypes;
  const built: OperatorStatements = {
    countByState: (table, now) => countByStateQuery(ctx, table, now),
    attemptHistogram: (spec) => attemptHistogramQuery(ctx, spec),
    expiringLeases: (spec, now, until, limit) => expiringLeasesQuery(ctx, spec, now, until, limit),
    lockableProbe: (spec, now, limit) =>
      ctx.capabilities.rowLock
        ? lockableProbeQuery(ctx, spec, now, limit, partialIndexes)
        : notOnEngine(engineName, "operator.lockableProbe", "it has no row locks (capabilities.rowLock is false)"),
    advisoryCandidates: (spec, now, limit, order) => advisoryCandidatesQuery(ctx, spec, now, limit, order ?? "id", partialIndexes),
    heldAdvisoryKeys: (keys, database) =>
      held === "process registry"
        ? notOnEngine(engineName, "operator.heldAdvisoryKeys", 'advisory keys live in the application\'s process (capabilities.advisoryLocks is "process")')
        : held(keys, database),
    peek: (table, options) => peekQuery(ctx, table, options),
    countRows: (table, options) => countRowsQuery(ctx, table, options),
    peekDeadLetters: (source, place, limit, ids) => peekDeadLettersQuery(ctx, source, place, limit, ids),
    countDeadLetters: (source, place) => countDeadLettersQuery(ctx, source, place),
    lockDeadLetterIds: (source, place, limit, ids) => lockDeadLetterIdsQuery(ctx, source, place, limit, ids),
    retryDeadLetters: (source, place, ids) => retryDeadLettersQueries(ctx, operator, source, place, ids),
    purge: (table, options) => purgeQuery(ctx, table, options),
    purgeDeadLetters: (source, place, ids) => purgeDeadLettersQuery(ctx, source, place, ids),
    idHighWater: (spec) =>
      spec.id.generated ? operator.idHighWater(spec) : notForTable("operator.idHighWater", "a generated id column (the application writes its ids)", { table: spec.table }),
    countProcessedBetween: (spec, from, to) => countProcessedBetweenQuery(ctx, spec, from, to),
    rowSpan: (spec) => rowSpanQuery(ctx, spec),
    sampledState: (table, now, cap) => sampledStateQuery(ctx, table, now, cap, partialIndexes),
    cappedDone: (spec, cap) => cappedDoneQuery(ctx, spec, cap),
    sampledExpiringLeases: (table, now, until, limit, cap) => sampledExpiringLeasesQuery(ctx, table, now, until, limit, cap, partialIndexes),
    cappedCountDeadLetters: (source, place, cap) => cappedCountDeadLettersQuery(ctx, source, place, cap),
  };
  return Object.freeze(built);
}

/** Built once per engine, on first use. */
const built = new Map<EngineTraits, OperatorStatements>();

/** The operator statements of one engine (`dialectFor` finds the engine; its traits hold what differs). */
export function operatorFor(engine: Engine): OperatorStatements {
  const traits = traitsOf(dialectFor(engine));
  const found = built.get(traits) ?? statements(traits);
  built.set(traits, found);
  return found;
}
