/** W3's second process: runs a sqlinbox App on the lease table and reports each handler start over IPC. */
import { loadDialect } from "../systems/dialects.js";
import { buildApp, loadRuntime, startApp } from "../systems/sqlinbox.js";
import type { EngineName } from "../types.js";
import { wallNow } from "../jobs.js";

const engine = process.argv[2] as EngineName;
const send = (m: unknown) => process.send!(m);

const rt = await loadRuntime();
if (typeof rt === "string") {
  send({ error: rt });
  process.exit(1);
}
const notify = engine === "postgres";
// Where processes share the database file (SQLite), a watch of it wakes this one: the poll is only the fallback, so a long one.
const dialect = await loadDialect(engine);
const fileWakes = typeof dialect !== "string" && dialect.capabilities.fileWakes === true;
const pollMs = fileWakes ? 1000 : 100;
const { app, broker } = buildApp(rt, {
  engine,
  form: "lease",
  batch: 1,
  workers: 8,
  listenNotify: notify,
  pollMs,
  handler: (p) => {
    const { i, t } = p as { i: number; t: number };
    send({ i, latency: wallNow() - t });
  },
});
const hasNotify = notify && typeof broker.listenNotify === "function";
const running = await startApp(app);
const how = hasNotify
  ? "second process woken by Postgres LISTEN/NOTIFY (polling 100 ms as the fallback)"
  : fileWakes
    ? "second process woken by a watch of the database file (polling 1 s as the fallback)"
    : "second process, polling every 100 ms";
send({ ready: true, how });
process.on("message", async (m: { stop?: boolean }) => {
  if (m.stop) {
    await running.stop();
    process.exit(0);
  }
});
