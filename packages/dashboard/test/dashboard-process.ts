import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The `sqlinbox` bin of the sibling cli package (built): the dashboard is started the way an operator starts it. */
export const BIN = fileURLToPath(new URL("../../cli/dist/bin.js", import.meta.url));

export interface DashboardProcess {
  readonly url: string;
  stop(): Promise<void>;
}

/** Runs `sqlinbox dashboard --port 0 …args` and waits for the line that names its URL. */
export function startDashboardProcess(args: readonly string[]): Promise<DashboardProcess> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [BIN, "dashboard", "--port", "0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error(`the dashboard did not start in 30 s: ${out}${err}`)), 30_000);
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.on("exit", (code) => reject(new Error(`the dashboard exited with ${code}: ${err}`)));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const url = /on (http:\/\/\S+)/.exec(out)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      resolve({
        url,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            child.once("exit", () => done());
            child.kill("SIGTERM");
          }),
      });
    });
  });
}
