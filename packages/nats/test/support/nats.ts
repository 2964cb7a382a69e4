/**
 * The JetStream server the bridge tests use (`SQLINBOX_NATS_URL`, default 127.0.0.1:4222, which
 * `bash scripts/services.sh` starts): a connection that fails with how to start it, a stream of the
 * test's own, and the messages a stream holds.
 */
import { randomUUID } from "node:crypto";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";

const NATS_URL = process.env["SQLINBOX_NATS_URL"] ?? "127.0.0.1:4222";

export async function connectNats(servers = NATS_URL): Promise<NatsConnection> {
  try {
    return await connect({ servers, maxReconnectAttempts: 0 });
  } catch (error) {
    throw new Error(`NATS at ${servers} cannot be reached (${(error as Error).message}): run \`bash scripts/services.sh\` to start it (nats-server -js)`);
  }
}

/** A stream of its own for one test: subjects `<name>.>`, the default duplicate window (2 min). */
export async function freshStream(jsm: JetStreamManager, prefix: string): Promise<string> {
  const name = `${prefix}_${randomUUID().slice(0, 8)}`;
  await jsm.streams.add({ name, subjects: [`${name}.>`] });
  return name;
}

export interface StreamMessage {
  readonly seq: number;
  readonly subject: string;
  readonly msgId: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
}

/** Every message `stream` holds, in stream order. */
export async function streamMessages(jsm: JetStreamManager, stream: string): Promise<StreamMessage[]> {
  const info = await jsm.streams.info(stream);
  const out: StreamMessage[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m === null) continue;
    const headers: Record<string, string> = {};
    for (const name of m.header?.keys() ?? []) headers[name] = m.header.get(name);
    out.push({ seq: m.seq, subject: m.subject, msgId: m.header?.get("Nats-Msg-Id") || undefined, headers, body: m.json() });
  }
  return out;
}

export { jetstreamManager };
