export { natsOutbox, type NatsOutboxOptions } from "./outbox.js";
export { natsInbox, type NatsInbox, type NatsInboxOptions, type InboxCounts } from "./inbox.js";
export { natsChannelBindings } from "./bindings.js";
