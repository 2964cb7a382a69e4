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

  /** Counts `work` in progress until it settles. Not an async function: one promise per statement, not two. */
  track<T>(work: () => Promise<T>): Promise<T> {
    this.#pending++;
    this.#version++;
    let started: Promise<T>;
    try {
      started = work();
    } catch (error) {
      this.#ended();
      return Promise.reject(error);
    }
    return started.then(
      (value) => {
        this.#ended();
        return value;
      },
      (error: unknown) => {
        this.#ended();
        throw error;
      },
    );
  }

  #ended(): void {
    this.#pending--;
    this.#version++;
  }

  /** Marks something happening that is not database work (a wake, a delivery start). */
  touch(): void {
    this.#version++;
  }
}
