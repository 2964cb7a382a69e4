import { consoleLogger, minutes, type Logger } from "@sqlinbox/runtime";
import type { RenderPace, Report } from "./report.js";

/** What the example's app is built from: the database, the lease, and how long a render takes. */
export interface ReportsOptions {
  /** `sqlite:path/to/file.db` (the example's default) or any URL the broker takes. */
  readonly url: string;
  /** The subscription's lease (one minute). */
  readonly lease?: number;
  readonly pace?: RenderPace;
  readonly workers?: number;
  readonly pollInterval?: number;
  readonly logger?: Logger;
  /** Called after a report rendered (before the ack is written). */
  readonly onRendered?: (report: Report, attempt: number) => void;
}

export const LEASE = minutes(1);
/** A report takes five minutes: ten steps of thirty seconds. */
const FIVE_MINUTES: RenderPace = { steps: 10, stepMs: 30_000 };

export function resolved(options: ReportsOptions) {
  return {
    lease: options.lease ?? LEASE,
    pace: options.pace ?? FIVE_MINUTES,
    workers: options.workers ?? 1,
    pollInterval: options.pollInterval ?? 1000,
    log: options.logger ?? consoleLogger(),
    onRendered: options.onRendered ?? (() => {}),
  };
}
