/**
 * `SqlBroker.fromKysely` reads the engine from the Kysely adapter's exact class. Kysely's own
 * Postgres, MySQL and SQLite dialects name their engine; an adapter that subclasses one of them
 * (CockroachDB's extends Postgres' in Kysely, as here) is another engine, refused with
 * `UnsupportedForm` naming its class, never run as Postgres. Nothing connects: the engine is read
 * when the broker is built.
 */
import Database from "better-sqlite3";
import { DummyDriver, Kysely, MssqlAdapter, MssqlIntrospector, MssqlQueryCompiler, MysqlDialect, PostgresAdapter, PostgresDialect, SqliteDialect } from "kysely";
import { describe, expect, test } from "vitest";
import { SqlBroker } from "../../src/index.js";

const neverConnects = async (): Promise<never> => {
  throw new Error("this test never connects");
};

/** CockroachDB as Kysely ships it: a dialect and an adapter, each extending Postgres'. */
class CockroachAdapter extends PostgresAdapter {}
class CockroachDialect extends PostgresDialect {
  override createAdapter(): CockroachAdapter {
    return new CockroachAdapter();
  }
}

describe("SqlBroker.fromKysely recognises the engine by the adapter's exact class", () => {
  test("Kysely's own Postgres, MySQL and SQLite dialects name their engine", async () => {
    const postgres = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: neverConnects }) });
    const mysql = new Kysely<unknown>({ dialect: new MysqlDialect({ pool: neverConnects }) });
    const sqlite = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(":memory:") }) });
    expect([SqlBroker.fromKysely(postgres).engine, SqlBroker.fromKysely(mysql).engine, SqlBroker.fromKysely(sqlite).engine]).toEqual(["postgres", "mysql", "sqlite"]);
    await sqlite.destroy();
  });

  test("an adapter that subclasses Postgres' (CockroachDB) is refused with UnsupportedForm naming its class, not run as Postgres", () => {
    const cockroach = new Kysely<unknown>({ dialect: new CockroachDialect({ pool: neverConnects }) });
    const refusal = (() => {
      try {
        SqlBroker.fromKysely(cockroach);
        return null;
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toMatchObject({ code: "UnsupportedForm" });
    expect((refusal as Error).message).toContain(
      "a Kysely instance on an unknown dialect (CockroachAdapter, a subclass of PostgresAdapter): sqlinbox runs on Postgres, MySQL/MariaDB and SQLite, and never runs another engine as the one it extends",
    );
  });

  test("an engine sqlinbox does not speak (MSSQL) is refused with UnsupportedForm naming its adapter", () => {
    // Kysely's MSSQL adapter and compiler over its DummyDriver: tarn and tedious are not installed, and nothing connects.
    const mssql = new Kysely<unknown>({
      dialect: {
        createAdapter: () => new MssqlAdapter(),
        createDriver: () => new DummyDriver(),
        createQueryCompiler: () => new MssqlQueryCompiler(),
        createIntrospector: (db) => new MssqlIntrospector(db),
      },
    });
    expect(() => SqlBroker.fromKysely(mssql)).toThrow(expect.objectContaining({ code: "UnsupportedForm" }));
    expect(() => SqlBroker.fromKysely(mssql)).toThrow("a Kysely instance on an unknown dialect (MssqlAdapter): sqlinbox runs on Postgres, MySQL/MariaDB and SQLite");
  });
});
