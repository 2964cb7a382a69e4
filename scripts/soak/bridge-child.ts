/**
 * A worker process of the bridge soak (`scripts/soak/bridges.ts`), by `SOAK_ROLE`:
 * - `publisher`: publishes `SOAK_ROWS` orders into the outbox in business transactions of ten (each also inserts
 *   the order's business row), numbered from `SOAK_FROM`, for the customers from `SOAK_CUSTOMER_BASE`;
 * - `relay`: relays the outbox to the broker (a lease relay, batch 64);
 * - `bridge`: an inbox bridge from the broker into the inbox table.
 * Prints JSON lines: `ready`, `published` (with its count so far), `done`.
 */
import { App, InboxQueue, SqlBroker, consoleLogger, defaultOnError, silentLogger } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { connect } from "../bench/db.js";
import type { EngineName } from "../bench/types.js";
import { type SoakBrokerName, soakClients } from "./bridge-brokers.js";
import { CUSTOMERS, inboxOf, outboxOf } from "./soak-tables.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const print = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify({ ...line, pid: process.pid })}\n`);

const role = env("SOAK_ROLE");
const table = env("SOAK_OUTBOX");
const Outbox = outboxOf(table);
const Inbox = inboxOf(`${table}_in`);
// The app's own Kysely: the publisher's business transactions run on it, and the broker's publishes join them.
const db = connect(env("SOAK_ENGINE") as EngineName, 8);
const broker = SqlBroker.fromKysely(db).lease(3000).route(Outbox, "soak").route(Inbox, "soak.in");

if (role === "publisher") {
  const rows = Number(env("SOAK_ROWS"));
  const from = Number(env("SOAK_FROM"));
  for (let at = 0; at < rows; at += 10) {
    await db.transaction().execute(async (trx) => {
      for (let n = from + at; n < from + Math.min(rows, at + 10); n++) {
        // Each publisher has customers of its own (`SOAK_CUSTOMER_BASE` and the next CUSTOMERS / 2): a customer's rows
        // are then committed in id order. Two writers of one key could commit a smaller id after a larger one, and
        // the relay sends a key's rows in the order they became visible.
        const customer = Number(env("SOAK_CUSTOMER_BASE")) + (n % (CUSTOMERS / 2));
        await sql`insert into ${sql.table(`${table}_orders`)} (n, customer) values (${n}, ${customer})`.execute(trx);
        await broker.publish(
          "soak",
          { n, customer },
          { via: trx, columns: { customer }, headers: { traceparent: `00-${(n + 1).toString(16).padStart(32, "0")}-${"1".padStart(16, "0")}-01` } },
        );
      }
    });
    if ((at + 10) % 500 === 0) print({ event: "published", count: at + 10 });
  }
  print({ event: "done" });
  await db.destroy();
} else {
  const clients = await soakClients[env("SOAK_BROKER") as SoakBrokerName](env("SOAK_ADDRESS"));
  if (role === "relay") {
    const relay = clients.relay(
      InboxQueue.of(Outbox, "soak")
        .batch(64)
        .workers(4)
        .pollInterval(50)
        .onError(defaultOnError({ baseMs: 200, factor: 2, capMs: 1000 })),
    );
    await new App({ name: "soak-relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
    print({ event: "ready" });
  } else if (role === "bridge") {
    // Its warnings (an insert that failed and is tried again) and errors on stderr: the soak's log shows them.
    const inbox = clients.inbox(broker, "soak.in", consoleLogger({ level: "warn" }));
    await inbox.start();
    print({ event: "ready" });
    setInterval(() => print({ event: "counts", ...inbox.counts }), 1000);
  } else throw new Error(`SOAK_ROLE is publisher, relay or bridge, not ${role}`);
}
