import { isSqlInboxError, SqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";
import type { Engine } from "../types.js";

/**
 * Every statement a caller builds exists: what an engine or a table lacks is a trait the caller
 * reads first (`lease.claimsInOneStatement`, `rowLock.countsInClaim`, `capabilities.rowLock`, the
 * table's own columns). A statement built where its trait says there is none is a caller's
 * mistake, refused here with the trait to read, never answered with a placeholder.
 */
const NO_STATEMENT = /^(?:UnsupportedForm|Declaration): no [\w.]+ statement /;

/** The engine has no such statement: `UnsupportedForm`, naming the trait that says so. */
export function notOnEngine(engine: Engine, statement: string, trait: string): never {
  throw new SqlInboxError("UnsupportedForm", `no ${statement} statement on ${engine}: ${trait}`);
}

/** The table (or these options) has no such statement: `Declaration`, naming what it lacks. */
export function notForTable(statement: string, lacks: string, place: ErrorPlace): never {
  throw new SqlInboxError("Declaration", `no ${statement} statement for this table: ${lacks}`, place);
}

/** True when `error` is the refusal of a statement its trait says does not exist (`notOnEngine`, `notForTable`). */
export function isNoStatement(error: unknown): boolean {
  return isSqlInboxError(error) && NO_STATEMENT.test(error.message);
}
