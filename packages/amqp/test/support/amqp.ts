/**
 * The RabbitMQ the bridge tests use (`SQLINBOX_AMQP_URL`, default amqp://guest:guest@127.0.0.1:5672, which
 * `bash scripts/services.sh` starts): a connection that fails with how to start it, and the messages a queue holds.
 */
import amqp, { type Channel, type ChannelModel, type GetMessage } from "amqplib";

const AMQP_URL = process.env["SQLINBOX_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672";

export async function connectAmqp(): Promise<ChannelModel> {
  try {
    const connection = await amqp.connect(AMQP_URL);
    connection.on("error", () => {});
    return connection;
  } catch (error) {
    throw new Error(`RabbitMQ at ${AMQP_URL} cannot be reached (${(error as Error).message}): run \`bash scripts/services.sh\` to start it`);
  }
}

/** Every message `queue` holds now, taken (and acked) one by one, in queue order. */
export async function drainQueue(channel: Channel, queue: string): Promise<GetMessage[]> {
  const out: GetMessage[] = [];
  for (;;) {
    const message = await channel.get(queue, { noAck: true });
    if (message === false) return out;
    out.push(message);
  }
}
