import { createHash } from "node:crypto";

/**
 * Names for the statements a Postgres pool repeats, so each session parses and plans them once
 * (protocol-level named prepared statements) instead of on every run: a claim, an ack, a publish.
 *
 * A statement is named from its second run with parameters on, up to `limit` distinct texts per pool;
 * later texts, and statements without parameters (`BEGIN`, `COMMIT`), run unnamed as before. The
 * name is a hash of the text, so every session of the pool prepares a text under the same name and
 * `pg` re-sends only the name once a session has parsed it.
 *
 * Off for good once the server says a name is missing or already taken (SQLSTATE 26000, 42P05): what a
 * pooler in transaction mode that cannot carry named statements does (PgBouncer before 1.21), since it
 * hands each transaction whatever server session is free. The statement that found it fails; the
 * ones after run unnamed.
 */
export class StatementNames {
  readonly #limit: number;
  /** A text's name, or how many times it ran before it had one. */
  readonly #seen = new Map<string, string | number>();
  #named = 0;
  #off = false;

  constructor(limit = 256) {
    this.#limit = limit;
  }

  /** The name to run `text` under, or `undefined` to run it unnamed. */
  nameOf(text: string, parameters: number): string | undefined {
    if (this.#off || parameters === 0) return undefined;
    const known = this.#seen.get(text);
    if (typeof known === "string") return known;
    if (known === undefined) {
      // Counted once; texts beyond four times the limit are never counted, so the map stays bounded.
      if (this.#seen.size < this.#limit * 4) this.#seen.set(text, 1);
      return undefined;
    }
    if (this.#named >= this.#limit) return undefined;
    const name = `sqlinbox_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`;
    this.#named++;
    this.#seen.set(text, name);
    return name;
  }

  /** Reads a failed statement's error: one a named statement cannot survive turns naming off. */
  failed(error: unknown): void {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === "26000" || code === "42P05") this.#off = true;
  }

  /** Whether statements are still named (false once the server refused a name). */
  get naming(): boolean {
    return !this.#off;
  }
}
