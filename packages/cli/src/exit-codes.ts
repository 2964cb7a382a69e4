/**
 * The exit codes scripts can rely on. Stable: a new failure gets a new number, an old one
 * never changes meaning.
 */
export const ExitCode = Object.freeze({
  /** Done. */
  ok: 0,
  /** The command line is wrong: an unknown option, a missing argument, a table that is not described. */
  usage: 1,
  /** The database cannot be reached, or a table does not match its description (a missing column, a wrong type). */
  cannotConnect: 2,
  /** Nothing matched: no row with that id, no dead letters, no rows in that state. */
  nothingMatched: 3,
  /** A destructive command was not confirmed (declined at the prompt, or no terminal and no `--yes`; a `jobs` write without `--allow-writes`). */
  notConfirmed: 4,
  /** The operation failed part way (a statement failed); chunks already committed stay committed. */
  failed: 5,
  /** Done in part: a bulk action left some rows alone, because a claim held them (in work) or they were not found. */
  partly: 6,
});
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** An error that ends the command with a chosen exit code and a message for the operator. */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCodeValue,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "CliError";
  }
}
