import type { ColumnType, Generated } from "kysely";
import { describe, expectTypeOf, test } from "vitest";
import { defineInbox, field, type Attempt, type CheckAgainstDatabase, type CheckDefinition, type Lease, type Payload, type RolesOf, type SpecError } from "../src/internal.js";
import { definition } from "./type-helpers.js";

interface Report {
  readonly title: string;
}

/** An application's Kysely database interface. */
interface Database {
  report_jobs: {
    id: Generated<number>;
    attempt: Generated<number>;
    locked_until: ColumnType<Date, Date | string, Date | string> | null;
    payload: Uint8Array;
    customer_id: string;
    job_key: string | null;
  };
  /** SQLite keeps dates as ISO-8601 text. */
  sqlite_jobs: {
    id: Generated<number>;
    attempt: ColumnType<number, number | undefined, number>;
    locked_until: string | null;
    payload: string;
  };
  wrong_types: {
    id: Generated<number>;
    attempt: string;
    locked_until: number | null;
    job_key: number | null;
  };
}
const defineReportInbox = defineInbox<Database>();

describe("defineInbox<DB>(): what compiles", () => {
  test("the seed's table with Kysely column types (ColumnType<…> | null, Generated<number>)", () => {
    const spec = defineReportInbox({
      table: "report_jobs",
      columns: {
        id: field.id().generated(),
        attempt: field.attempt().generated(),
        lockedUntil: field.lease("locked_until"),
        payload: field.payload<Report>(),
        customer_id: field.data(),
      },
    });
    expectTypeOf<RolesOf<typeof spec>>().toEqualTypeOf<[Attempt, Lease<Date>, Payload<Report>]>();
    expectTypeOf(spec.form).toEqualTypeOf<"lease">();
  });

  test("a lease column held as text and an attempt column as a ColumnType of number (SQLite)", () => {
    const def = definition({ table: "sqlite_jobs", columns: { id: field.id(), attempt: field.attempt(), locked_until: field.lease() } });
    expectTypeOf<CheckAgainstDatabase<Database, typeof def>>().toEqualTypeOf<unknown>();
    defineReportInbox({ table: "sqlite_jobs", columns: { id: field.id(), attempt: field.attempt(), locked_until: field.lease() } });
  });

  test("the database's rules are quiet for a table without lease or attempt columns", () => {
    const def = definition({ table: "wrong_types", columns: { id: field.id() } });
    expectTypeOf<CheckAgainstDatabase<Database, typeof def>>().toEqualTypeOf<unknown>();
    defineReportInbox(def);
  });
});

describe("defineInbox<DB>(): what does not compile, and why", () => {
  test("a table the interface does not have", () => {
    const def = definition({ table: "report_job", columns: { id: field.id() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<unknown>();
    expectTypeOf<CheckAgainstDatabase<Database, typeof def>>().toEqualTypeOf<
      SpecError<'the database interface has no table "report_job": check the name, or add the table to the interface'>
    >();
    // @ts-expect-error the database interface has no table "report_job"
    defineReportInbox(def);
    // @ts-expect-error the database interface has no table "report_job"
    defineReportInbox({ table: "report_job", columns: { id: field.id() } });
  });

  test("a column the table does not have", () => {
    const def = definition({ table: "report_jobs", columns: { id: field.id(), lockedUntil: field.lease() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<unknown>();
    expectTypeOf<CheckAgainstDatabase<Database, typeof def>>().toEqualTypeOf<
      SpecError<`table "report_jobs" has no column "lockedUntil" in the database interface: check the name, or give the column's name as the field's argument`>
    >();
    // @ts-expect-error table "report_jobs" has no column "lockedUntil"
    defineReportInbox(def);
  });

  test("a lease column that does not hold a date", () => {
    const def = definition({ table: "wrong_types", columns: { id: field.id(), locked_until: field.lease() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<unknown>();
    expectTypeOf<CheckAgainstDatabase<Database, typeof def>>().toEqualTypeOf<
      SpecError<'the lease column "locked_until" of "wrong_types" does not hold a date: give the lease role to a column typed Date (or ISO-8601 text on SQLite)'>
    >();
    // @ts-expect-error the lease column does not hold a date
    defineReportInbox(def);
  });

  test("an attempt column that does not hold a number", () => {
    const def = definition({ table: "wrong_types", columns: { id: field.id(), attempt: field.attempt() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<unknown>();
    expectTypeOf<CheckAgainstDatabase<Database, typeof def>>().toEqualTypeOf<
      SpecError<'the attempt column "attempt" of "wrong_types" does not hold a number: give the attempt role to an integer column'>
    >();
    // @ts-expect-error the attempt column does not hold a number
    defineReportInbox(def);
  });

  test("a dedup key column that does not hold text; one that does compiles", () => {
    const def = definition({ table: "wrong_types", columns: { id: field.id(), job_key: field.key() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<unknown>();
    expectTypeOf<CheckAgainstDatabase<Database, typeof def>>().toEqualTypeOf<
      SpecError<'the key column "job_key" of "wrong_types" does not hold text: give the key role to a text column'>
    >();
    // @ts-expect-error the key column does not hold text
    defineReportInbox(def);
    defineReportInbox({ table: "report_jobs", columns: { id: field.id().generated(), jobKey: field.key("job_key") } });
  });

  test("a definition breaking its own rule and the database's reports its own rule first, not never", () => {
    const def = definition({ table: "report_job", columns: { attempt: field.attempt() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<SpecError<"no id column is described: add one with field.id()">>();
    type Parameter = Parameters<typeof defineReportInbox<typeof def>>[0];
    expectTypeOf<Parameter>().not.toBeNever();
    // placed on the property that breaks it: here `columns`, which has no id
    expectTypeOf<Parameter["columns"]>().not.toBeNever();
    expectTypeOf<Parameter["columns"]>().toExtend<SpecError<"no id column is described: add one with field.id()">>();
    // @ts-expect-error no id column is described
    defineReportInbox(def);
  });
});
