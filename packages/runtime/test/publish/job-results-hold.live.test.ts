/**
 * A result is written only with its hold, on the forms whose hold is a server session (row lock: the
 * claim's transaction; advisory: the key's lock): the session is killed from the server while the
 * handler runs, and that handler's `ctx.ack(result)` lands nowhere. The row runs again, and only the
 * second delivery's result is ever read. PostgreSQL and MariaDB (the lease form's lost lease is in
 * `job-results.test.ts`).
 */
import { column, InboxSpec, payloadOf, resultOf } from "@sqlinbox/core";
import type { ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, createControlTable, createInboxTable, silentLogger, subscriber } from "../../src/index.js";
import { deliverySession, dropScope, killSession, scopedUrl, serverEngines, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";

interface Job {
  readonly n: number;
}
interface Report {
  readonly url: string;
}

const heldForms: readonly ClaimForm[] = ["rowLock", "advisory"];
const cases = serverEngines.flatMap((engine) => heldForms.map((form) => ({ engine, form })));

describe.each(cases)("a result without its hold on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("the killed delivery's result is never written; the re-run's is", async () => {
    const setup = await engine.connect(engine.url());
    const scope = unique("resh").toLowerCase();
    const table = unique(`resh_${form}`).toLowerCase();
    const url = await scopedUrl(engine, setup, scope);
    const appDb: AnyKysely = await engine.connect(url);
    closers.push(
      () => setup.destroy(),
      () => dropScope(engine, setup, scope),
      () => sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(appDb),
      () => appDb.destroy(),
    );
    const base = InboxSpec.table(table, column("id").generated())
      .attempt(column("attempt").generated())
      .data(column("k").type("text"))
      .payload(column("payload"), payloadOf<Job>())
      .processedAt(column("processed_at"))
      .result(column("result"), resultOf<Report>());
    const spec = form === "advisory" ? base.advisoryLock("{k}") : base;
    await createInboxTable(appDb, spec);
    await createControlTable(appDb);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs");
    closers.push(() => broker.close());
    let release: (() => void) | undefined;
    let firstSettled = false;
    let deliveries = 0;
    // Counted here, not by attempt: a row-lock crash gives the row back with its attempt unspent.
    const sub = subscriber(InboxQueue.of(spec as typeof base, "jobs").pollInterval(50), async (_job, ctx) => {
      deliveries++;
      if (deliveries === 1) {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        firstSettled = true;
        return ctx.ack({ url: "/lost" });
      }
      return ctx.ack({ url: "/second" });
    });
    const app = await new App({ name: "results-hold", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
    closers.push(() => app.stop());
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" } });
    await until(() => release !== undefined, 10_000, "the first delivery to start");
    let session: number | undefined;
    await until(
      async () => {
        session = await deliverySession(engine, setup, scope, form, "a", table);
        return session !== undefined;
      },
      10_000,
      "the delivery's session",
    );
    await killSession(engine, setup, session as number);
    release?.();
    await until(() => firstSettled, 10_000, "the first delivery to return");
    const end = await broker.job("jobs", published).finished({ pollMs: 30, timeoutMs: 15_000 });
    expect(end).toMatchObject({ state: "done", result: { url: "/second" } });
  });
});
