import type { AnyKysely } from "../database.js";

/** One pool connection kept for a delivery until `release`. */
export interface HeldConnection {
  /** A Kysely bound to this one connection: every statement through it runs on the same session. */
  readonly db: AnyKysely;
  release(): void;
}

/**
 * Takes a connection out of the pool and keeps it until `release()` — what a session lock
 * (an advisory lock) needs, since the lock belongs to the session that took it.
 * Kysely's `connection()` holds one connection for the length of a callback; the callback
 * here waits for the release.
 */
export function holdConnection(db: AnyKysely): Promise<HeldConnection> {
  return new Promise((resolve, reject) => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = false;
    db.connection()
      .execute(async (connection) => {
        held = true;
        resolve({ db: connection as AnyKysely, release });
        await released;
      })
      .catch((error: unknown) => {
        if (!held) reject(error);
      });
  });
}
