/**
 * A payload given a Standard Schema (zod, valibot, arktype all speak it): the handler receives the
 * validated value with the schema's type; a payload that fails it is never given to the handler,
 * never deleted, and logged with subscription, table and id — on every engine, for a row handler and a batch
 * handler (whose rows decode synchronously without a schema; a row that is no JSON is kept the same way).
 */
import { InboxSpec, column, payloadOf, type StandardSchemaLike } from "@sqlinbox/core/internal";
import { describe, expect, test } from "vitest";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { TestApp } from "../../src/testing/index.js";
import { engines, insertRaw, readRows, unique } from "../support/engines.js";

export interface Order {
  readonly sku: string;
  readonly quantity: number;
}

/** A hand-written Standard Schema (its typing is proven in payload-schema.test-d.ts): sku a non-empty string, quantity a positive integer; trims the sku. */
export const OrderSchema: StandardSchemaLike<Order> = {
  "~standard": {
    version: 1,
    vendor: "sqlinbox-test",
    validate(value) {
      const v = value as Partial<Record<keyof Order, unknown>> | null;
      const issues: { message: string }[] = [];
      if (typeof v?.sku !== "string" || v.sku.trim() === "") issues.push({ message: "sku must be a non-empty string" });
      if (typeof v?.quantity !== "number" || !Number.isInteger(v.quantity) || v.quantity < 1) issues.push({ message: "quantity must be a positive integer" });
      return issues.length > 0 ? { issues } : { value: { sku: (v!.sku as string).trim(), quantity: v!.quantity as number } };
    },
  },
};

describe.each(engines)("payload schema on $name", (engine) => {
  test("valid payloads arrive validated and typed; an invalid one is kept, logged, never handled", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`rt_schema_${engine.name}`);
    await engine.createLeaseTable(db, table);
    try {
      const spec = InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).lease(column("locked_until")).payload(column("payload"), OrderSchema);
      const handled: Order[] = [];
      const sub = subscriber(InboxQueue.of(spec, "orders").lease(2000).pollInterval(50), async (order) => {
        handled.push(order);
      });
      const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } });
      const app = new App({ name: "schema", version: "0", logger: silentLogger }).withBroker(broker.route(spec, "orders"), (b) => b.include(sub));
      const t = await TestApp.startLive(app);
      try {
        await t.publish("orders", { sku: "  book ", quantity: 2 });
        // Written by another program, past the publish's types: fails the schema.
        await insertRaw(db, table, { payload: Buffer.from(JSON.stringify({ sku: "", quantity: 0 })) });
        await t.waitFor(() => handled.length === 1 && t.logs.find("payload cannot be decoded").length >= 1, 10_000, "one delivery and one refusal");
      } finally {
        await t.stop();
      }
      expect(handled).toEqual([{ sku: "book", quantity: 2 }]);
      const refused = t.logs.find("payload cannot be decoded")[0];
      expect(refused?.level).toBe("error");
      expect(refused?.fields).toMatchObject({ subscription: "orders", table, id: expect.anything() });
      expect(JSON.stringify(refused?.fields)).toMatch(/sku must be a non-empty string; quantity must be a positive integer/);
      const rows = await readRows(engine, db, table);
      expect(rows.map((r) => JSON.parse(r.payload))).toEqual([{ sku: "", quantity: 0 }]); // kept for a person to fix
    } finally {
      await engine.dropTable(db, table);
      await db.destroy();
    }
  });
  // Written by another program before the app starts, so that one claim takes them all: the valid rows around
  // the ones that cannot be decoded (no JSON, and with the schema one that fails it).
  const batchCases = [
    {
      with: "its schema",
      type: OrderSchema,
      written: [JSON.stringify({ sku: " pen", quantity: 1 }), JSON.stringify({ sku: "", quantity: 0 }), "{not json", JSON.stringify({ sku: "ink ", quantity: 3 })],
      kept: [JSON.stringify({ sku: "", quantity: 0 }), "{not json"],
    },
    {
      with: "no schema (each row decodes synchronously)",
      type: payloadOf<Order>(),
      written: [JSON.stringify({ sku: "pen", quantity: 1 }), "{not json", JSON.stringify({ sku: "ink", quantity: 3 })],
      kept: ["{not json"],
    },
  ];
  test.each(batchCases)(
    "a batch handler with $with: the valid payloads arrive decoded in one call; the others are kept, logged, never handled",
    async ({ type, written, kept }) => {
      const url = engine.url();
      const db = await engine.connect(url);
      const table = unique(`rt_schema_batch_${engine.name}`);
      await engine.createLeaseTable(db, table);
      try {
        const spec = InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).lease(column("locked_until")).payload(column("payload"), type);
        const calls: Order[][] = [];
        const sub = subscriber.batch(InboxQueue.of(spec, "orders").batch(10).lease(2000).pollInterval(50), async (orders) => {
          calls.push([...orders]);
        });
        for (const payload of written) await insertRaw(db, table, { payload: Buffer.from(payload) });
        const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } });
        const app = new App({ name: "schema", version: "0", logger: silentLogger }).withBroker(broker.route(spec, "orders"), (b) => b.include(sub));
        const t = await TestApp.startLive(app);
        try {
          await t.waitFor(() => calls.length === 1 && t.logs.find("payload cannot be decoded").length >= kept.length, 10_000, "one batch call and the refusals");
        } finally {
          await t.stop();
        }
        expect(calls).toEqual([
          [
            { sku: "pen", quantity: 1 },
            { sku: "ink", quantity: 3 },
          ],
        ]);
        const refused = t.logs.find("payload cannot be decoded");
        expect(refused.map((r) => r.level)).toEqual(kept.map(() => "error"));
        for (const r of refused) expect(r.fields).toMatchObject({ subscription: "orders", table, id: expect.anything() });
        if (type === OrderSchema) expect(JSON.stringify(refused.map((r) => r.fields))).toMatch(/sku must be a non-empty string; quantity must be a positive integer/);
        expect((await readRows(engine, db, table)).map((r) => r.payload)).toEqual(kept); // kept for a person to fix
      } finally {
        await engine.dropTable(db, table);
        await db.destroy();
      }
    },
  );
});
