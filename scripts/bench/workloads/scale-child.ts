/**
 * One worker process of the scale-out workload: a sqlinbox App on the bench table of one form, started when the
 * parent says `go`. Every handled index goes back to the parent over IPC (in chunks), with the wall-clock time of
 * this process's first and last handler call and its CPU time from its first handler call to the stop request
 * (the app's startup and shutdown left out).
 * argv: engine form batch workers
 */
import { buildApp, loadRuntime, startApp, type RunningApp } from "../systems/sqlinbox.js";
import { decodeIndex } from "../jobs.js";
import type { FormName } from "../db.js";
import type { EngineName } from "../types.js";

/** What a child sends: `ready` once built, `ids` while it drains, `done` after its app stopped. */
export type ScaleChildMessage =
  | { readonly ready: true }
  | { readonly ids: readonly number[] }
  | { readonly done: true; readonly firstAt: number; readonly lastAt: number; readonly cpuMicros: number }
  | { readonly error: string };

/** What the parent sends. */
export type ScaleParentMessage = { readonly go: true } | { readonly stop: true };

/** The wall clock as the parent reads it (`Date.now()`: see scale-out.ts). */
const wallNow = () => Date.now();
const [engine, form, batch, workers] = process.argv.slice(2) as [EngineName, FormName, string, string];
const send = (m: ScaleChildMessage) => new Promise<void>((resolve) => process.send!(m, () => resolve()));

const rt = await loadRuntime();
if (typeof rt === "string") {
  await send({ error: rt });
  process.exit(1);
}

let pending: number[] = [];
let firstAt = 0;
let lastAt = 0;
/** CPU usage at the first handler call: the drain's client cost is measured from there. */
let cpu: NodeJS.CpuUsage | undefined;
let drainCpu = 0;
const flush = () => {
  if (pending.length === 0) return Promise.resolve();
  const ids = pending;
  pending = [];
  return send({ ids });
};
const flusher = setInterval(() => void flush(), 50);

const { app } = buildApp(rt, {
  engine,
  form,
  batch: Number(batch),
  workers: Number(workers),
  handler: (payload) => {
    const now = wallNow();
    if (firstAt === 0) {
      firstAt = now;
      cpu = process.cpuUsage();
    }
    lastAt = now;
    pending.push(decodeIndex(payload));
    if (pending.length >= 1_000) void flush();
  },
});

let running: RunningApp | undefined;
process.on("message", async (m: ScaleParentMessage) => {
  try {
    if ("go" in m) {
      running = await startApp(app);
    } else {
      if (cpu) {
        const used = process.cpuUsage(cpu);
        drainCpu = used.user + used.system;
      }
      await running?.stop();
      clearInterval(flusher);
      await flush();
      await send({ done: true, firstAt, lastAt, cpuMicros: drainCpu });
      process.exit(0);
    }
  } catch (e) {
    await send({ error: (e as Error).stack ?? String(e) });
    process.exit(1);
  }
});
// The parent is gone (it crashed or was stopped): stop draining its table rather than run on unobserved.
process.on("disconnect", () => process.exit(1));
await send({ ready: true });
