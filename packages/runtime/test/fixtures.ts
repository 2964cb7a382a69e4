import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { App, InboxQueue, SqlBroker, subscriber, type HandlerFunction, type InboxQueue as Queue } from "../src/index.js";
import { silentLogger } from "../src/logger.js";

export interface Job {
  readonly n: number;
  readonly title?: string;
}

/** The lease table of the runtime tests, described by hand. */
export function jobsSpec(table: string) {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .payload(column("payload"), payloadOf<Job>());
}
export type JobsSpec = ReturnType<typeof jobsSpec>;

/** An app with one subscriber on route "jobs" of `table`. */
export function jobsApp(
  url: string,
  table: string,
  handler: HandlerFunction<JobsSpec>,
  configure: (q: Queue<JobsSpec>) => Queue<JobsSpec> = (q) => q,
  app: { shutdownGrace?: number } = {},
) {
  const spec = jobsSpec(table);
  const broker = SqlBroker.fromUrl(url, { pool: { max: 5 } });
  const sub = subscriber(configure(InboxQueue.of(spec, "jobs").lease(2000)), handler);
  const built = new App({ name: "test", version: "0", logger: silentLogger, ...app }).withBroker(broker.route(spec, "jobs"), (b) => b.include(sub));
  return { app: built, broker, sub, spec };
}

export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
