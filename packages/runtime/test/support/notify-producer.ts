/**
 * A producer in a process of its own (`fixtures/notify-producer.ts`), for the tests of wakes across processes
 * (LISTEN/NOTIFY on Postgres, the database file on SQLite): it publishes on each request and reports when.
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { fixtureBundle } from "./fixture-bundles.js";
import { waitFor } from "./sleep.js";

const runtimeRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Starts the producer on `table` (its broker with `.listenNotify()` when `listen`) and waits until it published
 * its first job (`n: 0`) within `connectMs`. `publish()` has it publish the next `n` and resolves with it once
 * published; `published` maps each `n` to the time the producer's publish resolved. `stops` gets the producer's
 * stop, which closes its input and expects it to exit 0 with nothing on stderr.
 */
export async function startNotifyProducer(options: {
  readonly url: string;
  readonly table: string;
  readonly listen: boolean;
  readonly connectMs: number;
  readonly stops: Array<() => Promise<unknown>>;
}): Promise<{ publish: () => Promise<number>; published: Map<number, number> }> {
  const child = spawn(process.execPath, [fixtureBundle("test/support/fixtures/notify-producer.ts")], {
    cwd: runtimeRoot,
    env: { ...process.env, NOTIFY_PRODUCER_URL: options.url, NOTIFY_PRODUCER_TABLE: options.table, NOTIFY_PRODUCER_LISTEN: options.listen ? "1" : "0" },
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  options.stops.push(async () => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    expect(await exited).toBe(0);
    clearTimeout(timer);
    expect(stderr).toBe("");
  });
  const published = new Map<number, number>();
  createInterface({ input: child.stdout }).on("line", (line) => {
    const { n, at } = JSON.parse(line) as { n: number; at: number };
    published.set(n, at);
  });
  if (!(await waitFor(() => published.has(0), options.connectMs))) throw new Error(`the producer did not connect: ${stderr}`);
  let next = 0;
  const publish = async (): Promise<number> => {
    next += 1;
    const n = next;
    child.stdin.write("publish\n");
    if (!(await waitFor(() => published.has(n), 10_000))) throw new Error(`the producer did not publish ${n}: ${stderr}`);
    return n;
  };
  return { publish, published };
}
