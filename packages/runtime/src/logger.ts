/** A structured log record's fields. */
export type LogFields = Record<string, unknown>;

/**
 * The logger the runtime writes to: pino fits it directly (`new App({ logger: pino() })`).
 * Every method takes the fields first and the message second, as pino does.
 */
export interface Logger {
  debug(fields: LogFields, message: string): void;
  info(fields: LogFields, message: string): void;
  warn(fields: LogFields, message: string): void;
  error(fields: LogFields, message: string): void;
  child?(bindings: LogFields): Logger;
}

type Level = "debug" | "info" | "warn" | "error";
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Gives `logger` extra bound fields, through its own `child` when it has one. */
export function childLogger(logger: Logger, bindings: LogFields): Logger {
  if (logger.child) return logger.child(bindings);
  const merge = (fields: LogFields): LogFields => ({ ...bindings, ...fields });
  return {
    debug: (f, m) => logger.debug(merge(f), m),
    info: (f, m) => logger.info(merge(f), m),
    warn: (f, m) => logger.warn(merge(f), m),
    error: (f, m) => logger.error(merge(f), m),
    child: (more) => childLogger(logger, { ...bindings, ...more }),
  };
}

/**
 * The default logger: one concise line per event on the console,
 * `12:00:01.204 INFO  report rendered  subscription=reports id=3`.
 */
export function consoleLogger(options: { level?: Level; bindings?: LogFields } = {}): Logger {
  const min = order[options.level ?? "info"];
  const bindings = options.bindings ?? {};
  const write = (level: Level) => (fields: LogFields, message: string) => {
    if (order[level] < min) return;
    const all = { ...bindings, ...fields };
    const tail = Object.entries(all)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${formatValue(v)}`)
      .join(" ");
    const time = new Date().toISOString().slice(11, 23);
    const line = `${time} ${level.toUpperCase().padEnd(5)} ${message}${tail ? `  ${tail}` : ""}`;
    (level === "error" || level === "warn" ? console.error : console.log)(line);
  };
  return {
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    child: (more) => consoleLogger({ ...options, bindings: { ...bindings, ...more } }),
  };
}

function formatValue(v: unknown): string {
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === "string") return /\s/.test(v) ? JSON.stringify(v) : v;
  if (typeof v === "object" && v !== null) return JSON.stringify(v);
  return String(v);
}

/** A logger that drops everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Serializes an error for a log record (pino's `err` convention). */
export function errorFields(error: unknown): LogFields {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { err: { message: error.message, name: error.name, ...(code !== undefined ? { code } : {}) } };
  }
  return { err: { message: String(error) } };
}
