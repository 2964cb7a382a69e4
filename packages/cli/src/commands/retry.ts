import { Command } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import { retryDeadLetters } from "../inspect/dead-letters.js";
import { oneTable } from "../queue-tables.js";
import { ProgressBar } from "../render/progress-bar.js";
import { positiveInt, printJson, withConsole, withTableOptions, type TableOptions } from "../session.js";

/** `sqlinbox retry <id…>` or `sqlinbox retry --all`: dead letters back into their source, one transaction per chunk. */
export function retryCommand(): Command {
  return withTableOptions(new Command("retry").description("move dead letters back into their source table or group"))
    .argument("[ids...]", "the dead letters to move back")
    .option("--all", "every dead letter of the table (or of --group)")
    .option("--group <group>", "only the dead letters of this source group")
    .option("--chunk <n>", "rows per transaction", positiveInt("--chunk"), 1000)
    .option("--progress", "draw the progress bar even when stderr is not a terminal")
    .action(async (ids: string[], options: TableOptions & { all?: boolean; group?: string; chunk: number; progress?: boolean }) => {
      if ((ids.length === 0) === (options.all !== true)) throw new CliError(ExitCode.usage, "name the dead letters to retry, or pass --all (not both)");
      const showBar = options.json !== true && (options.progress === true || process.stderr.isTTY === true);
      const bar = showBar ? new ProgressBar(process.stderr, "retrying") : undefined;
      const moved = await withConsole(options, (c) =>
        retryDeadLetters(c.opened, oneTable(c.tables, options.table?.[0]), {
          ids: options.all === true ? "all" : ids,
          chunk: options.chunk,
          group: options.group,
          onProgress: bar === undefined ? undefined : (done, total) => bar.update(done, total),
        }),
      );
      // A result goes to stdout, a failure to stderr alone (JSON keeps its object on stdout for scripts).
      const short = ids.length > 0 && moved < ids.length;
      if (options.json === true) printJson({ moved });
      else if (moved > 0 && !short) process.stdout.write(`moved ${moved} dead letter${moved === 1 ? "" : "s"} back\n`);
      if (moved === 0) throw new CliError(ExitCode.nothingMatched, ids.length > 0 ? `no dead letter with id ${ids.join(", ")}` : "there are no dead letters");
      if (short) throw new CliError(ExitCode.nothingMatched, `moved ${moved} of ${ids.length} back: the others are not dead letters`);
    });
}
