/**
 * Attribute names: the OpenTelemetry messaging and database semantic conventions where one
 * applies, `sqlinbox.*` for what only sqlinbox knows.
 */
export const MESSAGING_SYSTEM = "messaging.system";
export const DESTINATION_NAME = "messaging.destination.name";
export const OPERATION_TYPE = "messaging.operation.type";
export const OPERATION_NAME = "messaging.operation.name";
export const MESSAGE_ID = "messaging.message.id";
export const BATCH_MESSAGE_COUNT = "messaging.batch.message_count";
export const DB_SYSTEM_NAME = "db.system.name";
export const DB_COLLECTION_NAME = "db.collection.name";
export const ERROR_TYPE = "error.type";
export const CLAIM_FORM = "sqlinbox.claim_form";
export const OUTCOME = "sqlinbox.outcome";
export const ATTEMPT = "sqlinbox.attempt";

/** `messaging.system` of every span and metric point. */
export const SYSTEM = "sqlinbox";

/** The metric names, one per instrument. */
export const METRICS = Object.freeze({
  deliveries: "sqlinbox.deliveries",
  handlerDuration: "messaging.process.duration",
  claimDuration: "sqlinbox.claim.duration",
  leasesLost: "sqlinbox.leases.lost",
  deadlocksRetried: "sqlinbox.deadlocks.retried",
  queueDepth: "sqlinbox.queue.depth",
  connectionsHeld: "sqlinbox.pool.connections.held",
});
