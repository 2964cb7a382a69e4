import type { PeekedRow } from "@sqlinbox/dashboard";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { ENGINES, uniqueName, type TestDatabase, useTestDatabase } from "./support/databases.js";
import { sqlinbox, sqlinboxJson } from "./support/run-bin.js";

// The payload column types the runtime writes JSON into, per engine.
const PAYLOAD_TYPES = { postgres: ["bytea", "text", "jsonb"], mariadb: ["blob", "text", "json"], sqlite: ["blob", "text"] } as const;

describe.each(ENGINES)("sqlinbox peek on %s", (name, open) => {
  let t!: TestDatabase;
  const { tables } = useTestDatabase(open, (opened) => {
    t = opened;
  });

  test.each(PAYLOAD_TYPES[name])("a JSON payload in a %s column is decoded; other columns are shown as they are", async (type) => {
    const table = uniqueName("peek");
    tables.push(table);
    await sql.raw(`create table ${table} (id ${t.types.id}, attempt int not null default 1, locked_until ${t.types.time} null, payload ${type})`).execute(t.db);
    const json = '{"report":7,"pages":[1,2],"title":"Q3 — résumé"}';
    const value = type === "bytea" || type === "blob" ? Buffer.from(json, "utf8") : json;
    // A JSON column only takes JSON: its second row is the JSON string "plain text".
    const other = type === "bytea" || type === "blob" ? Buffer.from("not json") : type.startsWith("json") ? '"plain text"' : "plain text";
    await t.db
      .insertInto(table)
      .values([{ payload: value }, { payload: other }])
      .execute();

    const rows = await sqlinboxJson<PeekedRow[]>(["peek", "--url", t.url, "--table", table]);
    expect(rows.map((r) => [r.id, r.columns.attempt, r.payload])).toEqual([
      ["1", 1, { report: 7, pages: [1, 2], title: "Q3 — résumé" }],
      ["2", 1, type === "bytea" || type === "blob" ? "<8 bytes, not UTF-8 JSON>" : "plain text"],
    ]);
    const one = await sqlinboxJson<PeekedRow[]>(["peek", "--url", t.url, "--table", table, "--id", "2", "--state", "ready"]);
    expect(one.map((r) => r.id)).toEqual(["2"]);
    const human = await sqlinbox(["peek", "--url", t.url, "--table", table, "--limit", "1"]);
    expect(human.stdout.split("\n")[0]).toMatch(/^id\s+attempt\s+locked_until\s+payload$/);
    expect(human.stdout).toContain('"title":"Q3 — résumé"'); // jsonb keeps its own key order
  });
});
