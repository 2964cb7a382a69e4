import type { AnyKysely } from "../drivers/database.js";

/** What a publish's `via` tells of its transaction: none (autocommit), still open, committed, or ended without a commit. */
export type TransactionState = "none" | "open" | "committed" | "ended";

/**
 * The state of the transaction `via` runs in, read in this process without a statement. A
 * `ControlledTransaction` (`db.startTransaction()`) says it (`isCommitted`, `isRolledBack`); a
 * `Transaction` of `db.transaction().execute(…)` refuses a connection once it ended, naming how
 * (Kysely's "Transaction is already committed" / "… rolled back"), and lends it while open.
 * `probe` is that loan while open: the next look waits for it, so looks never pile up behind a
 * long statement of the caller's.
 */
export function transactionState(via: AnyKysely | undefined): { readonly state: TransactionState; readonly probe?: Promise<unknown> } {
  if (via === undefined || !via.isTransaction) return { state: "none" };
  const controlled = via as unknown as { readonly isCommitted?: unknown; readonly isRolledBack?: unknown };
  if (typeof controlled.isCommitted === "boolean" && typeof controlled.isRolledBack === "boolean") {
    return { state: controlled.isCommitted ? "committed" : controlled.isRolledBack ? "ended" : "open" };
  }
  try {
    const probe = via.getExecutor().provideConnection(async () => undefined);
    return { state: "open", probe: probe.catch(() => undefined) };
  } catch (error) {
    return { state: error instanceof Error && /committed/i.test(error.message) ? "committed" : "ended" };
  }
}

/** How long a transaction is watched for its commit: past it, the subscriptions' next poll sees its rows. */
const WATCH_LIMIT_MS = 10 * 60_000;

/**
 * Calls `wake` once the transaction `via` commits, never when it rolls back. Kysely has no commit
 * hook, so the transaction is looked at in this process (no statement): every millisecond for its
 * first 50 ms, then less often the longer it stays open (every elapsed/50, at most every 50 ms),
 * for at most ten minutes. The timers never keep the process alive. One watch per transaction object: its
 * later publishes add their wake to it, one per `key` (a table).
 */
export class CommitWatch {
  readonly #watched = new WeakMap<object, Map<string, () => void>>();

  /** Calls `wake` after `via` commits when it is an open transaction; returns the state it found (the caller wakes at once on `none` or `committed`). */
  afterCommit(via: AnyKysely | undefined, key: string, wake: () => void): TransactionState {
    const first = transactionState(via);
    if (first.state !== "open" || via === undefined) return first.state;
    const known = this.#watched.get(via);
    if (known !== undefined) {
      known.set(key, wake);
      return "open";
    }
    const wakes = new Map([[key, wake]]);
    this.#watched.set(via, wakes);
    const started = Date.now();
    const look = async (probe: Promise<unknown> | undefined): Promise<void> => {
      await probe;
      const now = transactionState(via);
      const elapsed = Date.now() - started;
      if (now.state === "open" && elapsed < WATCH_LIMIT_MS) {
        const every = Math.min(50, Math.max(1, Math.ceil(elapsed / 50)));
        setTimeout(() => void look(now.probe), every).unref();
        return;
      }
      this.#watched.delete(via);
      if (now.state === "committed") for (const w of wakes.values()) w();
    };
    setTimeout(() => void look(first.probe), 1).unref();
    return "open";
  }
}
