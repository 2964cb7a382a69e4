/**
 * The broker's engine is a type parameter read from the URL literal: a row-lock table (no
 * lease column, no advisory key) routed on a SQLite broker does not compile; lease and
 * advisory tables do, and so does a row-lock table on Postgres and MySQL/MariaDB.
 */
import { InboxSpec, column } from "@sqlinbox/core";
import { describe, expectTypeOf, test } from "vitest";
import { SqlBroker } from "../../src/index.js";
import type { EngineOfUrl } from "../../src/internal-api.js";

const rowLock = InboxSpec.table("rl_jobs", column("id").generated()).attempt(column("attempt").generated()).payload(column("payload"));
const lease = InboxSpec.table("ls_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"));
const advisory = InboxSpec.table("ad_jobs", column("id").generated()).data(column("customer")).advisoryLock("c-{customer}").payload(column("payload"));

describe("the broker's engine comes from the URL", () => {
  test("URL literals name their engine", () => {
    expectTypeOf<EngineOfUrl<"sqlite::memory:">>().toEqualTypeOf<"sqlite">();
    expectTypeOf<EngineOfUrl<"sqlite:data/app.db">>().toEqualTypeOf<"sqlite">();
    expectTypeOf<EngineOfUrl<"postgres://u@h/db">>().toEqualTypeOf<"postgres">();
    expectTypeOf<EngineOfUrl<"mariadb://u@h/db">>().toEqualTypeOf<"mysql">();
    expectTypeOf<EngineOfUrl<string>>().toEqualTypeOf<"postgres" | "mysql" | "sqlite">();
  });

  test("a row-lock table on a SQLite broker does not compile", () => {
    const broker = SqlBroker.fromUrl("sqlite::memory:");
    // @ts-expect-error SQLite has no row locks: a row-lock table cannot be routed on a SQLite broker
    broker.route(rowLock, "jobs");
    // @ts-expect-error the rule holds after .lease(…) too
    broker.lease(1000).route(rowLock, "jobs");
  });

  test("lease and advisory tables compile on SQLite", () => {
    const broker = SqlBroker.fromUrl("sqlite:app.db");
    broker.route(lease, "reports").route(advisory, "per-customer");
  });

  test("a row-lock table compiles on Postgres and MariaDB, and on a URL the compiler cannot read", () => {
    SqlBroker.fromUrl("postgres://postgres@127.0.0.1/test").route(rowLock, "jobs");
    SqlBroker.fromUrl("mariadb://root@127.0.0.1/test").route(rowLock, "jobs");
    const url: string = "sqlite::memory:";
    SqlBroker.fromUrl(url).route(rowLock, "jobs"); // refused at startup instead, with UnsupportedForm
  });
});

describe("listenNotify() compiles on Postgres only", () => {
  test("a Postgres URL, a URL the compiler cannot read, and a Kysely broker compile", () => {
    SqlBroker.fromUrl("postgres://postgres@127.0.0.1/test").listenNotify().route(lease, "reports");
    const url: string = "sqlite::memory:";
    SqlBroker.fromUrl(url).listenNotify(); // refused at startup instead, with UnsupportedForm
  });

  test("a SQLite or MySQL/MariaDB URL does not compile", () => {
    // @ts-expect-error listenNotify() needs Postgres (LISTEN/NOTIFY)
    SqlBroker.fromUrl("sqlite::memory:").listenNotify();
    // @ts-expect-error the rule holds after .lease(…) and .route(…) too
    SqlBroker.fromUrl("mariadb://root@127.0.0.1/test").lease(1000).route(lease, "reports").listenNotify();
  });
});
