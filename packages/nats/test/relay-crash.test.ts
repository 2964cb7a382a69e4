/**
 * An outbox relay process killed with SIGKILL while messages it published are stored in the stream and
 * their rows not yet acked, on every engine × form: another relay sends those rows again, the stream's
 * duplicate window drops the copies, and each row ends as exactly one message; the table ends empty.
 */
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { App, InboxQueue, SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { fileURLToPath } from "node:url";
import { engines, unique } from "../../runtime/test/support/engines.js";
import { startFixture, until } from "../../runtime/test/support/claim-forms.js";
import { formsOn, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { natsOutbox } from "../src/index.js";
import { connectNats, freshStream, jetstreamManager, streamMessages } from "./support/nats.js";

const LEASE_MS = 2000;
const N = 64;
const worker = fileURLToPath(new URL("./support/fixtures/relay-worker.ts", import.meta.url));
const matrix = engines.flatMap((engine) => formsOn(engine.name).map((form) => ({ engine, form })));

let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  nc = await connectNats();
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
});

describe.each(matrix)("$engine.name × $form", ({ engine, form }) => {
  test("a relay killed between the JetStream acks and the row acks: the rows go again, one message each", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("nats_crash").toLowerCase();
    const stream = await freshStream(jsm, "crash");
    try {
      const spec = outboxSpecOf(table, form);
      await createInboxTable(db, spec);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 12 } })
        .lease(LEASE_MS)
        .route(spec, "orders");
      await broker.publishMany(
        "orders",
        Array.from({ length: N }, (_, n) => ({ n, customer: n % 3 })),
      );
      const child = startFixture(worker, { RELAY_URL: url, RELAY_TABLE: table, RELAY_FORM: form, RELAY_STREAM: stream, RELAY_HOLD_MS: "400", RELAY_LEASE_MS: String(LEASE_MS) });
      // Two batches stored: the second's rows wait on the pause after their acks.
      await child.waitFor((l) => (l as unknown as { event: string; seq?: number }).seq === 16, 30_000, "the second batch stored");
      child.child.kill("SIGKILL");
      await child.exited;

      // The rows of the batch in work: in the stream, and still in the table.
      const stored = new Set((await streamMessages(jsm, stream)).map((m) => m.msgId));
      const { rows } = await sql<{ id: number | string }>`SELECT id FROM ${sql.id(table)} ORDER BY id`.execute(db);
      const inBoth = rows.filter((r) => stored.has(`${table}:${r.id}`));
      expect(inBoth.length).toBeGreaterThan(0);

      const relay = natsOutbox(InboxQueue.of(spec, "orders").batch(8).pollInterval(50), { js: jetstream(nc), subject: `${stream}.orders` });
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      try {
        await until(
          async () => {
            const left = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(db);
            return Number(left.rows[0]?.n) === 0;
          },
          LEASE_MS + 20_000,
          "every row relayed",
        );
      } finally {
        await app.stop();
      }
      const messages = await streamMessages(jsm, stream);
      expect(messages).toHaveLength(N);
      expect(new Set(messages.map((m) => m.msgId)).size).toBe(N);
      expect(messages.map((m) => (m.body as { n: number }).n).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, n) => n));
      console.log(`relay SIGKILL ${engine.name} × ${form}: ${inBoth.length} rows stored but not acked at the kill, sent again and deduplicated`);
    } finally {
      await jsm.streams.delete(stream).catch(() => {});
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
