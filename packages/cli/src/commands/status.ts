import { Command } from "commander";
import { statusText } from "../render/status-text.js";
import { type CountingOptions, countingOf, positiveInt, printJson, withConsole, withCountingOptions, withTableOptions, type TableOptions } from "../session.js";

/** `sqlinbox status`: per table and group, rows ready, in work, delayed, dead and done, the oldest age, attempts, expiring leases. */
export function statusCommand(): Command {
  return withCountingOptions(withTableOptions(new Command("status").description("how deep each queue is, what is in work, what is failing")))
    .option("--expiring <seconds>", "list leases that run out within this many seconds", positiveInt("--expiring"), 60)
    .action(async (options: TableOptions & CountingOptions & { expiring: number }) => {
      const within = options.expiring * 1000;
      const report = await withConsole(options, (c) => c.status(), { expiringWithinMs: within, counting: countingOf(options) });
      if (options.json === true) printJson(report);
      else process.stdout.write(statusText(report, within));
    });
}
