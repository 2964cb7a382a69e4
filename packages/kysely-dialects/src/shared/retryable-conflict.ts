/**
 * A statement or transaction the server rolled back because it conflicted with another one, and
 * that can simply run again: InnoDB's deadlock (error 1213, also what a Galera node reports for a
 * certification failure at commit), Postgres' deadlock (SQLSTATE 40P01), and a serialization failure
 * (SQLSTATE 40001: Postgres SERIALIZABLE, CockroachDB and YugabyteDB's retry class). sqlinbox's claims
 * and settlements are fenced (a claim re-checks the row, a settlement names the claim it settles), so
 * running one again after such a rollback is safe. `pg` puts the SQLSTATE in `code`; `mysql2` puts
 * the error number in `errno` and the SQLSTATE in `sqlState`.
 */
export function isRetryableConflict(error: unknown): boolean {
  if (error === null || typeof error !== "object") return false;
  const e = error as { errno?: unknown; code?: unknown; sqlState?: unknown };
  return e.errno === 1213 || e.code === "ER_LOCK_DEADLOCK" || e.code === "40001" || e.code === "40P01" || e.sqlState === "40001";
}
