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
import type { Engine } from "../types.js";
import type { StatementContext } from "../statements/query-db.js";
import { mysqlEngine } from "../mysql/engine.js";
import { postgresEngine } from "../postgres/engine.js";
import { sqliteEngine } from "../sqlite/engine.js";
import { countDeadLettersQuery, lockDeadLetterIdsQuery, peekDeadLettersQuery, purgeDeadLettersQuery, retryDeadLettersQueries } from "./dead-letter.js";
import { mysqlOperator } from "./mysql/operator-engine.js";
import { postgresOperator } from "./postgres/operator-engine.js";
import { advisoryCandidatesQuery, lockableProbeQuery } from "./probe.js";
import { peekQuery, purgeQuery } from "./rows-by-state.js";
import { sqliteOperator } from "./sqlite/operator-engine.js";
import { attemptHistogramQuery, countByStateQuery, expiringLeasesQuery } from "./status.js";
import type { OperatorEngine, OperatorStatements } from "./types.js";

export type { OperatorStatements, OperatorTable, DeadLetterPlace, RowState, PeekOptions } from "./types.js";
export { copiedColumns } from "./dead-letter.js";
export { waitingOf } from "./status.js";

function statements(ctx: StatementContext, engine: OperatorEngine): OperatorStatements {
  const built: OperatorStatements = {
    countByState: (table, now) => countByStateQuery(ctx, table, now),
    attemptHistogram: (spec) => attemptHistogramQuery(ctx, spec),
    expiringLeases: (spec, now, until, limit) => expiringLeasesQuery(ctx, spec, now, until, limit),
    lockableProbe: (spec, now) => (engine.rowLocks ? lockableProbeQuery(ctx, spec, now) : null),
    advisoryCandidates: (spec, now, limit) => advisoryCandidatesQuery(ctx, spec, now, limit),
    heldAdvisoryKeys: (keys, database) => engine.heldAdvisoryKeys(keys, database),
    peek: (table, options) => peekQuery(ctx, table, options),
    peekDeadLetters: (source, place, limit, ids) => peekDeadLettersQuery(ctx, source, place, limit, ids),
    countDeadLetters: (source, place) => countDeadLettersQuery(ctx, source, place),
    lockDeadLetterIds: (source, place, limit, ids) => lockDeadLetterIdsQuery(ctx, engine, source, place, limit, ids),
    retryDeadLetters: (source, place, ids) => retryDeadLettersQueries(ctx, engine, source, place, ids),
    purge: (table, options) => purgeQuery(ctx, table, options),
    purgeDeadLetters: (source, place, ids) => purgeDeadLettersQuery(ctx, source, place, ids),
  };
  return Object.freeze(built);
}

const byEngine: Readonly<Record<Engine, OperatorStatements>> = Object.freeze({
  postgres: statements(postgresEngine.statements, postgresOperator),
  mysql: statements(mysqlEngine.statements, mysqlOperator),
  sqlite: statements(sqliteEngine.statements, sqliteOperator),
});

/** The operator statements of one engine. */
export function operatorFor(engine: Engine): OperatorStatements {
  const found = byEngine[engine];
  if (found === undefined) throw new TypeError(`unknown engine: ${String(engine)}`);
  return found;
}
