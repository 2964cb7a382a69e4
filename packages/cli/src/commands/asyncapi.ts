import { writeFile } from "node:fs/promises";
import { Command } from "commander";
import { asyncApiDocument, type AsyncApiRoute } from "../asyncapi.js";
import { CliError, ExitCode } from "../exit-codes.js";
import { loadModule } from "../load-module.js";

/**
 * `sqlinbox asyncapi`: an AsyncAPI 3.0 document (JSON) of the routes a module declares. Each exported
 * queue or subscriber is a route the service publishes to and subscribes to; a table exported
 * without one is a route under its table's name that the service publishes to. Nothing connects.
 */
export function asyncApiCommand(): Command {
  return new Command("asyncapi")
    .description("print an AsyncAPI 3.0 document (JSON) of the routes a module declares: channels, operations, payload schemas")
    .requiredOption("--module <path>", "a module that exports the table descriptions and the queues or subscribers of the service")
    .option("--title <title>", "the service's title in the document", "sqlinbox service")
    .option("--app-version <version>", "the service's version in the document", "0.0.0")
    .option("--description <text>", "a description of the service")
    .option("--out <file>", "write the document to this file instead of stdout")
    .action(async (options: { module: string; title: string; appVersion: string; description?: string; out?: string }) => {
      const loaded = await loadModule(options.module);
      const subscribed = new Set(loaded.subscriptions.map((s) => s.description.table));
      const routes: AsyncApiRoute[] = [
        ...loaded.subscriptions.map((s) => ({ name: s.route, spec: s.description })),
        // A table no exported queue takes from: published to under its table's name.
        ...[...loaded.tables.values()].filter((d) => !subscribed.has(d.table)).map((d) => ({ name: d.table, spec: d, subscribed: false })),
      ];
      let result: ReturnType<typeof asyncApiDocument>;
      try {
        result = asyncApiDocument(
          { title: options.title, version: options.appVersion, ...(options.description === undefined ? {} : { description: options.description }) },
          routes,
        );
      } catch (error) {
        throw new CliError(ExitCode.usage, `${options.module}: ${(error as Error).message}`, { cause: error });
      }
      for (const [route, source] of result.payloads) {
        if (source.from === "placeholder") process.stderr.write(`sqlinbox asyncapi: ${route}: a placeholder payload schema (${source.why})\n`);
      }
      const text = `${JSON.stringify(result.document, null, 2)}\n`;
      if (options.out === undefined) process.stdout.write(text);
      else await writeFile(options.out, text);
    });
}
