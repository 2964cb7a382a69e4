/**
 * The routes an app serves, recorded in the control table for `sqlinbox pause` to check a name
 * against, on every engine: a row per route and app (`kind = 'route'`, the app's name as `target`)
 * written at start and refreshed in place by a second start; records no app refreshed for a day
 * are pruned. `@sqlinbox/database`'s `servedRoutes` reads what the CLI reads.
 */
import { servedRoutes } from "@sqlinbox/database";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createControlTable, silentLogger, subscriber } from "../../src/index.js";
import { createJobsTable, jobsSpecOf } from "../support/claim-forms.js";
import { engines, unique } from "../support/engines.js";

const DAY_MS = 24 * 60 * 60 * 1000;

describe.each(engines)("route records on $name", (engine) => {
  test("an app records the routes it serves at start, once per route and app however often it starts; a record no app refreshed for a day is pruned", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    const dialect = dialectFor(engine.engine);
    const table = unique("routes").toLowerCase();
    const [mail, reports, stale] = [unique("mail"), unique("reports"), unique("stale")];
    const appName = unique("routes-app");
    try {
      await createControlTable(db);
      await createJobsTable(engine, db, table);
      const spec = jobsSpecOf(table, "lease");
      // A record two days old: its app stopped long ago.
      await db.executeQuery(dialect.control.recordRoutes([stale], "gone-app", new Date(Date.now() - 2 * DAY_MS)));
      const place = { db, dialect, controlTableMissing: (t: string) => new Error(`no ${t}`) };
      expect((await servedRoutes(place, new Date())).has(stale)).toBe(false);
      const start = () =>
        new App({ name: appName, version: "0", logger: silentLogger })
          .withBroker(SqlBroker.fromUrl(url).route(spec, mail).route(spec, reports), (b) =>
            b.include(subscriber(InboxQueue.of(spec, mail), async () => HandlerOutcome.ack())).include(subscriber(InboxQueue.of(spec, reports), async () => HandlerOutcome.ack())),
          )
          .start();
      for (let i = 0; i < 2; i++) {
        const running = await start();
        await running.stop();
      }
      const rows = await sql<{
        route: string;
        target: string;
      }>`select route, target from sqlinbox_control where kind = 'route' and route in (${mail}, ${reports}, ${stale}) order by route`.execute(db);
      expect(rows.rows).toEqual([
        { route: mail, target: appName },
        { route: reports, target: appName },
      ]);
      const served = await servedRoutes(place, new Date());
      expect(served.get(mail)).toEqual([appName]);
      expect(served.get(reports)).toEqual([appName]);
    } finally {
      await sql`delete from sqlinbox_control where kind = 'route' and route in (${mail}, ${reports}, ${stale})`.execute(db);
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
      engine.cleanup();
    }
  });
});
