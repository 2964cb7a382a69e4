/**
 * `sqlinbox asyncapi` through the built bin: the document of a module's routes parses with the
 * official AsyncAPI parser with no error; payload schemas come from zod's and ArkType's JSON Schema,
 * a type-only payload gets a placeholder (and a line on stderr); the example app's module too.
 */
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Parser } from "@asyncapi/parser";
import { type } from "arktype";
import { describe, expect, test } from "vitest";
import { z } from "zod";
import { asyncApiDocument, payloadSchemaOf } from "../src/asyncapi.js";
import { ExitCode } from "../src/exit-codes.js";
import { Orders } from "./support/fixtures/asyncapi-routes.js";
import { sqlinbox } from "./support/run-bin.js";

const fixture = (name: string) => fileURLToPath(new URL(`./support/fixtures/${name}`, import.meta.url));
const EXAMPLE_INBOX = fileURLToPath(new URL("../../../examples/reports/src/inbox.ts", import.meta.url));

/** The parser's errors (severity 0) for a document, as `path: message` lines. */
async function parseErrors(document: string): Promise<string[]> {
  const { diagnostics } = await new Parser().parse(document);
  return diagnostics.filter((d) => d.severity === 0).map((d) => `${d.path.join(".")}: ${d.message}`);
}

type Doc = {
  asyncapi: string;
  channels: Record<string, { address: string; messages: Record<string, unknown>; description: string }>;
  operations: Record<string, { action: string; channel: { $ref: string } }>;
  components: { messages: Record<string, { payload: { schema: Record<string, unknown> }; headers?: unknown }> };
};

describe("sqlinbox asyncapi", () => {
  test("a module's routes: channels, send and receive operations, zod and ArkType schemas, a placeholder; the parser finds no error", async () => {
    const result = await sqlinbox(["asyncapi", "--module", fixture("asyncapi-routes.ts"), "--title", "Orders service", "--app-version", "2.1.0"]);
    expect(result.code).toBe(ExitCode.ok);
    expect(result.stderr).toBe(
      "sqlinbox asyncapi: audit_jobs: a placeholder payload schema (the payload is typed by payloadOf<T>() (or field.payload<T>()), a type with no value at run time)\n",
    );
    expect(await parseErrors(result.stdout)).toEqual([]);
    const doc = JSON.parse(result.stdout) as Doc;
    expect(doc.asyncapi).toBe("3.0.0");
    expect(Object.fromEntries(Object.entries(doc.channels).map(([k, c]) => [k, c.address]))).toEqual({ audit_jobs: "audit_jobs", mail: "mail", "orders.placed": "orders.placed" });
    expect(Object.fromEntries(Object.entries(doc.operations).map(([k, o]) => [k, `${o.action} ${o.channel.$ref}`]))).toEqual({
      publish_audit_jobs: "send #/channels/audit_jobs",
      publish_mail: "send #/channels/mail",
      consume_mail: "receive #/channels/mail",
      "publish_orders.placed": "send #/channels/orders.placed",
      "consume_orders.placed": "receive #/channels/orders.placed",
    });
    const orders = doc.components.messages["orders.placed"];
    expect(orders?.payload.schema).toMatchObject({
      type: "object",
      required: expect.arrayContaining(["orderId", "total", "lines"]),
      properties: { orderId: { type: "string" }, total: { type: "integer", minimum: 0 }, lines: { type: "array", items: { type: "object" } } },
    });
    expect(orders?.headers).toMatchObject({ type: "object", additionalProperties: { type: "string" } });
    expect(doc.components.messages.mail?.payload.schema).toMatchObject({ type: "object", properties: { to: { type: "string", format: "email" }, subject: { type: "string" } } });
    expect(doc.components.messages.mail?.headers).toBeUndefined();
    expect(doc.components.messages.audit_jobs?.payload.schema).toEqual({ description: expect.stringContaining("no schema could be written") });
  });

  test("--out writes the file; a module with no table is a usage error naming it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "asyncapi-"));
    try {
      const out = join(dir, "asyncapi.json");
      const written = await sqlinbox(["asyncapi", "--module", fixture("asyncapi-routes.ts"), "--out", out]);
      expect(written.code).toBe(ExitCode.ok);
      expect(written.stdout).toBe("");
      expect(JSON.parse(await readFile(out, "utf8"))).toMatchObject({ asyncapi: "3.0.0", info: { title: "sqlinbox service", version: "0.0.0" } });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const empty = await sqlinbox(["asyncapi", "--module", fixture("no-tables.ts")]);
    expect(empty.code).toBe(ExitCode.usage);
    expect(empty.stderr).toContain("no-tables.ts exports no table description");
  });

  test("the example app's module parses with no error", async () => {
    const result = await sqlinbox(["asyncapi", "--module", EXAMPLE_INBOX, "--title", "Reports"]);
    expect(result.code).toBe(ExitCode.ok);
    expect(await parseErrors(result.stdout)).toEqual([]);
    const doc = JSON.parse(result.stdout) as Doc;
    expect(Object.keys(doc.operations).sort()).toEqual(["consume_reports", "publish_reports"]);
  });

  test("the function: two routes of one name are refused; bindings are carried to the channel", async () => {
    expect(() =>
      asyncApiDocument({ title: "t", version: "1" }, [
        { name: "a b", spec: Orders },
        { name: "a_b", spec: Orders },
      ]),
    ).toThrow(/two routes are named "a_b"/);
    const { document } = asyncApiDocument({ title: "t", version: "1" }, [{ name: "orders", spec: Orders, bindings: { nats: { bindingVersion: "0.1.0" } }, subscribed: false }]);
    expect(await parseErrors(JSON.stringify(document))).toEqual([]);
    expect((document as unknown as Doc).channels.orders).toMatchObject({ bindings: { nats: { bindingVersion: "0.1.0" } } });
    expect(Object.keys((document as unknown as Doc).operations)).toEqual(["publish_orders"]);
    // zod 4 and ArkType 2 both write through the Standard JSON Schema interface.
    expect(payloadSchemaOf(z.object({ a: z.string() })).source).toEqual({ from: "standard-json-schema" });
    expect(payloadSchemaOf(type({ a: "string" })).source).toEqual({ from: "standard-json-schema" });
    // A validator that writes no JSON Schema: its vendor named.
    expect(payloadSchemaOf({ "~standard": { version: 1, vendor: "acme", validate: () => ({ value: 1 }) } }).source).toEqual({
      from: "placeholder",
      why: "its validator (acme) writes no JSON Schema",
    });
  });
});
