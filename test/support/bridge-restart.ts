/**
 * The broker-restart scenario of the bridge packages' tests (packages/redis, amqp, mqtt). Apart from
 * bridge-tables.ts, which the relay worker processes import too: this one needs vitest's `expect`.
 */
import type { Kysely } from "kysely";
import { expect } from "vitest";
import { until } from "../../packages/runtime/test/support/claim-forms.js";
import { type Order, rowsIn } from "./bridge-tables.js";

// biome-ignore lint/suspicious/noExplicitAny: the tables are made at run time
type AnyDb = Kysely<any>;

/**
 * The broker restart each bridge package tests, with a relay and an inbox bridge running: 20 orders relayed and
 * stored; the broker stopped and 20 more published, which stay in the outbox while at least three sends fail; the
 * broker back, and all 40 relayed and stored.
 */
export async function relayThroughRestart(
  db: AnyDb,
  broker: { publishMany(route: "orders", payloads: readonly Order[]): Promise<unknown> },
  tables: { readonly outbox: string; readonly inbox: string },
  restart: { readonly stop: () => Promise<unknown>; readonly start: () => Promise<unknown>; readonly failedSends: () => number },
): Promise<void> {
  await broker.publishMany(
    "orders",
    Array.from({ length: 20 }, (_, n) => ({ n, customer: 0 })),
  );
  await until(async () => (await rowsIn(db, tables.inbox)) === 20, 20_000, "the first rows relayed and stored");

  await restart.stop();
  await broker.publishMany(
    "orders",
    Array.from({ length: 20 }, (_, n) => ({ n: 20 + n, customer: 0 })),
  );
  await until(() => restart.failedSends() >= 3, 20_000, "three failed sends");
  expect(await rowsIn(db, tables.outbox)).toBe(20);

  await restart.start();
  await until(async () => (await rowsIn(db, tables.outbox)) === 0, 30_000, "the rows relayed once the broker is back");
  await until(async () => (await rowsIn(db, tables.inbox)) === 40, 30_000, "the bridge receiving again, every row stored");
}
