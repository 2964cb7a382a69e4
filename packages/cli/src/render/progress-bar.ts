/** Where a progress bar draws: a stream with an optional terminal width. */
export interface ProgressStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/**
 * A one-line progress bar on stderr, redrawn in place on a terminal and printed as whole lines
 * (at most one per 10 %) elsewhere, so a log stays readable.
 */
export class ProgressBar {
  #lastDecile = -1;
  constructor(
    private readonly stream: ProgressStream,
    private readonly label: string,
  ) {}

  update(done: number, total: number): void {
    const ratio = total === 0 ? 1 : Math.min(1, done / total);
    const width = 30;
    const filled = Math.round(ratio * width);
    const text = `${this.label} [${"█".repeat(filled)}${"░".repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${done}/${total}`;
    if (this.stream.isTTY === true) {
      this.stream.write(`\r${text}`);
      if (done >= total) this.stream.write("\n");
      return;
    }
    const decile = Math.floor(ratio * 10);
    if (decile !== this.#lastDecile) {
      this.#lastDecile = decile;
      this.stream.write(`${text}\n`);
    }
  }
}
