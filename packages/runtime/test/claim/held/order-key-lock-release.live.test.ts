/**
 * On MySQL/MariaDB the row-lock form holds an order key with a user lock (`GET_LOCK`), which belongs
 * to the session, not the transaction: the runtime gives it back before the delivery's transaction
 * ends, so the connection goes back to the pool holding none. Here the key's lock is held while the
 * handler runs, and free once the delivery settled: ack, a retry (hidden for a minute, so no claim
 * takes the lock again), a throw (the failure policy's delayed retry), a transactional handler's ack; and when the session is killed from the server mid-handler, the
 * server ends the lock with it (the row comes back, and its next claim takes the lock on a new session).
 */
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, silentLogger, subscriber } from "../../../src/index.js";
import { serverEngines, until } from "../../support/claim-forms.js";
import { unique } from "../../support/engines.js";
import { deferred, useEngineConnection, type Deferred } from "../../support/fixtures.js";
import { insertLedgerRows, ledgerIds, orderedSpecOf } from "../../support/order-key-tables.js";

const mariadb = serverEngines.filter((e) => e.engine === "mysql");

type Settle = "ack" | "retry" | "throw" | "transactional ack";

describe.each(mariadb)("an order key's user lock on $name × rowLock", (engine) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  /** The session holding key `account`'s slot 0 on `table` (its connection id), or null when free. */
  async function holder(table: string, account: number): Promise<number | null> {
    const { rows } = await sql<{
      holder: unknown;
    }>`select IS_USED_LOCK(sha2(concat_ws('|', database(), ${`sqlinbox order key ${table}#0`}, ${String(account)}), 256)) as holder`.execute(db);
    const found = rows[0]?.holder;
    return found === null || found === undefined ? null : Number(found);
  }

  /** Runs one row of key 7 until its handler holds it, then `during`; the handler returns what `settle` says once released. */
  async function inWork(settle: Settle, during: (s: { table: string; release: () => void; calls: () => number }) => Promise<void>) {
    const table = unique("ordered_lock").toLowerCase();
    const spec = orderedSpecOf(table, "rowLock");
    await createInboxTable(db, spec);
    await insertLedgerRows(db, table, [{ account: 7 }]);
    let gate: Deferred = deferred();
    const started: Deferred[] = [deferred()];
    let calls = 0;
    // biome-ignore lint/suspicious/noExplicitAny: the queue's methods depend on the settlement under test
    let queue: any = InboxQueue.of(spec, "ledger").workers(2).pollInterval(30);
    if (settle === "transactional ack") queue = queue.transactional();
    if (settle === "throw") queue = queue.onError(() => HandlerOutcome.retryAfter(60_000));
    const sub = subscriber(queue, async () => {
      calls++;
      started[calls - 1]?.resolve();
      started.push(deferred());
      await gate.promise;
      gate = deferred();
      if (settle === "throw") throw new Error("handler failed");
      return settle === "retry" ? HandlerOutcome.retryAfter(60_000) : HandlerOutcome.ack();
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "ledger"), (b) => b.include(sub))
      .start();
    try {
      await started[0]?.promise;
      await during({ table, release: () => gate.resolve(), calls: () => calls });
    } finally {
      gate.resolve();
      await app.stop();
      await engine.dropTable(db, table);
    }
  }

  test.each(["ack", "retry", "throw", "transactional ack"] as const)("held while the handler runs, free once it settled: %s", async (settle) => {
    await inWork(settle, async ({ table, release, calls }) => {
      const held = await holder(table, 7);
      expect(held).not.toBeNull();
      release();
      if (settle === "ack" || settle === "transactional ack") await until(async () => (await ledgerIds(db, table)).length === 0, 10_000, "the row acked");
      await until(async () => (await holder(table, 7)) === null, 5_000, "the key's lock given back");
      expect(calls()).toBe(1);
    });
  });

  test("a session killed from the server mid-handler ends its key lock with it", async () => {
    await inWork("ack", async ({ table, calls }) => {
      const first = await holder(table, 7);
      expect(first).not.toBeNull();
      await sql.raw(`KILL CONNECTION ${Number(first)}`).execute(db);
      // The transaction rolled back: the row comes back and is claimed on another session, whose lock this is.
      await until(() => calls() === 2, 10_000, "the row claimed again after the kill");
      const second = await holder(table, 7);
      expect(second).not.toBeNull();
      expect(second).not.toBe(first);
    });
  });
});
