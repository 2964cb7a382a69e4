/** The trivial handler every system runs: decode the payload, note its index. */
export function decodeIndex(payload: unknown): number {
  let value: unknown = payload;
  if (typeof value === "string") value = JSON.parse(value);
  else if (value instanceof Uint8Array) value = JSON.parse(Buffer.from(value).toString("utf8"));
  const i = (value as { i?: unknown } | null)?.i;
  if (typeof i !== "number") throw new Error(`bench: payload without an index: ${JSON.stringify(value)}`);
  return i;
}

export const payloadOf = (i: number) => ({ i });

/** Wall-clock ms with sub-ms resolution, comparable across processes on one machine. */
export const wallNow = () => performance.timeOrigin + performance.now();

/** Counts handled jobs, detects duplicates, and resolves when all `n` were seen. */
export class JobTracker {
  readonly #seen: Uint8Array;
  #count = 0;
  duplicates = 0;
  firstAt = 0;
  lastAt = 0;
  readonly done: Promise<void>;
  #resolve!: () => void;

  constructor(readonly n: number) {
    this.#seen = new Uint8Array(n);
    this.done = new Promise((resolve) => (this.#resolve = resolve));
    if (n === 0) this.#resolve();
  }

  get count(): number {
    return this.#count;
  }

  /** The handler body: decodes and records; returns the index. */
  handle(payload: unknown): number {
    const i = decodeIndex(payload);
    const now = performance.now();
    if (this.#count === 0) this.firstAt = now;
    this.lastAt = now;
    if (this.#seen[i]) {
      this.duplicates++;
      return i;
    }
    this.#seen[i] = 1;
    if (++this.#count === this.n) this.#resolve();
    return i;
  }
}

/**
 * Indexes 0…n-1 reported by other processes: counts each once, a second report of an index as a duplicate (a
 * double delivery), and an index outside the range as foreign; `complete` resolves once every index was seen.
 */
export class IdLedger {
  readonly #times: Uint16Array;
  unique = 0;
  duplicates = 0;
  foreign = 0;
  readonly complete: Promise<void>;
  #resolve!: () => void;

  constructor(readonly n: number) {
    this.#times = new Uint16Array(n);
    this.complete = new Promise((resolve) => (this.#resolve = resolve));
    if (n === 0) this.#resolve();
  }

  record(i: number): void {
    if (!(Number.isInteger(i) && i >= 0 && i < this.n)) this.foreign++;
    else if (this.#times[i]!++ === 0) {
      if (++this.unique === this.n) this.#resolve();
    } else this.duplicates++;
  }

  /** How many times index `i` was reported. */
  timesSeen(i: number): number {
    return this.#times[i] ?? 0;
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `pending()` until it reports zero, at most `timeoutMs`. */
export async function waitUntilEmpty(pending: () => Promise<number>, timeoutMs = 60_000, everyMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await pending();
    if (left === 0) return;
    if (Date.now() > deadline) throw new Error(`bench: ${left} jobs still pending after ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/** Rejects after `ms` with a message naming what hung. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`bench: ${what} did not finish within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
