/**
 * The advisory keys in work in this process on one database, and the cap places counted in it.
 * The broker owns one per database (`BrokerConnection.keys`) and hands it to every claim on it.
 * Where advisory locks live in the server session (Postgres, MySQL/MariaDB) a claim keeps a registry
 * of its own, which only spares it a connection for a key it already holds; where they live in the
 * process (SQLite) the database's registry *is* the lock, shared by its subscriptions — which is why
 * one SQLite file serves one process.
 */
export class KeyRegistry {
  readonly #keys = new Set<string>();
  readonly #counts = new Map<string, number>();

  /** Keys held now. */
  get size(): number {
    return this.#keys.size;
  }

  /** Whether a delivery of this process holds `key`. */
  has(key: string): boolean {
    return this.#keys.has(key);
  }

  /** Records `key` as held: before its lock is tried, so a claim beside this one passes over its rows. */
  hold(key: string): void {
    this.#keys.add(key);
  }

  /** Forgets `key`: its delivery ended, or its lock was not taken. */
  drop(key: string): void {
    this.#keys.delete(key);
  }

  /** Takes up to `want` of the `n` places counted under `name`: how many it took (fewer: all are held). */
  count(name: string, n: number, want: number): number {
    const held = this.#counts.get(name) ?? 0;
    const taken = Math.max(0, Math.min(want, n - held));
    if (taken > 0) this.#counts.set(name, held + taken);
    return taken;
  }

  /** Gives back `taken` places counted under `name`. */
  uncount(name: string, taken: number): void {
    const held = (this.#counts.get(name) ?? taken) - taken;
    if (held <= 0) this.#counts.delete(name);
    else this.#counts.set(name, held);
  }
}
