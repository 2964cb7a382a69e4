/**
 * A row-lock table on SQLite, forced past the type rule (a URL the compiler cannot read):
 * refused at startup with `UnsupportedForm`, before anything connects, naming what to do; and what
 * a declared transaction pooler refuses (an advisory table, `listenNotify()`).
 */
import { expect, test } from "vitest";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { jobsSpecOf } from "../support/claim-forms.js";

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

// Nothing listens on this port: both refusals come before anything connects.
const unreachable = "postgres://postgres@127.0.0.1:9/test";

test("an advisory table through a declared transaction pooler is refused at startup, before anything connects", async () => {
  const spec = jobsSpecOf("adv_through_pooler", "advisory");
  const broker = SqlBroker.fromUrl(unreachable, { pooler: "transaction" }).route(spec, "jobs");
  const app = new App({ name: "t", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => undefined)));
  const error = await app.start().catch((e: unknown) => e);
  expect(error).toMatchObject({ code: "UnsupportedForm" });
  expect((error as Error).message).toContain(
    'the advisory form holds its lock on a database session across transactions, and this broker goes through a pooler in transaction mode (pooler: "transaction")',
  );
});

test("listenNotify() through a declared transaction pooler is refused at startup; session mode and the lease form are not refused", async () => {
  const spec = jobsSpecOf("lease_through_pooler", "lease");
  const start = (pooler: "session" | "transaction") =>
    new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(unreachable, { pooler }).listenNotify().route(spec, "jobs"), (b) => b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => undefined)))
      .start()
      .catch((e: unknown) => e);
  expect(await start("transaction")).toMatchObject({ code: "UnsupportedForm", message: expect.stringContaining("listenNotify() needs LISTEN on a session of its own") });
  // Past the pooler checks, the start fails on the unreachable server instead.
  expect(await start("session")).toMatchObject({ code: "Connect" });
});
