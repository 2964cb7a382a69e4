import type { InboxDescription } from "@sqlinbox/core/internal";

/** One route of the document: the name jobs are published under, its table, and whether a subscriber of it is declared. */
export interface AsyncApiRoute {
  /** The route's name (`broker.route(spec, name)`, `InboxQueue.of(spec, name)`): the channel's address. */
  readonly name: string;
  /** The table's description: an `InboxSpec` or `defineInbox` value (its `description`), or the description itself. */
  readonly spec: InboxDescription | { readonly description: InboxDescription };
  /** A subscriber of the route is declared: the document has a `receive` operation for it. Default: true. */
  readonly subscribed?: boolean;
  /** The route is published to by this service: the document has a `send` operation for it. Default: true. */
  readonly published?: boolean;
  /** Broker bindings of the channel (`nats`, `amqp`, `redis`, `mqtt`, …), as AsyncAPI 3 writes them. */
  readonly bindings?: Readonly<Record<string, unknown>>;
}

/** What the document says of the service. */
export interface AsyncApiInfo {
  readonly title: string;
  readonly version: string;
  readonly description?: string;
}

/** How a payload's schema was written: from its validator's JSON Schema, or a placeholder (the reason in `why`). */
export type PayloadSchemaSource = { readonly from: "standard-json-schema" | "toJsonSchema" | "toJSONSchema" } | { readonly from: "placeholder"; readonly why: string };

/** An AsyncAPI 3.0 document, and how each route's payload schema was made. */
export interface AsyncApiResult {
  readonly document: Record<string, unknown>;
  readonly payloads: ReadonlyMap<string, PayloadSchemaSource>;
}

const descriptionOf = (spec: AsyncApiRoute["spec"]): InboxDescription => ("description" in spec ? spec.description : spec);

/** A name AsyncAPI accepts as a component or channel key (`^[\w\-.]+$`). */
const keyOf = (name: string): string => name.replace(/[^\w\-.]/g, "_");

/** A JSON Schema (draft-07) as a plain object. */
export type JsonSchema = Record<string, unknown>;

/**
 * The JSON Schema of a payload validator, where its library can write one:
 * - the Standard JSON Schema interface (`~standard.jsonSchema`: zod 4.2+, ArkType 2.1.28+, valibot
 *   through `toStandardJsonSchema` of `@valibot/to-json-schema`), asked for draft-07, AsyncAPI's schema dialect;
 * - a `toJsonSchema()` method (ArkType) or `toJSONSchema()` method;
 * otherwise a placeholder that says why (a `payloadOf<T>()` or `field.payload<T>()` type has no value at run time).
 */
export function payloadSchemaOf(payloadType: unknown): { readonly schema: JsonSchema; readonly source: PayloadSchemaSource } {
  // A validator may be a function with properties (ArkType's types are).
  if ((typeof payloadType === "object" || typeof payloadType === "function") && payloadType !== null) {
    const standard = (payloadType as { "~standard"?: { jsonSchema?: { output?: (o: { target: string }) => unknown } } })["~standard"];
    const output = standard?.jsonSchema?.output;
    if (typeof output === "function") {
      const schema = tryWrite(() => output.call(standard?.jsonSchema, { target: "draft-07" }));
      if (schema !== undefined) return { schema, source: { from: "standard-json-schema" } };
    }
    for (const method of ["toJsonSchema", "toJSONSchema"] as const) {
      const write = (payloadType as Record<string, unknown>)[method];
      if (typeof write === "function") {
        const schema = tryWrite(() => write.call(payloadType));
        if (schema !== undefined) return { schema, source: { from: method } };
      }
    }
    if (standard !== undefined) {
      const vendor = (standard as { vendor?: unknown }).vendor;
      return placeholder(`its validator (${typeof vendor === "string" ? vendor : "a Standard Schema"}) writes no JSON Schema`);
    }
  }
  return placeholder("the payload is typed by payloadOf<T>() (or field.payload<T>()), a type with no value at run time");
}

function tryWrite(write: () => unknown): JsonSchema | undefined {
  try {
    const schema = write();
    if (typeof schema !== "object" || schema === null) return undefined;
    // `$schema` names the dialect, which the message's schemaFormat says already.
    const { $schema: _, ...rest } = schema as JsonSchema;
    return rest;
  } catch {
    return undefined;
  }
}

function placeholder(why: string): { readonly schema: JsonSchema; readonly source: PayloadSchemaSource } {
  return { schema: { description: `Any JSON value: no schema could be written (${why}).` }, source: { from: "placeholder", why } };
}

/**
 * An AsyncAPI 3.0 document of a service's routes: a channel per route (its address the route's
 * name), a `send` operation for each route the service publishes to and a `receive` operation for
 * each it subscribes to, and a message per route whose payload schema comes from the table's payload
 * validator where it can write JSON Schema (`payloadSchemaOf`), and whose headers are the table's
 * headers column (string values) where it has one.
 */
export function asyncApiDocument(info: AsyncApiInfo, routes: readonly AsyncApiRoute[]): AsyncApiResult {
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  const payloads = new Map<string, PayloadSchemaSource>();
  const seen = new Set<string>();
  for (const route of [...routes].sort((a, b) => a.name.localeCompare(b.name))) {
    const key = keyOf(route.name);
    if (seen.has(key)) throw new TypeError(`asyncApiDocument: two routes are named "${route.name}" (or differ only in characters AsyncAPI keys cannot hold)`);
    seen.add(key);
    const d = descriptionOf(route.spec);
    const { schema, source } = d.payload === undefined ? placeholder("the table has no payload column: a handler reads the row") : payloadSchemaOf(d.payloadType);
    payloads.set(route.name, source);
    const table = d.schema === undefined ? d.table : `${d.schema}.${d.table}`;
    messages[key] = {
      name: route.name,
      title: `A job of ${route.name}`,
      contentType: "application/json",
      payload: { schemaFormat: "application/schema+json;version=draft-07", schema },
      ...(d.headers === undefined
        ? {}
        : { headers: { type: "object", additionalProperties: { type: "string" }, description: `Stored in the ${d.headers.name} column (trace context among them).` } }),
      description: `A row of the ${table} table: its payload column ${d.payload?.name ?? "(none)"}.`,
    };
    channels[key] = {
      address: route.name,
      title: route.name,
      description: `Jobs in the ${table} table (${formName(d)}), published in the writer's transaction and taken by subscribers.`,
      messages: { [key]: { $ref: `#/components/messages/${key}` } },
      ...(route.bindings === undefined ? {} : { bindings: route.bindings }),
    };
    const channel = { $ref: `#/channels/${key}` };
    const message = [{ $ref: `#/channels/${key}/messages/${key}` }];
    if (route.published !== false) operations[`publish_${key}`] = { action: "send", channel, messages: message, summary: `Publish a job to ${route.name}` };
    if (route.subscribed !== false) operations[`consume_${key}`] = { action: "receive", channel, messages: message, summary: `Handle the jobs of ${route.name}` };
  }
  return {
    document: {
      asyncapi: "3.0.0",
      info: { title: info.title, version: info.version, ...(info.description === undefined ? {} : { description: info.description }) },
      defaultContentType: "application/json",
      channels,
      operations,
      components: { messages },
    },
    payloads,
  };
}

function formName(d: InboxDescription): string {
  if (d.form === "lease") return "held by a lease";
  if (d.form === "advisory") return "held by an advisory lock";
  return "held by a row lock";
}
