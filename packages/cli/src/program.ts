import { Command } from "commander";
import { asyncApiCommand } from "./commands/asyncapi.js";
import { cancelCommand, pauseCommand, resumeCommand } from "./commands/control.js";
import { workflowCommand, workflowsCommand } from "./commands/workflows.js";
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
    .description("Look into sqlinbox queue tables: status, jobs, peek, retry, purge, pause, resume, cancel, dashboard; print a table's DDL or an AsyncAPI document")
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
    workflowsCommand(),
    workflowCommand(),
    dashboardCommand(),
    ddlCommand(),
    asyncApiCommand(),
  ]) {
    program.addCommand(command.exitOverride().showHelpAfterError());
  }
  return program;
}
