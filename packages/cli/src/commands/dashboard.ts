import { Command, Option } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import { type CountingOptions, countingOf, positiveInt, withConsole, withCountingOptions, withTableOptions, type TableOptions } from "../session.js";

interface DashboardOptions extends TableOptions, CountingOptions {
  port: number;
  host: string;
  allowWrites?: boolean;
  token?: string;
  sampleEvery: number;
}

/** `sqlinbox dashboard`: serves the web page until SIGINT or SIGTERM. The dashboard package loads only here. */
export function dashboardCommand(): Command {
  return withCountingOptions(
    withTableOptions(new Command("dashboard").description("serve a live web page with the same facts as status, and dead letters to retry"), { json: false }),
  )
    .option("--port <port>", "port to listen on (0: any free port)", (v: string) => (v === "0" ? 0 : positiveInt("--port")(v)), 4300)
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--allow-writes", "allow retrying dead letters from the page (needs --token)")
    .addOption(new Option("--token <token>", "the token write requests must send in the x-sqlinbox-token header").env("SQLINBOX_DASHBOARD_TOKEN"))
    .option("--sample-every <seconds>", "seconds between samples of the charts", positiveInt("--sample-every"), 2)
    .action(async (options: DashboardOptions) => {
      if (options.allowWrites === true && (options.token === undefined || options.token.length < 8)) {
        throw new CliError(ExitCode.usage, "--allow-writes needs --token (at least 8 characters) so that only you can retry from the page");
      }
      await withConsole(
        options,
        async (console) => {
          const { startDashboard } = await import("@sqlinbox/dashboard");
          const server = await startDashboard({
            source: console,
            port: options.port,
            host: options.host,
            writes: options.allowWrites === true ? { token: options.token! } : null,
            sampleEveryMs: options.sampleEvery * 1000,
            jobs: console,
          });
          process.stdout.write(`sqlinbox dashboard on ${server.url} (${options.allowWrites === true ? "writes allowed with the token" : "read-only"})\n`);
          await new Promise<void>((resolve) => {
            process.once("SIGINT", resolve);
            process.once("SIGTERM", resolve);
          });
          await server.close();
        },
        { counting: countingOf(options) },
      );
    });
}
