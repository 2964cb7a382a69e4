import { describe, expect, test } from "vitest";
import { perEngine } from "../support/render.js";
import { richLease, seedByHand } from "../support/specs.js";

describe("observe", () => {
  test("queueDepth counts every row of a table without roles that narrow it", () => {
    expect(perEngine((d) => d.observe.queueDepth(seedByHand, {}))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [],
          "sql": "select count(*) as \`depth\` from \`report_jobs\`",
        },
        "postgres": {
          "parameters": [],
          "sql": "select count(*) as "depth" from "report_jobs"",
        },
        "sqlite": {
          "parameters": [],
          "sql": "select count(*) as "depth" from "report_jobs"",
        },
      }
    `);
  });

  test("queueDepth counts the unprocessed rows of the subscription's group", () => {
    expect(perEngine((d) => d.observe.queueDepth(richLease(), { group: "reports" }))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "reports",
          ],
          "sql": "select count(*) as \`depth\` from \`jobs\` where \`jobs\`.\`processed_at\` is null and \`jobs\`.\`grp\` = ?",
        },
        "postgres": {
          "parameters": [
            "reports",
          ],
          "sql": "select count(*) as "depth" from "jobs" where "jobs"."processed_at" is null and "jobs"."grp" = $1",
        },
        "sqlite": {
          "parameters": [
            "reports",
          ],
          "sql": "select count(*) as "depth" from "jobs" where "jobs"."processed_at" is null and "jobs"."grp" = ?",
        },
      }
    `);
  });
});
