import { fileURLToPath } from "node:url";
import { dialectFor } from "@sqlinbox/kysely-dialects/internal";
import { sql } from "kysely";
import { compiledFixture } from "./compiled-fixture.js";
import type { TestDatabase } from "./databases.js";
import { uniqueName } from "./databases.js";
import { sqlinbox, type BinResult } from "./run-bin.js";

// Compiled once: the bin runs on it a few hundred times per engine (the tsx load of a `.ts` module costs each run ~0.8 s).
const MODULE = compiledFixture(fileURLToPath(new URL("./fixtures/jobs-tables.ts", import.meta.url)));

/** A queue table of `fixtures/jobs-tables.ts` and its dead-letter table, made on a test database, and the bin run on them. */
export interface JobsTables {
  readonly table: string;
  readonly dead: string;
  /** Runs `sqlinbox <args…> --url … --module …` with the fixture's environment. */
  run(args: readonly string[]): Promise<BinResult>;
  /** As `run` with `--json`, parsed; fails with stderr unless the exit code is `code` (0). */
  json<T>(args: readonly string[], code?: number): Promise<T>;
}

/** Creates the tables of the form (`lease` adds locked_until; `done` keeps handled rows in processed_at, not with `advisory`). */
export async function jobsTables(t: TestDatabase, form: "lease" | "rowLock" | "advisory", done: boolean, extraEnv: Readonly<Record<string, string>> = {}): Promise<JobsTables> {
  const { types } = t;
  const table = uniqueName(`jobs_${form === "lease" ? "ls" : form === "rowLock" ? "rl" : "ad"}`);
  const dead = `${table}_dead`;
  const columns = [
    `id ${types.id}`,
    "attempt int not null default 1",
    `payload ${types.text}`,
    `job_key ${types.text} null`,
    `retry_after ${types.time} null`,
    `last_error ${types.text} null`,
    `customer_id ${types.text} null`,
    `created_at ${types.time} null`,
    ...(form === "lease" ? [`locked_until ${types.time} null`] : []),
    ...(done ? [`processed_at ${types.time} null`] : []),
  ];
  await sql.raw(`create table ${table} (${columns.join(", ")})`).execute(t.db);
  await sql
    .raw(`create table ${dead} (id ${types.id}, attempts int not null default 1, payload ${types.text}, last_error ${types.text} null, created_at ${types.time} null)`)
    .execute(t.db);
  const env = { TEST_JOBS_TABLE: table, TEST_JOBS_DEAD: dead, TEST_JOBS_FORM: form, TEST_JOBS_DONE: done ? "1" : "0", ...extraEnv };
  const run = (args: readonly string[]) => sqlinbox([...args, "--url", t.url, "--module", MODULE], { env });
  return {
    table,
    dead,
    run,
    async json<T>(args: readonly string[], code = 0): Promise<T> {
      const result = await run([...args, "--json"]);
      if (result.code !== code) throw new Error(`sqlinbox ${args.join(" ")} exited ${result.code}, not ${code}: ${result.stderr}`);
      return JSON.parse(result.stdout) as T;
    },
  };
}

export { holdRows } from "./databases.js";

/**
 * Holds advisory key `key` the way an advisory claim does: taken with the dialect's own `tryLock` on a
 * session of its own (the lock names' database read on it), until the returned release is awaited.
 */
export async function holdKey(t: TestDatabase, key: string): Promise<() => Promise<void>> {
  const dialect = dialectFor(t.name === "mariadb" ? "mysql" : t.name);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let holding!: () => void;
  let failed!: (error: unknown) => void;
  const held = new Promise<void>((resolve, reject) => {
    holding = resolve;
    failed = reject;
  });
  const holder = t.db
    .connection()
    .execute(async (session) => {
      const database = String((await session.executeQuery(dialect.schema.currentDatabase())).rows[0]?.name ?? "");
      const locked = (await session.executeQuery(dialect.advisory.tryLock(key, database))).rows[0]?.locked;
      if (!(locked === true || Number(locked) === 1)) throw new Error(`advisory key ${key} is held already`);
      holding();
      await released;
      await session.executeQuery(dialect.advisory.unlock(key, database));
    })
    .catch(failed);
  await held;
  return async () => {
    release();
    await holder;
  };
}
