import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The built bin: the tests run exactly what `npm install @sqlinbox/cli` puts on the PATH (build first). */
const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

export interface BinResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `node dist/bin.js …args` as a child process; `input` is written to its stdin, which is then closed.
 * With `timeoutMs`, a child still running then is killed and the promise rejects: a command that never ends fails.
 */
export function sqlinbox(args: readonly string[], options: { input?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<BinResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...options.env }, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            child.kill("SIGKILL");
            reject(new Error(`sqlinbox ${args.join(" ")} still running after ${options.timeoutMs} ms:\n${stdout}${stderr}`));
          }, options.timeoutMs);
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
}

/** Runs the bin and parses its `--json` output, failing with its stderr when it did not exit 0. */
export async function sqlinboxJson<T>(args: readonly string[]): Promise<T> {
  const result = await sqlinbox([...args, "--json"]);
  if (result.code !== 0) throw new Error(`sqlinbox ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}
