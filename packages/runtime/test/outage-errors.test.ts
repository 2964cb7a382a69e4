/**
 * Connect and encode failures are `SqlInboxError`s naming where they happened: an unreachable
 * database gives `Connect` with the redacted URL, the route and the table; a payload JSON cannot
 * hold (a BigInt, a cycle) gives `Encode` with the route and the table, and writes no row.
 */
import { describe, expect, test } from "vitest";
import { isSqlInboxError } from "../src/index.js";
import { engines } from "./support/engines.js";
import { jobsApp } from "./support/fixtures.js";
import { createJobsTable, readJobs } from "./support/claim-forms.js";
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { App, InboxQueue, SqlBroker, subscriber, HandlerOutcome, silentLogger } from "../src/index.js";

describe("Connect", () => {
  test.each([
    ["postgres", "postgres://app:secret@127.0.0.1:1/jobs"],
    ["mariadb", "mysql://app:secret@127.0.0.1:1/jobs"],
  ])("%s: an unreachable database fails the start with a Connect error naming the URL (redacted), the route and the table", async (_name, url) => {
    const { app } = jobsApp(url, "report_jobs", () => HandlerOutcome.ack());
    const failure = await app.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isSqlInboxError(failure, "Connect")).toBe(true);
    const message = (failure as Error).message;
    expect(message).toContain('route "jobs"');
    expect(message).toContain('table "report_jobs"');
    expect(message).toContain("ECONNREFUSED");
    expect(message).toContain("127.0.0.1:1/jobs");
    expect(message).not.toContain("secret");
  });
});

describe.each(engines)("Encode on $name", (engine) => {
  test("a BigInt or a cyclic payload is an Encode error naming the route and the table; no row is written", async () => {
    const url = engine.url();
    const setup = await engine.connect(url);
    const table = `encode_${engine.name}_${Date.now()}`;
    await createJobsTable(engine, setup, table);
    try {
      const spec = InboxSpec.table(table, column("id").generated())
        .attempt(column("attempt").generated())
        .data(column("k"))
        .lease(column("locked_until"))
        .payload(column("payload"), payloadOf<unknown>());
      const broker = SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, "jobs");
      const sub = subscriber(InboxQueue.of(spec, "jobs"), () => HandlerOutcome.ack());
      const running = await new App({ name: "encode", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      const cyclic: { self?: unknown } = {};
      cyclic.self = cyclic;
      for (const payload of [{ n: 10n }, cyclic]) {
        const failure = await broker.publish("jobs", payload).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(isSqlInboxError(failure, "Encode")).toBe(true);
        expect((failure as Error).message).toMatch(/^Encode: the payload cannot be written as JSON \(.+\); no row was written \(route "jobs", table "encode_/);
      }
      expect(await readJobs(setup, table)).toEqual([]);
      await running.stop();
    } finally {
      await engine.dropTable(setup, table);
      await setup.destroy();
    }
  });
});
