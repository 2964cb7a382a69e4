import { describe, expect, test } from "vitest";
import { workflowTableSql } from "../../src/index.js";
import { perEngine } from "../support/render.js";

const now = new Date("2024-05-01T12:00:00.123Z");

describe("workflow", () => {
  test("the workflow table: one row per run, step and child, keyed by the three; a job is one step's at most, found by its table and id", () => {
    expect({ postgres: workflowTableSql("postgres"), mysql: workflowTableSql("mysql"), sqlite: workflowTableSql("sqlite") }).toMatchInlineSnapshot(`
      {
        "mysql": [
          "create table if not exists \`sqlinbox_workflows\` (\`workflow_id\` varchar(255) not null, \`step\` varchar(255) not null, \`item\` int not null, \`workflow\` varchar(255) not null, \`state\` varchar(255) not null, \`job_table\` varchar(255), \`job_id\` varchar(255), \`data\` text, \`updated_at\` datetime(3) not null, constraint \`sqlinbox_workflows_pkey\` primary key (\`workflow_id\`, \`step\`, \`item\`), constraint \`sqlinbox_workflows_job\` unique (\`job_table\`, \`job_id\`), index \`sqlinbox_workflows_finished\` (\`workflow\`, \`state\`, \`updated_at\`))",
        ],
        "postgres": [
          "create table if not exists "sqlinbox_workflows" ("workflow_id" text not null, "step" text not null, "item" integer not null, "workflow" text not null, "state" text not null, "job_table" text, "job_id" text, "data" text, "updated_at" timestamptz not null, constraint "sqlinbox_workflows_pkey" primary key ("workflow_id", "step", "item"), constraint "sqlinbox_workflows_job" unique ("job_table", "job_id"))",
          "create index if not exists "sqlinbox_workflows_finished" on "sqlinbox_workflows" ("workflow", "state", "updated_at") where "step" = ''",
        ],
        "sqlite": [
          "create table if not exists "sqlinbox_workflows" ("workflow_id" text not null, "step" text not null, "item" integer not null, "workflow" text not null, "state" text not null, "job_table" text, "job_id" text, "data" text, "updated_at" text not null, constraint "sqlinbox_workflows_pkey" primary key ("workflow_id", "step", "item"), constraint "sqlinbox_workflows_job" unique ("job_table", "job_id"))",
          "create index if not exists "sqlinbox_workflows_finished" on "sqlinbox_workflows" ("workflow", "state", "updated_at") where "step" = ''",
        ],
      }
    `);
  });

  test("retention deletes every row of up to a batch of finished runs, picked oldest first through the finished-runs index", () => {
    expect(perEngine((d) => d.workflow.pruneRuns({ workflow: "order", state: "done", before: now, limit: 100 }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "order",
            "done",
            "2024-05-01 12:00:00.123",
            -1,
            100,
          ],
          "sql": "delete from \`sqlinbox_workflows\` using \`sqlinbox_workflows\` inner join (select \`workflow_id\` from \`sqlinbox_workflows\` where \`workflow\` = ? and \`state\` = ? and \`updated_at\` < ? and \`step\` = '' and \`item\` = ? order by \`updated_at\` limit ?) as \`picked\` on \`picked\`.\`workflow_id\` = \`sqlinbox_workflows\`.\`workflow_id\`",
        },
        "postgres": {
          "parameters": [
            "order",
            "done",
            2024-05-01T12:00:00.123Z,
            -1,
            100,
          ],
          "sql": "delete from "sqlinbox_workflows" where "workflow_id" = any(array((select "workflow_id" from "sqlinbox_workflows" where "workflow" = $1 and "state" = $2 and "updated_at" < $3 and "step" = '' and "item" = $4 order by "updated_at" limit $5 for update skip locked)))",
        },
        "sqlite": {
          "parameters": [
            "order",
            "done",
            "2024-05-01T12:00:00.123Z",
            -1,
            100,
          ],
          "sql": "delete from "sqlinbox_workflows" where "workflow_id" in (select "workflow_id" from "sqlinbox_workflows" where "workflow" = ? and "state" = ? and "updated_at" < ? and "step" = '' and "item" = ? order by "updated_at" limit ?)",
        },
      }
    `);
  });

  test("a run's own row is locked before its rows are read, where the engine locks rows", () => {
    expect({ lock: perEngine((d) => d.workflow.lockRun("w1")), read: perEngine((d) => d.workflow.readRun("w1", true)) }).toMatchInlineSnapshot(`
      {
        "lock": {
          "mysql": {
            "parameters": [
              "w1",
              "",
              -1,
            ],
            "sql": "select \`state\` from \`sqlinbox_workflows\` where \`workflow_id\` = ? and \`step\` = ? and \`item\` = ? for update",
          },
          "postgres": {
            "parameters": [
              "w1",
              "",
              -1,
            ],
            "sql": "select "state" from "sqlinbox_workflows" where "workflow_id" = $1 and "step" = $2 and "item" = $3 for update",
          },
          "sqlite": {
            "parameters": [
              "w1",
              "",
              -1,
            ],
            "sql": "select "state" from "sqlinbox_workflows" where "workflow_id" = ? and "step" = ? and "item" = ?",
          },
        },
        "read": {
          "mysql": {
            "parameters": [
              "w1",
            ],
            "sql": "select \`workflow_id\`, \`step\`, \`item\`, \`workflow\`, \`state\`, \`job_table\`, \`job_id\`, \`data\` from \`sqlinbox_workflows\` where \`workflow_id\` = ? order by \`step\`, \`item\` for update",
          },
          "postgres": {
            "parameters": [
              "w1",
            ],
            "sql": "select "workflow_id", "step", "item", "workflow", "state", "job_table", "job_id", "data" from "sqlinbox_workflows" where "workflow_id" = $1 order by "step", "item" for update",
          },
          "sqlite": {
            "parameters": [
              "w1",
            ],
            "sql": "select "workflow_id", "step", "item", "workflow", "state", "job_table", "job_id", "data" from "sqlinbox_workflows" where "workflow_id" = ? order by "step", "item"",
          },
        },
      }
    `);
  });

  test("a change lands only on a row still in the state it expects", () => {
    expect(perEngine((d) => d.workflow.change("w1", "ship", -1, "waiting", { state: "released", job_table: "ship_jobs", job_id: "7" }, now))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "released",
            "ship_jobs",
            "7",
            "2024-05-01 12:00:00.123",
            "w1",
            "ship",
            -1,
            "waiting",
          ],
          "sql": "update \`sqlinbox_workflows\` set \`state\` = ?, \`job_table\` = ?, \`job_id\` = ?, \`updated_at\` = ? where \`workflow_id\` = ? and \`step\` = ? and \`item\` = ? and \`state\` = ?",
        },
        "postgres": {
          "parameters": [
            "released",
            "ship_jobs",
            "7",
            2024-05-01T12:00:00.123Z,
            "w1",
            "ship",
            -1,
            "waiting",
          ],
          "sql": "update "sqlinbox_workflows" set "state" = $1, "job_table" = $2, "job_id" = $3, "updated_at" = $4 where "workflow_id" = $5 and "step" = $6 and "item" = $7 and "state" = $8",
        },
        "sqlite": {
          "parameters": [
            "released",
            "ship_jobs",
            "7",
            "2024-05-01T12:00:00.123Z",
            "w1",
            "ship",
            -1,
            "waiting",
          ],
          "sql": "update "sqlinbox_workflows" set "state" = ?, "job_table" = ?, "job_id" = ?, "updated_at" = ? where "workflow_id" = ? and "step" = ? and "item" = ? and "state" = ?",
        },
      }
    `);
  });
});
