export { redisOutbox, type RedisOutboxOptions } from "./outbox.js";
export { redisInbox, type RedisInbox, type RedisInboxOptions, type InboxCounts } from "./inbox.js";
export { redisChannelBindings } from "./bindings.js";
