export { amqpOutbox, type AmqpOutboxOptions, type AmqpOutboxRelay } from "./outbox.js";
export type { AmqpConnection } from "./connection.js";
export { amqpInbox, type AmqpInbox, type AmqpInboxOptions, type InboxCounts } from "./inbox.js";
export { amqpChannelBindings, type AmqpChannelBindingOptions } from "./bindings.js";
