export { mqttOutbox, type MqttOutboxOptions } from "./outbox.js";
export { mqttInbox, type MqttInbox, type MqttInboxOptions, type InboxCounts } from "./inbox.js";
export { mqttChannelBindings } from "./bindings.js";
