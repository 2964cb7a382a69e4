/**
 * Compile-time rules of `broker.update` and `broker.retryNow`, typed by the route's table: `payload`
 * of the route's payload type, `runAt` only where a time can be stored (a retryAfter or lease
 * column), `priority` only with a priority column, data `columns` by key with their types; a name
 * the broker's type does not route does not compile; the answer is "updated" | "running" | "gone".
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { describe, expectTypeOf, test } from "vitest";
import { SqlBroker, type UpdateResult } from "../../src/index.js";

interface Job {
  readonly n: number;
}
const Full = InboxSpec.table("full_jobs", column("id").generated())
  .priority(column("priority"))
  .retryAfter(column("retry_after"))
  .data(column("customer_id").holds<number>())
  .payload(column("payload"), payloadOf<Job>());
const Leased = InboxSpec.table("leased_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
const Bare = InboxSpec.table("bare_jobs", column("id").generated()).payload(column("payload"), payloadOf<Job>());
const broker = SqlBroker.fromUrl("postgres://u@h/db").route(Full, "full").route(Leased, "leased").route(Bare, "bare");

describe("update and retryNow", () => {
  test("compile where the table has the column, and answer updated, running or gone", async () => {
    expectTypeOf(broker.update("full", "1", { payload: { n: 2 }, runAt: new Date(), priority: 1, columns: { customer_id: 7 } })).toEqualTypeOf<Promise<UpdateResult>>();
    expectTypeOf<UpdateResult>().toEqualTypeOf<"updated" | "running" | "gone">();
    await broker.update("leased", 1, { runAt: new Date() });
    await broker.update("bare", "1", { payload: { n: 3 } });
    expectTypeOf(broker.retryNow("full", "1")).toEqualTypeOf<Promise<UpdateResult>>();
    const published = await broker.publish("full", { n: 1 });
    await broker.update("full", published, { priority: 2 });
  });

  test("a change the table has no column for does not compile, nor a payload of another type", async () => {
    // @ts-expect-error update(…, { runAt }) needs somewhere to store the time: a retryAfter column or a lease column
    await broker.update("bare", "1", { runAt: new Date() });
    // @ts-expect-error update(…, { priority }) needs a priority column
    await broker.update("leased", "1", { priority: 1 });
    // @ts-expect-error update(…, { columns }) sets data columns: this table describes none
    await broker.update("bare", "1", { columns: { customer_id: 1 } });
    // @ts-expect-error a data column of another type
    await broker.update("full", "1", { columns: { customer_id: "seven" } });
    // @ts-expect-error the payload is the route's
    await broker.update("full", "1", { payload: { title: "x" } });
    // @ts-expect-error this broker's type routes no such name
    await broker.update("nowhere", "1", {});
    // @ts-expect-error this broker's type routes no such name
    await broker.retryNow("nowhere", "1");
  });
});
