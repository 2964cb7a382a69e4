import { CommitWatch } from "../publish/after-commit.js";
import type { MessageHeaderValues } from "../publish/publish-rows.js";
import type { PublishEvent } from "../publish/publisher.js";

/** One job a publish wrote (or found by its dedup key), as `TestApp.published(route)` lists it. */
export interface PublishedJob<P = unknown> {
  /** The name published to (on a prefix route, the full name). */
  readonly route: string;
  readonly payload: P;
  /** The row's id as text (`Published.id`). */
  readonly id: string;
  /** `false`: a row already held the dedup key, and nothing was inserted. */
  readonly created: boolean;
  readonly headers?: MessageHeaderValues;
  readonly priority?: number;
  /** When the row may run first (`runAt`, or `delay` from the publish's time on the app's clock). */
  readonly runAt?: Date;
  readonly key?: string;
  /** The data columns written beside the payload. */
  readonly columns?: Readonly<Record<string, unknown>>;
}

/** A payload to match: any part of it (nested objects and their keys, whole arrays, values). */
export type PartialPayload<P> = P extends Date ? P : P extends readonly unknown[] ? P : P extends object ? { readonly [K in keyof P]?: PartialPayload<P[K]> } : P;

/** What else `assertPublished` checks: how many jobs match (default: at least one), and the publish's options. */
export interface PublishedMatch {
  /** Exactly this many matching jobs. */
  readonly times?: number;
  readonly headers?: MessageHeaderValues;
  readonly priority?: number;
  readonly runAt?: Date;
  readonly key?: string;
  readonly columns?: Readonly<Record<string, unknown>>;
}

/**
 * Whether `actual` has every part of `expected`: each key of an expected object (recursively),
 * arrays element by element with the same length, dates by their time, other values by `Object.is`.
 */
function matchesPart(actual: unknown, expected: unknown): boolean {
  if (expected instanceof Date) return actual instanceof Date && actual.getTime() === expected.getTime();
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => matchesPart(actual[i], e));
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object") return false;
    return Object.entries(expected).every(([k, v]) => v === undefined || matchesPart((actual as Record<string, unknown>)[k], v));
  }
  return Object.is(actual, expected);
}

/** A value as a failing assertion shows it. */
export function shown(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)) ?? String(value);
}

/** A job as a failing assertion lists it: its payload, and the options it was published with. */
function jobText(job: PublishedJob): string {
  const { route: _route, payload, id: _id, created, ...options } = job;
  const extra = Object.keys(options).length === 0 ? "" : ` with ${shown(options)}`;
  return `${shown(payload)}${extra}${created ? "" : " (not created: its key was held)"}`;
}

/**
 * Every publish through a test app's brokers, in order: `t.publish`, a handler's `outs.publish`, the
 * application's own `broker.publish` while the app runs, cron ticks. A publish inside a transaction
 * (`{ via: trx }`) is logged when it commits, never when it rolls back.
 */
export class PublishedLog {
  readonly #jobs: PublishedJob[] = [];
  readonly #commits = new CommitWatch();
  readonly #now: () => Date;
  #seq = 0;

  constructor(now: () => Date) {
    this.#now = now;
  }

  /** The app's publish observer. */
  readonly observe = (event: PublishEvent): void => {
    const jobs = jobsOf(event, this.#now());
    const log = (): void => void this.#jobs.push(...jobs);
    const state = this.#commits.afterCommit(event.via, String(this.#seq++), log);
    if (state === "none" || state === "committed") log();
  };

  /** The jobs published to `route` (every route: `undefined`), in order. */
  jobs(route?: string): PublishedJob[] {
    return this.#jobs.filter((j) => route === undefined || j.route === route);
  }

  /** Throws unless a job published to `route` matches `payload` and `match` (exactly `times` of them, when given); returns the matching jobs. */
  assertPublished(route: string, payload: unknown, match: PublishedMatch = {}): PublishedJob[] {
    const { times, ...options } = match;
    const matching = this.jobs(route).filter((j) => (payload === undefined || matchesPart(j.payload, payload)) && matchesPart(j, options));
    if (times === undefined ? matching.length > 0 : matching.length === times) return matching;
    const what = `${payload === undefined ? "any payload" : `a payload matching ${shown(payload)}`}${Object.keys(options).length === 0 ? "" : ` and options matching ${shown(options)}`}`;
    const count = times === undefined ? "a job" : `${times} job${times === 1 ? "" : "s"}`;
    throw new Error(`expected ${count} published to "${route}" with ${what}, found ${matching.length}; ${this.#listing(route)}`);
  }

  /** Throws if a job published to `route` matches `payload` (any job, when `payload` is `undefined`). */
  assertNotPublished(route: string, payload?: unknown): void {
    const matching = this.jobs(route).filter((j) => payload === undefined || matchesPart(j.payload, payload));
    if (matching.length === 0) return;
    const what = payload === undefined ? "no job" : `no job with a payload matching ${shown(payload)}`;
    throw new Error(`expected ${what} published to "${route}", found ${matching.length}; ${this.#listing(route)}`);
  }

  /** What was published, for a failing assertion: to `route`, else where the publishes went. */
  #listing(route: string): string {
    const jobs = this.jobs(route);
    if (jobs.length > 0) return `published to "${route}": ${jobs.map(jobText).join(", ")}`;
    const elsewhere = new Map<string, number>();
    for (const j of this.#jobs) elsewhere.set(j.route, (elsewhere.get(j.route) ?? 0) + 1);
    const others = [...elsewhere].map(([r, n]) => `"${r}" ×${n}`).join(", ");
    return `nothing was published to "${route}"${others === "" ? " (nor to any route)" : ` (published to ${others})`}`;
  }
}

/** The jobs of one publish call: one per payload, with the options that apply to it. */
function jobsOf(event: PublishEvent, now: Date): PublishedJob[] {
  const { route, payloads, options, published } = event;
  const runAt = options.runAt ?? (options.delay === undefined ? undefined : new Date(now.getTime() + options.delay));
  return payloads.map((payload, i) => {
    const outcome = published[i];
    const columns = typeof options.columns === "function" ? options.columns(payload, i) : options.columns;
    const key = options.keys?.[i];
    return Object.freeze({
      route,
      payload,
      id: outcome?.id ?? "",
      created: outcome?.created ?? false,
      ...(options.headers === undefined ? {} : { headers: options.headers }),
      ...(options.priority === undefined ? {} : { priority: options.priority }),
      ...(runAt === undefined ? {} : { runAt }),
      ...(key === undefined ? {} : { key }),
      ...(columns === undefined ? {} : { columns }),
    });
  });
}
