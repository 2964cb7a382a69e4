export { TestApp, type CallRecord, type TestAppOptions } from "./test-app.js";
export { PausedClock } from "./paused-clock.js";
export { MemoryLogger, type LogRecord } from "./memory-logger.js";
