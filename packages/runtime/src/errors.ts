/**
 * Every `SqlInboxError` the runtime throws, one constructor per message, so a message is typed
 * once and `test/errors.test.ts` pins each text; by concept in `errors/`. `kind` is the outcome
 * being settled (`ack`, `retry`, …).
 */
export * from "./errors/route-errors.js";
export * from "./errors/queue-errors.js";
export * from "./errors/startup-errors.js";
export * from "./errors/delivery-errors.js";
export * from "./errors/job-errors.js";
export * from "./errors/workflow-errors.js";
export * from "./errors/bridge-errors.js";
