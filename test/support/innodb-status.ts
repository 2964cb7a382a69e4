/**
 * The transactions InnoDB has open, read from `SHOW ENGINE INNODB STATUS` — not from
 * `information_schema.INNODB_TRX`, which tests must not poll: InnoDB fills INNODB_TRX (and its lock
 * tables) from a cache that it refreshes only when the last read of it is more than 0.1 s old, so while
 * anything on the server reads it more often (a test's own 20 ms poll, or two tests polling side by
 * side), it shows the transactions of its last refresh for ever. A session that started waiting after
 * that refresh is never seen waiting (measured on MariaDB 10.11: a 20 ms poll never saw a wait in 3 s; a
 * 150 ms poll saw it at once). The status text is built when it is asked for.
 */
import { sql, type Kysely } from "kysely";

export interface InnodbTransaction {
  /** The session (`CONNECTION_ID()`, the processlist's id) that has the transaction open. */
  readonly session: number;
  /** Waiting for a lock now. */
  readonly lockWait: boolean;
  /** Lock structs it holds or waits for (0: it has locked nothing yet). */
  readonly lockStructs: number;
}

// biome-ignore lint/suspicious/noExplicitAny: any database's Kysely
export async function innodbTransactions(db: Kysely<any>): Promise<InnodbTransaction[]> {
  const { rows } = await sql<{ Status: string }>`SHOW ENGINE INNODB STATUS`.execute(db);
  const status = String(rows[0]?.Status ?? "");
  const list = status.split("LIST OF TRANSACTIONS FOR EACH SESSION:")[1] ?? "";
  const transactions: InnodbTransaction[] = [];
  for (const block of list.split("---TRANSACTION ").slice(1)) {
    // "MySQL thread id 12," on MySQL, "MariaDB thread id 12," on MariaDB.
    const session = /(?:MySQL|MariaDB) thread id (\d+),/.exec(block)?.[1];
    if (session === undefined) continue;
    const structs = /(\d+) lock struct\(s\)/.exec(block)?.[1];
    transactions.push({ session: Number(session), lockWait: /^LOCK WAIT /m.test(block), lockStructs: Number(structs ?? 0) });
  }
  return transactions;
}
