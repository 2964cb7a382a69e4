/**
 * The MQTT broker the bridge tests use (`SQLINBOX_MQTT_URL`, default mqtt://127.0.0.1:1883, Mosquitto, which
 * `bash scripts/services.sh` starts): an MQTT 5 client that fails with how to start the broker, a subscriber
 * that records what arrives, and the removal of a persistent session.
 */
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient } from "mqtt";

export const MQTT_URL = process.env["SQLINBOX_MQTT_URL"] ?? "mqtt://127.0.0.1:1883";

export async function connectMqtt(options: IClientOptions = {}): Promise<MqttClient> {
  try {
    return await mqtt.connectAsync(MQTT_URL, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5000, ...options });
  } catch (error) {
    throw new Error(`MQTT at ${MQTT_URL} cannot be reached (${(error as Error).message}): run \`bash scripts/services.sh\` to start Mosquitto`);
  }
}

export interface Received {
  readonly topic: string;
  readonly body: string;
  readonly userProperties: Readonly<Record<string, string | string[]>>;
}

/** A clean-session subscriber of `filter` at QoS 1 that records every message in arrival order. */
export async function recorder(filter: string): Promise<{ readonly received: Received[]; readonly close: () => Promise<void> }> {
  const client = await connectMqtt();
  const received: Received[] = [];
  client.on("message", (topic, payload, packet: IPublishPacket) => {
    received.push({ topic, body: payload.toString(), userProperties: packet.properties?.userProperties ?? {} });
  });
  await client.subscribeAsync(filter, { qos: 1 });
  return { received, close: () => client.endAsync() };
}

/** Ends the persistent session of `clientId` on the broker (a clean connection with no session expiry). */
export async function dropSession(clientId: string): Promise<void> {
  const client = await connectMqtt({ clientId, clean: true, properties: { sessionExpiryInterval: 0 } });
  await client.endAsync();
}
