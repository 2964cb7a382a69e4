import type { AnyKysely } from "../drivers/database.js";
import { onTransactionEnd } from "./commit-hook.js";

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
/** How often a transaction whose COMMIT is heard on its connection is looked at besides (a driver that commits some other way). */
const HOOKED_LOOK_MS = 50;

/**
 * Calls `wake` once the transaction `via` commits, never when it rolls back. Kysely has no commit
 * hook: the COMMIT (or ROLLBACK) is heard on the transaction's connection as it completes
 * (`onTransactionEnd`), and the transaction's state is read then. Besides, the transaction is
 * looked at in this process (no statement): every 50 ms where the connection is heard; where it
 * could not be (a statement of the caller's was running on it), every millisecond for its first
 * 50 ms, then less often the longer it stays open (every elapsed/50, at most every 50 ms). For
 * at most ten minutes; the timers never keep the process alive. One watch per transaction object:
 * its later publishes add their wake to it, one per `key` (a table).
 */
export class CommitWatch {
  readonly #watched = new WeakMap<object, Map<string, () => void>>();

  /** Calls `wake` after `via` commits when it is an open transaction; returns the state it found (the caller wakes at once on `none` or `committed`). */
  afterCommit(via: AnyKysely | undefined, key: string, wake: () => void): TransactionState {
    const known = via === undefined ? undefined : this.#watched.get(via);
    // Heard before the first look, whose probe would hold the connection for a turn.
    let heard: (() => void) | undefined;
    let hook: (() => void) | undefined;
    if (via?.isTransaction === true && known === undefined) hook = onTransactionEnd(via, () => setImmediate(() => heard?.()));
    const first = transactionState(via);
    if (first.state !== "open" || via === undefined) {
      hook?.();
      return first.state;
    }
    if (known !== undefined) {
      known.set(key, wake);
      return "open";
    }
    const wakes = new Map([[key, wake]]);
    this.#watched.set(via, wakes);
    let done = false;
    const end = (state: TransactionState): void => {
      if (done) return;
      done = true;
      hook?.();
      this.#watched.delete(via);
      if (state === "committed") for (const w of wakes.values()) w();
    };
    heard = () => {
      const now = transactionState(via).state;
      if (now !== "open") end(now);
    };
    const started = Date.now();
    const look = async (probe: Promise<unknown> | undefined): Promise<void> => {
      await probe;
      if (done) return;
      const now = transactionState(via);
      const elapsed = Date.now() - started;
      if (now.state === "open" && elapsed < WATCH_LIMIT_MS) {
        const every = hook !== undefined ? HOOKED_LOOK_MS : Math.min(50, Math.max(1, Math.ceil(elapsed / 50)));
        setTimeout(() => void look(now.probe), every).unref();
        return;
      }
      end(now.state === "committed" ? "committed" : "ended");
    };
    setTimeout(() => void look(first.probe), hook !== undefined ? HOOKED_LOOK_MS : 1).unref();
    return "open";
  }
}
