import type { RawRow } from "@sqlinbox/kysely-dialects";

/** A candidate a claim round set aside, with its key and the read it came from. */
export interface SetAside {
  readonly row: RawRow;
  readonly key: string;
  readonly read: number;
}

/**
 * How long a window of candidates serves later claims before it is read again. Within it, a
 * candidate another session finished costs a lock try (and a take that finds nothing), never a
 * wrong delivery: the take re-checks the row. A publish in this process drops the window, so a
 * new row that ranks first is not passed over.
 */
export const CANDIDATE_WINDOW_MS = 250;

/**
 * The advisory form's candidate window, shared by one subscription's claims: rows read by one
 * select, in claim order, handed out from the front one at a time (claims side by side never try
 * the same row). It is read again when empty or older than its freshness; a read under way is
 * waited for by every claim that finds the window empty, instead of reading the same rows again.
 *
 * A claim sets aside rows it may not take yet (their key is in work, or an earlier row of their key
 * was set aside or tried): their keys stay set aside until the round gives the rows back, in claim
 * order, so the rows of one key run in claim order. No database here: the caller reads the rows.
 */
export class CandidateWindow {
  readonly #freshForMs: number;
  #rows: RawRow[] = [];
  #at = 0;
  #readAt = 0;
  /** Which read the rows come from: a row set aside from an older read is not given back. */
  #read = 0;
  #reading: Promise<void> | undefined;
  /** Each candidate's place in claim order across reads, so rows given back go back in order. */
  readonly #rank = new WeakMap<RawRow, number>();
  #ranked = 0;
  /** Keys with a row set aside by a round under way. */
  readonly #asideKeys = new Map<string, number>();

  constructor(freshForMs = CANDIDATE_WINDOW_MS) {
    this.#freshForMs = freshForMs;
  }

  /** True while the window has rows not handed out and was read less than its freshness before `nowMs`. */
  fresh(nowMs: number): boolean {
    return this.#at < this.#rows.length && nowMs - this.#readAt < this.#freshForMs;
  }

  /** Reads a new window with `read` (the rows in claim order, as of `nowMs`), or waits for the read already under way. */
  async read(nowMs: number, read: () => Promise<RawRow[]>): Promise<void> {
    if (this.#reading !== undefined) return this.#reading;
    const reading = (async () => {
      const rows = await read();
      for (const row of rows) this.#rank.set(row, ++this.#ranked);
      this.#rows = rows;
      this.#at = 0;
      this.#readAt = nowMs;
      this.#read++;
    })();
    this.#reading = reading;
    try {
      await reading;
    } finally {
      this.#reading = undefined;
    }
  }

  /** The next candidate, taken off the front; `undefined` when every row was handed out. */
  next(): RawRow | undefined {
    return this.#at < this.#rows.length ? this.#rows[this.#at++] : undefined;
  }

  /** Whether a round under way set aside a row of `key`. */
  asideKey(key: string): boolean {
    return this.#asideKeys.has(key);
  }

  /** Sets `row` aside for the rest of its round, with its key: what `giveBack` takes. */
  setAside(row: RawRow, key: string): SetAside {
    this.#asideKeys.set(key, (this.#asideKeys.get(key) ?? 0) + 1);
    return { row, key, read: this.#read };
  }

  /** Puts rows a round set aside back into the window, in claim order (by their rank); their keys are no longer set aside. */
  giveBack(rows: readonly SetAside[]): void {
    if (rows.length === 0) return;
    const back: RawRow[] = [];
    for (const { row, key, read } of rows) {
      const left = (this.#asideKeys.get(key) ?? 1) - 1;
      if (left === 0) this.#asideKeys.delete(key);
      else this.#asideKeys.set(key, left);
      // A row of an older read is dropped: the newer read holds every row still claimable, in
      // claim order, and giving this one back could put a key's later row before its earlier one.
      if (read === this.#read) back.push(row);
    }
    if (back.length === 0) return;
    const rank = (r: RawRow) => this.#rank.get(r) ?? 0;
    this.#rows = [...back, ...this.#rows.slice(this.#at)].sort((x, y) => rank(x) - rank(y));
    this.#at = 0;
  }

  /** Forgets the rows read (a publish in this process: a new row may rank first); the next claim reads afresh. */
  invalidate(): void {
    this.#rows = [];
    this.#at = 0;
    this.#read++;
  }
}
