export { TestApp, type CallRecord, type DrainOptions, type TestAppOptions } from "./test-app.js";
export type { PerformedJob, PerformOptions } from "./perform-job.js";
export type { PartialPayload, PublishedJob, PublishedMatch } from "./published-log.js";
export { PausedClock } from "./paused-clock.js";
export { MemoryLogger, type LogRecord } from "./memory-logger.js";
