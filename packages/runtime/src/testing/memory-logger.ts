import type { LogFields, Logger } from "../logger.js";

export interface LogRecord {
  readonly level: "debug" | "info" | "warn" | "error";
  readonly fields: LogFields;
  readonly message: string;
}

/** A logger that keeps every record, for assertions; optionally forwards to another. */
export class MemoryLogger implements Logger {
  readonly records: LogRecord[];
  readonly #bindings: LogFields;
  readonly #forward: Logger | undefined;

  constructor(forward?: Logger, bindings: LogFields = {}, records: LogRecord[] = []) {
    this.#forward = forward;
    this.#bindings = bindings;
    this.records = records;
  }

  debug(fields: LogFields, message: string): void {
    this.#write("debug", fields, message);
  }
  info(fields: LogFields, message: string): void {
    this.#write("info", fields, message);
  }
  warn(fields: LogFields, message: string): void {
    this.#write("warn", fields, message);
  }
  error(fields: LogFields, message: string): void {
    this.#write("error", fields, message);
  }
  child(bindings: LogFields): Logger {
    return new MemoryLogger(this.#forward, { ...this.#bindings, ...bindings }, this.records);
  }

  /** Records whose message contains `text`. */
  find(text: string): LogRecord[] {
    return this.records.filter((r) => r.message.includes(text));
  }

  #write(level: LogRecord["level"], fields: LogFields, message: string): void {
    const all = { ...this.#bindings, ...fields };
    this.records.push({ level, fields: all, message });
    this.#forward?.[level](all, message);
  }
}
