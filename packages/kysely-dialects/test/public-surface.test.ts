import { describe, expect, test } from "vitest";
import * as root from "../src/index.js";
import * as internal from "../src/internal.js";

describe("@sqlinbox/kysely-dialects' public surface", () => {
  test("the root exports the dialects and nothing else at run time", () => {
    expect(Object.keys(root).sort()).toEqual(["controlTableSql", "dialectFor", "inboxTableSql", "mysqlDialect", "postgresDialect", "sqliteDialect", "workflowTableSql"]);
  });

  test("./internal adds the helpers the runtime and the operator tools share", () => {
    const added = Object.keys(internal).filter((name) => !(name in root));
    expect(added.sort()).toEqual([
      "MYSQL_LOCK_NAME_MAX",
      "SEARCH_WINDOW",
      "VERSION_FLOORS",
      "advisoryKeyOf",
      "channelOf",
      "checkSchema",
      "checkServerVersion",
      "clusterOf",
      "deliveredAttempt",
      "endsTransaction",
      "fifoRuleApplies",
      "formatUtcText",
      "isRetryableConflict",
      "jobListRowsExist",
      "mysqlLockName",
      "orderedKey",
      "parseUtcText",
      "payloadSearch",
      "postgresQueueStorage",
      "readFoundColumns",
      "truncateToPrecision",
    ]);
  });
});
