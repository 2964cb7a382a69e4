import { InboxSpec, column, payloadOf } from "@sqlinbox/core/internal";
import { describe, expectTypeOf, test } from "vitest";
import { SqlBroker, type CancelResult } from "../../src/index.js";

const Jobs = InboxSpec.table("jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<{ n: number }>());
const broker = SqlBroker.fromUrl("sqlite::memory:").route(Jobs, "jobs");

describe("pause, resume and cancel, as types", () => {
  test("cancel resolves to what happened: removed, signalled or not found", () => {
    expectTypeOf(broker.cancel("jobs", 7)).resolves.toEqualTypeOf<CancelResult>();
    expectTypeOf<CancelResult>().toEqualTypeOf<"removed" | "signalled" | "not found">();
    expectTypeOf(broker.resume("jobs")).resolves.toEqualTypeOf<boolean>();
    expectTypeOf(broker.pause("jobs")).resolves.toEqualTypeOf<void>();
  });

  test("a route is named by a string: a known route, or one known only at run time (a prefix route's name)", () => {
    expectTypeOf(broker.pause).parameter(0).toEqualTypeOf<"jobs" | (string & Record<never, never>)>();
    const name: string = "jobs.daily";
    void broker.pause(name);
    // @ts-expect-error a route is named by a string
    void broker.pause(42);
    // @ts-expect-error cancel names the row by its id after the route
    void broker.cancel("jobs");
  });
});
