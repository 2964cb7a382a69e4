/**
 * Compile-time rules of a publish's options, typed by the route's table: `priority` only with a
 * priority column, `runAt`/`delay` only where a time can be stored (retryAfter or lease), data
 * `columns` by key with their types, `key`/`keys` only with a dedup key column; a publish on a
 * name the broker's type does not route does not compile; results are `{ id, created }`.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { describe, expectTypeOf, test } from "vitest";
import { SqlBroker, type Published } from "../../src/index.js";

interface Job {
  readonly n: number;
}
/** Every option has a column: priority, retryAfter, a key, a typed data column. */
const Full = InboxSpec.table("full_jobs", column("id").generated())
  .priority(column("priority"))
  .retryAfter(column("retry_after"))
  .key(column("job_key"))
  .data(column("customer_id").holds<number>())
  .payload(column("payload"), payloadOf<Job>());
/** A lease table: a run-at goes into the lease column. */
const Leased = InboxSpec.table("leased_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
/** A row-lock table with nothing but a payload: no priority, no time to store, no key, no data column. */
const Bare = InboxSpec.table("bare_jobs", column("id").generated()).payload(column("payload"), payloadOf<Job>());
const broker = SqlBroker.fromUrl("postgres://u@h/db").route(Full, "full").route(Leased, "leased").route(Bare, "bare");

describe("publish options", () => {
  test("compile where the table has the column", async () => {
    expectTypeOf(broker.publish("full", { n: 1 }, { priority: 1, runAt: new Date(), key: "k", columns: { customer_id: 7 } })).toEqualTypeOf<Promise<Published>>();
    await broker.publish("full", { n: 1 }, { delay: 1000 });
    await broker.publish("leased", { n: 1 }, { runAt: new Date() });
    await broker.publish("leased", { n: 1 }, { delay: 5000 });
    expectTypeOf(broker.publishMany("full", [{ n: 1 }, { n: 2 }], { keys: ["a", undefined], columns: (job) => ({ customer_id: job.n }) })).toEqualTypeOf<Promise<Published[]>>();
  });

  test("the id a publish resolves to is a string, whatever the id column", async () => {
    expectTypeOf((await broker.publish("full", { n: 1 })).id).toEqualTypeOf<string>();
    expectTypeOf((await broker.publishMany("bare", [{ n: 1 }]))[0]!.id).toEqualTypeOf<string>();
  });

  test("runAt or delay without anywhere to store the time does not compile", async () => {
    // @ts-expect-error publish(…, { runAt, delay }) needs somewhere to store the time
    await broker.publish("bare", { n: 1 }, { runAt: new Date() });
    // @ts-expect-error delay needs a retryAfter or lease column too
    await broker.publish("bare", { n: 1 }, { delay: 10 });
  });

  test("priority without a priority column does not compile", async () => {
    // @ts-expect-error publish(…, { priority }) needs a priority column
    await broker.publish("leased", { n: 1 }, { priority: 1 });
  });

  test("a misspelled data column, or a wrong type, does not compile", async () => {
    // @ts-expect-error customer_idd is not a data column
    await broker.publish("full", { n: 1 }, { columns: { customer_idd: 7 } });
    // @ts-expect-error customer_id holds a number
    await broker.publish("full", { n: 1 }, { columns: { customer_id: "7" } });
    // @ts-expect-error the bare table has no data column
    await broker.publish("bare", { n: 1 }, { columns: { customer_id: 7 } });
    // @ts-expect-error a per-payload function gives data columns too, typed the same
    await broker.publishMany("full", [{ n: 1 }], { columns: () => ({ customer_id: "7" }) });
  });

  test("a key without a dedup key column does not compile", async () => {
    // @ts-expect-error a publish with a key needs a dedup key column
    await broker.publish("bare", { n: 1 }, { key: "k" });
    // @ts-expect-error publishMany takes keys, one per payload
    await broker.publishMany("full", [{ n: 1 }], { key: "k" });
  });

  test("a publish on a name the broker's type does not route does not compile", async () => {
    // @ts-expect-error no route "ful" on this broker's type
    await broker.publish("ful", { n: 1 });
    // @ts-expect-error a broker without .route() knows no route
    await SqlBroker.fromUrl("postgres://u@h/db").publish("full", { n: 1 });
    // @ts-expect-error publishMany as well
    await broker.publishMany("nope", [{ n: 1 }]);
  });
});

describe("replace", () => {
  test("compiles on a lease table with a key and a retryAfter column, and nowhere else", async () => {
    const Debounced = InboxSpec.table("debounced_jobs", column("id").generated())
      .lease(column("locked_until"))
      .retryAfter(column("retry_after"))
      .key(column("job_key"))
      .payload(column("payload"), payloadOf<Job>());
    const b = SqlBroker.fromUrl("postgres://u@h/db").route(Debounced, "d").route(Full, "full");
    await b.publish("d", { n: 1 }, { key: "k", delay: 1000, replace: true });
    // @ts-expect-error replace needs a lease column to tell a row in work
    await b.publish("full", { n: 1 }, { key: "k", replace: true });
  });

  test("replace: true without a key does not compile (it would insert each time); a key that may be undefined compiles without replace", async () => {
    const Debounced = InboxSpec.table("debounced_jobs", column("id").generated())
      .lease(column("locked_until"))
      .retryAfter(column("retry_after"))
      .key(column("job_key"))
      .payload(column("payload"), payloadOf<Job>());
    const b = SqlBroker.fromUrl("postgres://u@h/db").route(Debounced, "d");
    // @ts-expect-error Property 'key' is missing … but required in type 'KeyForReplace'
    await b.publish("d", { n: 1 }, { replace: true });
    // @ts-expect-error with a delay as well
    await b.publish("d", { n: 1 }, { delay: 1000, replace: true });
    // @ts-expect-error publishMany: replace comes with the rows' keys
    await b.publishMany("d", [{ n: 1 }], { replace: true });
    await b.publishMany("d", [{ n: 1 }], { keys: ["a"], replace: true });
    await b.publish("d", { n: 1 }, { replace: false });
    const maybe = Math.random() > 0.5 ? "k" : undefined;
    await b.publish("d", { n: 1 }, { key: maybe, delay: 10 });
    // @ts-expect-error a key that may be undefined may not debounce
    await b.publish("d", { n: 1 }, { key: maybe, replace: true });
    if (maybe !== undefined) await b.publish("d", { n: 1 }, { key: maybe, replace: true });
  });
});
