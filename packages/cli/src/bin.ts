#!/usr/bin/env node
import { CommanderError } from "commander";
import { CliError, ExitCode } from "./exit-codes.js";
import { activeResources, importedModules, opened } from "./load-module.js";
import { sqlinboxProgram } from "./program.js";

/** How long the process may outlive its command before a module that started something is blamed and left. */
const EXIT_GRACE_MS = 1_000;
const atStart = activeResources();

try {
  await sqlinboxProgram().parseAsync(process.argv);
  process.exitCode = ExitCode.ok;
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version end with 0; every other parse error is a usage error.
    process.exitCode = error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  } else if (error instanceof CliError) {
    process.stderr.write(`sqlinbox: ${error.message}\n`);
    process.exitCode = error.exitCode;
  } else {
    process.stderr.write(`sqlinbox: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = ExitCode.failed;
  }
}

// The command is done, and the process ends by itself unless a module it imported keeps it alive (an
// app the module started, a pool, a timer). Then it would never end: say which module, and end it.
const modules = importedModules();
if (modules.length > 0) {
  setTimeout(() => {
    process.stderr.write(
      `sqlinbox: the command is done, but the process is still running ${EXIT_GRACE_MS} ms later (${opened(atStart, activeResources()).join(", ")}), kept alive by what ` +
        `${modules.map((m) => m.path).join(", ")} started when it was imported: exiting. ` +
        "Give --module a module that only describes the tables, so that importing it starts nothing.\n",
    );
    process.exit(process.exitCode === ExitCode.ok ? ExitCode.usage : process.exitCode);
  }, EXIT_GRACE_MS).unref();
}
