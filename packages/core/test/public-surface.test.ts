import { describe, expect, test } from "vitest";
import * as root from "../src/index.js";
import * as internal from "../src/internal.js";

describe("@sqlinbox/core's public surface", () => {
  test("the root exports only the values an application uses", () => {
    expect(Object.keys(root).sort()).toEqual([
      "InboxSpec",
      "PORTABLE_TYPES",
      "SqlInboxError",
      "Workflow",
      "column",
      "defineInbox",
      "field",
      "isSqlInboxError",
      "payloadOf",
      "progressOf",
      "resultOf",
      "workflow",
    ]);
  });

  test("./internal adds what the sibling packages need, and keeps the root's names", () => {
    expect(Object.keys(internal).sort()).toEqual([
      "FORM_FACTS",
      "InboxSpec",
      "MAX_IDENTIFIER_LENGTH",
      "PORTABLE_TYPES",
      "SqlInboxError",
      "Workflow",
      "buildDescription",
      "column",
      "defineInbox",
      "field",
      "isSqlInboxError",
      "isStandardSchema",
      "payloadOf",
      "progressOf",
      "resultOf",
      "validateIdentifier",
      "workflow",
    ]);
  });
});
