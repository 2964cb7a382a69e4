import { Command } from "commander";
import { cancelCommand, pauseCommand, resumeCommand } from "./commands/control.js";
import { dashboardCommand } from "./commands/dashboard.js";
import { ddlCommand } from "./commands/ddl.js";
import { jobsCommand } from "./commands/jobs.js";
import { peekCommand } from "./commands/peek.js";
import { purgeCommand } from "./commands/purge.js";
import { retryCommand } from "./commands/retry.js";
import { statusCommand } from "./commands/status.js";

/** The `sqlinbox` command line. */
export function sqlinboxProgram(): Command {
  const program = new Command("sqlinbox")
    .description("Look into sqlinbox queue tables: status, jobs, peek, retry, purge, pause, resume, cancel, dashboard; print a table's DDL")
    .version("0.1.0")
    .showHelpAfterError()
    .exitOverride();
  for (const command of [
    statusCommand(),
    jobsCommand(),
    peekCommand(),
    retryCommand(),
    purgeCommand(),
    pauseCommand(),
    resumeCommand(),
    cancelCommand(),
    dashboardCommand(),
    ddlCommand(),
  ]) {
    program.addCommand(command.exitOverride().showHelpAfterError());
  }
  return program;
}
