/**
 * Counts the runtime's database work in progress, so a test can wait until everything the
 * last clock step started has finished (`TestApp.settle`).
 */
export class Activity {
  #pending = 0;
  #version = 0;

  get pending(): number {
    return this.#pending;
  }
  /** Moves at every begin and end: unchanged across a turn means nothing happened. */
  get version(): number {
    return this.#version;
  }

  async track<T>(work: () => Promise<T>): Promise<T> {
    this.#pending++;
    this.#version++;
    try {
      return await work();
    } finally {
      this.#pending--;
      this.#version++;
    }
  }

  /** Marks something happening that is not database work (a wake, a delivery start). */
  touch(): void {
    this.#version++;
  }
}
