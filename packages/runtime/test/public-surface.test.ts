import { describe, expect, test } from "vitest";
import * as root from "../src/index.js";
import * as internal from "../src/internal-api.js";

describe("@sqlinbox/runtime's public surface", () => {
  test("the root exports only the values an application uses", () => {
    expect(Object.keys(root).sort()).toEqual([
      "App",
      "Ctx",
      "HandlerOutcome",
      "InboxQueue",
      "JobEnded",
      "SqlBroker",
      "SqlInboxError",
      "Timeout",
      "WorkflowEnded",
      "WorkflowRun",
      "consoleLogger",
      "controlTableSql",
      "createControlTable",
      "createInboxTable",
      "createWorkflowTable",
      "days",
      "defaultOnDecodeError",
      "defaultOnError",
      "hours",
      "isSqlInboxError",
      "keys",
      "minutes",
      "seconds",
      "silentLogger",
      "subscriber",
      "systemClock",
      "withPreparedStatements",
      "workflowTableSql",
    ]);
  });

  test("./internal adds what benchmarks and tests reach behind it, and keeps the root's names", () => {
    const added = Object.keys(internal).filter((name) => !(name in root));
    expect(added.sort()).toEqual(["DEFAULT_BACKOFF", "InboxStore", "SystemClock", "WriteBatcher", "backoffMs", "inboxWriter", "outboxRelay", "redactUrl", "rowsToClaim"]);
  });
});
