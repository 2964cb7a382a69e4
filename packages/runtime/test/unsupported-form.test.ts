/**
 * A row-lock table on SQLite, forced past the type rule (a URL the compiler cannot read):
 * refused at startup with `UnsupportedForm`, before anything connects, naming what to do.
 */
import { expect, test } from "vitest";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../src/index.js";
import { jobsSpecOf } from "./claim-forms.js";

test("a row-lock table on a SQLite broker is refused at startup with UnsupportedForm", async () => {
  const spec = jobsSpecOf("rl_on_sqlite", "rowLock");
  const url: string = "sqlite::memory:";
  const broker = SqlBroker.fromUrl(url).route(spec, "jobs");
  let started = false;
  const app = new App({ name: "t", version: "0", logger: silentLogger })
    .onStartup(() => {
      started = true;
    })
    .withBroker(broker, (b) => b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => undefined)));
  const error = await app.start().catch((e: unknown) => e);
  expect(started).toBe(true);
  expect(error).toMatchObject({ code: "UnsupportedForm" });
  expect((error as Error).message).toContain("a row-lock table on sqlite, which has no row locks");
  expect((error as Error).message).toContain("rl_on_sqlite");
});
