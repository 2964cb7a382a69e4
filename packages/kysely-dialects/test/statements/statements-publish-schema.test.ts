import { describe, expect, test } from "vitest";
import { perEngine } from "../support/render.js";
import { richLease, seedByHand } from "../support/specs.js";

describe("publish", () => {
  test("insert leaves generated columns out; RETURNING id where the engine has it (MySQL: insertId)", () => {
    expect(perEngine((d) => d.publish.insert(seedByHand, [{ id: 99, attempt: 5, payload: "{}" }]))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "{}",
          ],
          "sql": "insert into \`report_jobs\` (\`payload\`) values (?)",
        },
        "postgres": {
          "parameters": [
            "{}",
          ],
          "sql": "insert into "report_jobs" ("payload") values ($1) returning "id"",
        },
        "sqlite": {
          "parameters": [
            "{}",
          ],
          "sql": "insert into "report_jobs" ("payload") values (?) returning "id"",
        },
      }
    `);
  });

  test("insert of several rows, by column name or row key", () => {
    expect(
      perEngine((d) =>
        d.publish.insert(richLease(), [
          { payload: "a", grp: "g1", priority: 1 },
          { payload: "b", grp: "g2", priority: 2 },
        ]),
      ),
    ).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "a",
            "g1",
            1,
            "b",
            "g2",
            2,
          ],
          "sql": "insert into \`jobs\` (\`payload\`, \`grp\`, \`priority\`) values (?, ?, ?), (?, ?, ?)",
        },
        "postgres": {
          "parameters": [
            "a",
            "g1",
            1,
            "b",
            "g2",
            2,
          ],
          "sql": "insert into "jobs" ("payload", "grp", "priority") values ($1, $2, $3), ($4, $5, $6) returning "id"",
        },
        "sqlite": {
          "parameters": [
            "a",
            "g1",
            1,
            "b",
            "g2",
            2,
          ],
          "sql": "insert into "jobs" ("payload", "grp", "priority") values (?, ?, ?), (?, ?, ?) returning "id"",
        },
      }
    `);
  });

  test("a key that is no described column is refused", () => {
    expect(() => perEngine((d) => d.publish.insert(seedByHand, [{ payload: "{}", nope: 1 }]))).toThrow(/"nope"/);
  });
});

describe("schema", () => {
  test("describeTable, serverVersion, serverTime, currentDatabase", () => {
    expect({
      describeTable: perEngine((d) => d.schema.describeTable("report_jobs")),
      serverVersion: perEngine((d) => d.schema.serverVersion()),
      serverTime: perEngine((d) => d.schema.serverTime()),
      currentDatabase: perEngine((d) => d.schema.currentDatabase()),
    }).toMatchInlineSnapshot(`
      {
        "currentDatabase": {
          "mysql": {
            "parameters": [],
            "sql": "select database() as \`name\`",
          },
          "postgres": {
            "parameters": [],
            "sql": "select current_schema() as "name"",
          },
          "sqlite": {
            "parameters": [
              "main",
            ],
            "sql": "select ? as "name"",
          },
        },
        "describeTable": {
          "mysql": {
            "parameters": [
              "report_jobs",
            ],
            "sql": "select \`COLUMN_NAME\` as \`name\`, \`DATA_TYPE\` as \`data_type\`, \`DATETIME_PRECISION\` as \`precision\`, \`IS_NULLABLE\` as \`nullable\` from \`information_schema\`.\`COLUMNS\` where \`TABLE_SCHEMA\` = database() and \`TABLE_NAME\` = ? order by \`ORDINAL_POSITION\`",
          },
          "postgres": {
            "parameters": [
              "report_jobs",
            ],
            "sql": "select "column_name" as "name", "data_type", "datetime_precision" as "precision", "is_nullable" as "nullable" from "information_schema"."columns" where "table_schema" = current_schema() and "table_name" = $1 order by "ordinal_position"",
          },
          "sqlite": {
            "parameters": [
              "report_jobs",
            ],
            "sql": "select "name", "type" as "data_type", null as "precision", "notnull" = 0 as "nullable" from pragma_table_info(?) as "c" order by "cid"",
          },
        },
        "serverTime": {
          "mysql": {
            "parameters": [],
            "sql": "select timestampdiff(microsecond, '1970-01-01 00:00:00', utc_timestamp(6)) / 1000 as \`now_ms\`",
          },
          "postgres": {
            "parameters": [],
            "sql": "select (extract(epoch from clock_timestamp()) * 1000)::float8 as "now_ms"",
          },
          "sqlite": {
            "parameters": [],
            "sql": "select (julianday('now') - 2440587.5) * 86400000.0 as "now_ms"",
          },
        },
        "serverVersion": {
          "mysql": {
            "parameters": [],
            "sql": "select version() as \`version\`, cast('2000-01-01 00:00:00' as datetime) as \`time_probe\`",
          },
          "postgres": {
            "parameters": [
              "server_version",
            ],
            "sql": "select current_setting($1) as "version"",
          },
          "sqlite": {
            "parameters": [],
            "sql": "select sqlite_version() as "version"",
          },
        },
      }
    `);
  });
});
