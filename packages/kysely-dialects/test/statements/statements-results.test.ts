/** The statements that write a handler's result with its ack, and its progress while in work, per engine and form. */
import { describe, expect, test } from "vitest";
import { perEngine } from "../support/render.js";
import { resultAdvisory, resultLease, resultRowLock } from "../support/specs.js";

const now = new Date("2024-05-01T12:00:00.123Z");
const held = { id: 7, held: new Date("2024-05-01T12:00:30.789Z") };
const result = '{"url":"/r/7"}';

describe("results and progress", () => {
  test("lease: the ack writes the result with processedAt, fenced by the token", () => {
    expect(perEngine((d) => d.lease.settleAckWithResult(resultLease, held, now, result, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "{"url":"/r/7"}",
            7,
            "2024-05-01 12:00:30.789",
          ],
          "sql": "update \`report_jobs\` set \`processed_at\` = ?, \`result\` = ? where \`id\` = ? and \`locked_until\` = ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            "{"url":"/r/7"}",
            7,
            2024-05-01T12:00:30.789Z,
          ],
          "sql": "update "report_jobs" set "processed_at" = $1, "result" = $2 where "id" = $3 and "locked_until" = $4",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "{"url":"/r/7"}",
            7,
            "2024-05-01T12:00:30.789Z",
          ],
          "sql": "update "report_jobs" set "processed_at" = ?, "result" = ? where "id" = ? and "locked_until" = ?",
        },
      }
    `);
  });

  test("lease: progress is fenced by the token, like an extension", () => {
    expect(perEngine((d) => d.lease.writeProgress(resultLease, held, "0.5", 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "0.5",
            7,
            "2024-05-01 12:00:30.789",
          ],
          "sql": "update \`report_jobs\` set \`progress\` = ? where \`id\` = ? and \`locked_until\` = ?",
        },
        "postgres": {
          "parameters": [
            "0.5",
            7,
            2024-05-01T12:00:30.789Z,
          ],
          "sql": "update "report_jobs" set "progress" = $1 where "id" = $2 and "locked_until" = $3",
        },
        "sqlite": {
          "parameters": [
            "0.5",
            7,
            "2024-05-01T12:00:30.789Z",
          ],
          "sql": "update "report_jobs" set "progress" = ? where "id" = ? and "locked_until" = ?",
        },
      }
    `);
  });

  test("advisory: the ack writes the result by id (the key is the hold); progress by id", () => {
    expect(perEngine((d) => d.advisory.settleAckWithResult(resultAdvisory, 7, now, result))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "{"url":"/r/7"}",
            7,
          ],
          "sql": "update \`report_jobs\` set \`processed_at\` = ?, \`result\` = ? where \`id\` = ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            "{"url":"/r/7"}",
            7,
          ],
          "sql": "update "report_jobs" set "processed_at" = $1, "result" = $2 where "id" = $3",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            "{"url":"/r/7"}",
            7,
          ],
          "sql": "update "report_jobs" set "processed_at" = ?, "result" = ? where "id" = ?",
        },
      }
    `);
    expect(perEngine((d) => d.advisory.writeProgress(resultAdvisory, 7, "0.5"))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "0.5",
            7,
          ],
          "sql": "update \`report_jobs\` set \`progress\` = ? where \`id\` = ?",
        },
        "postgres": {
          "parameters": [
            "0.5",
            7,
          ],
          "sql": "update "report_jobs" set "progress" = $1 where "id" = $2",
        },
        "sqlite": {
          "parameters": [
            "0.5",
            7,
          ],
          "sql": "update "report_jobs" set "progress" = ? where "id" = ?",
        },
      }
    `);
  });

  test("row lock: the ack writes the result by id, in the claim's transaction", () => {
    expect(perEngine((d) => d.rowLock.settleAckWithResult(resultRowLock, 7, now, result))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            "{"url":"/r/7"}",
            7,
          ],
          "sql": "update \`report_jobs\` set \`processed_at\` = ?, \`result\` = ? where \`id\` = ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            "{"url":"/r/7"}",
            7,
          ],
          "sql": "update "report_jobs" set "processed_at" = $1, "result" = $2 where "id" = $3",
        },
        "sqlite": "NOT_SUPPORTED",
      }
    `);
  });

  test("the plain ack is unchanged when a table has a result column", () => {
    expect(perEngine((d) => d.lease.settleAck(resultLease, held, now, 3))).toMatchInlineSnapshot(`
      {
        "mysql": {
          "parameters": [
            "2024-05-01 12:00:00.123",
            7,
            "2024-05-01 12:00:30.789",
          ],
          "sql": "update \`report_jobs\` set \`processed_at\` = ? where \`id\` = ? and \`locked_until\` = ?",
        },
        "postgres": {
          "parameters": [
            2024-05-01T12:00:00.123Z,
            7,
            2024-05-01T12:00:30.789Z,
          ],
          "sql": "update "report_jobs" set "processed_at" = $1 where "id" = $2 and "locked_until" = $3",
        },
        "sqlite": {
          "parameters": [
            "2024-05-01T12:00:00.123Z",
            7,
            "2024-05-01T12:00:30.789Z",
          ],
          "sql": "update "report_jobs" set "processed_at" = ? where "id" = ? and "locked_until" = ?",
        },
      }
    `);
  });
});
