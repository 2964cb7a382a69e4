/** W3's second process: runs a sqlinbox App on the lease table and reports each handler start over IPC. */
import { buildApp, loadRuntime, startApp } from "../systems/sqlinbox.js";
import type { EngineName } from "../types.js";

const wallNow = () => performance.timeOrigin + performance.now();
const engine = process.argv[2] as EngineName;
const send = (m: unknown) => process.send!(m);

const rt = await loadRuntime();
if (typeof rt === "string") {
  send({ error: rt });
  process.exit(1);
}
const notify = engine === "postgres";
const { app, broker } = buildApp(rt, {
  engine,
  form: "lease",
  batch: 1,
  workers: 8,
  listenNotify: notify,
  pollMs: 100,
  handler: (p) => {
    const { i, t } = p as { i: number; t: number };
    send({ i, latency: wallNow() - t });
  },
});
const hasNotify = notify && typeof broker.listenNotify === "function";
const running = await startApp(app);
send({ ready: true, how: hasNotify ? "second process woken by Postgres LISTEN/NOTIFY (polling 100 ms as the fallback)" : "second process, polling every 100 ms" });
process.on("message", async (m: { stop?: boolean }) => {
  if (m.stop) {
    await running.stop();
    process.exit(0);
  }
});
