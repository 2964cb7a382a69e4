#!/usr/bin/env node
import { CommanderError } from "commander";
import { CliError, ExitCode } from "./exit-codes.js";
import { sqlinboxProgram } from "./program.js";

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
