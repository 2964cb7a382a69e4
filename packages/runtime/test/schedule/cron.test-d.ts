/**
 * Compile-time rules of `app.cron(…)`: the route must be one of the app's brokers' routes, on a
 * table with a dedup key column; the payload (or the payload function's result) is the route's
 * payload type; `catchUp` needs a processedAt column.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { describe, expectTypeOf, test } from "vitest";
import { App, SqlBroker, type CronTick } from "../../src/index.js";

interface Digest {
  readonly day: string;
}
/** A key column: cron compiles; no processedAt: catchUp does not. */
const Keyed = InboxSpec.table("digest_jobs", column("id").generated()).lease(column("locked_until")).key(column("job_key")).payload(column("payload"), payloadOf<Digest>());
/** A key column and a processedAt column: catchUp compiles. */
const Kept = InboxSpec.table("kept_jobs", column("id").generated())
  .lease(column("locked_until"))
  .key(column("job_key"))
  .processedAt(column("processed_at"))
  .payload(column("payload"), payloadOf<Digest>());
/** No key column. */
const Unkeyed = InboxSpec.table("plain_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Digest>());

const broker = SqlBroker.fromUrl("postgres://u@h/db").route(Keyed, "digest").route(Kept, "kept").route(Unkeyed, "plain").route(Keyed, "digests.*");
const app = new App({ name: "t", version: "1" }).withBroker(broker, (b) => b);

describe("app.cron", () => {
  test("compiles with the route's payload, or a function of the tick that returns it", () => {
    expectTypeOf(app.cron("digest", "0 6 * * *", { day: "today" })).toEqualTypeOf<typeof app>();
    app.cron("digest", "0 6 * * *", (tick) => {
      expectTypeOf(tick).toEqualTypeOf<CronTick>();
      return { day: tick.at.toISOString().slice(0, 10) };
    });
    app.cron("digests.daily", "*/5 * * * * *", { day: "x" }, { timeZone: "Europe/Berlin" });
    app.cron("kept", "0 6 * * *", { day: "x" }, { timeZone: "America/New_York", catchUp: 3 });
  });

  test("a payload of another type does not compile", () => {
    // @ts-expect-error the route's payload is a Digest
    app.cron("digest", "0 6 * * *", { title: "x" });
    // @ts-expect-error the function must return a Digest
    app.cron("digest", "0 6 * * *", () => ({ day: 1 }));
  });

  test("a route on a table without a dedup key column does not compile", () => {
    // @ts-expect-error app.cron(…) needs a dedup key column on the route's table
    app.cron("plain", "0 6 * * *", { day: "x" });
  });

  test("a name no broker of the app routes does not compile; a name known only at run time does", () => {
    // @ts-expect-error no broker of this app routes this name
    app.cron("nope", "0 6 * * *", { day: "x" });
    // @ts-expect-error cron comes after the withBroker that routes the name
    new App({ name: "t", version: "1" }).cron("digest", "0 6 * * *", { day: "x" });
    const name: string = "digest";
    app.cron(name, "0 6 * * *", { any: "thing" });
  });

  test("catchUp needs a processedAt column", () => {
    // @ts-expect-error catchUp needs a processedAt column
    app.cron("digest", "0 6 * * *", { day: "x" }, { catchUp: 2 });
  });

  test("an app with routes is still an App", () => {
    expectTypeOf(app.cron("digest", "0 6 * * *", { day: "x" })).toMatchTypeOf<App>();
  });
});
