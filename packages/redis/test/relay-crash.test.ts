/**
 * A Redis outbox relay process killed with SIGKILL while entries it added are in the stream and their rows not
 * yet acked, on every engine × form: another relay adds those rows again (Redis keeps both copies), and a
 * redisInbox stores one row per outbox row; the outbox table ends empty.
 */
import { fileURLToPath } from "node:url";
import { App, InboxQueue, SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import type { Redis } from "ioredis";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { engines, unique } from "../../runtime/test/support/engines.js";
import { startFixture, until } from "../../runtime/test/support/claim-forms.js";
import { formsOn, inboxSpecOf, outboxSpecOf, rowsIn } from "../../../test/support/bridge-tables.js";
import { redisInbox, redisOutbox } from "../src/index.js";
import { connectRedis, streamEntries } from "./support/redis.js";

const LEASE_MS = 2000;
const N = 64;
const worker = fileURLToPath(new URL("./support/fixtures/relay-worker.ts", import.meta.url));
const matrix = engines.flatMap((engine) => formsOn(engine.name).map((form) => ({ engine, form })));

let redis: Redis;
beforeAll(async () => {
  redis = await connectRedis();
});
afterAll(() => {
  redis?.disconnect();
});

describe.each(matrix)("$engine.name × $form", ({ engine, form }) => {
  test("a relay killed between the XADD replies and the row acks: the rows go again, the inbox stores each once", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const outboxTable = unique("redis_crash").toLowerCase();
    const inboxTable = unique("redis_crash_in").toLowerCase();
    const stream = unique("crash");
    try {
      const Outbox = outboxSpecOf(outboxTable, form);
      const Inbox = inboxSpecOf(inboxTable);
      await createInboxTable(db, Outbox);
      await createInboxTable(db, Inbox);
      await redis.call("XGROUP", ["CREATE", stream, "billing", "$", "MKSTREAM"]);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 12 } })
        .lease(LEASE_MS)
        .route(Outbox, "orders")
        .route(Inbox, "orders.in");
      await broker.publishMany(
        "orders",
        Array.from({ length: N }, (_, n) => ({ n, customer: n % 3 })),
      );
      const child = startFixture(worker, {
        RELAY_URL: url,
        RELAY_TABLE: outboxTable,
        RELAY_FORM: form,
        RELAY_STREAM: stream,
        RELAY_HOLD_MS: "400",
        RELAY_LEASE_MS: String(LEASE_MS),
      });
      await child.waitFor((l) => (l as unknown as { length?: number }).length === 16, 30_000, "the second batch added");
      child.child.kill("SIGKILL");
      await child.exited;

      const added = new Set((await streamEntries(redis, stream)).map((e) => e.fields["id"]));
      const { rows } = await sql<{ id: number | string }>`SELECT id FROM ${sql.id(outboxTable)}`.execute(db);
      const inBoth = rows.filter((r) => added.has(`${outboxTable}:${r.id}`));
      expect(inBoth.length).toBeGreaterThan(0);

      const inbox = redisInbox(broker, "orders.in", { redis: redis.duplicate(), stream, group: "billing", consumer: "billing-1", blockMs: 100, logger: silentLogger });
      await inbox.start();
      const relay = redisOutbox(InboxQueue.of(Outbox, "orders").batch(8).pollInterval(50), { redis, stream });
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      try {
        await until(async () => (await rowsIn(db, outboxTable)) === 0, LEASE_MS + 20_000, "every row relayed");
        await until(async () => inbox.counts.stored + inbox.counts.duplicates === (await streamEntries(redis, stream)).length, 20_000, "every entry read");
      } finally {
        await app.stop();
        await inbox.stop();
      }
      const entries = await streamEntries(redis, stream);
      expect(entries.length).toBe(N + inBoth.length);
      expect(inbox.counts).toEqual({ stored: N, duplicates: inBoth.length });
      expect(await rowsIn(db, inboxTable)).toBe(N);
      console.log(`redis relay SIGKILL ${engine.name} × ${form}: ${inBoth.length} rows added but not acked at the kill; ${entries.length} entries, ${N} inbox rows`);
    } finally {
      await redis.del(stream).catch(() => {});
      await engine.dropTable(db, outboxTable).catch(() => {});
      await engine.dropTable(db, inboxTable).catch(() => {});
      await db.destroy();
    }
  });
});
