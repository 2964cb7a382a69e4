/**
 * What an idle lease subscription costs on MariaDB at each poll interval: `--subscriptions` subscriptions
 * (one route each) poll a lease table of `--rows` handled rows (a processedAt table, nothing claimable) for
 * `--seconds` seconds per interval. Prints, per subscription: statements per second (counted by Kysely's
 * log, transaction statements included), the server's CPU above what it spends with no subscription
 * (mariadbd's utime + stime from /proc, measured first for as long; run it on a quiet machine: every
 * session's work counts) and this process's CPU, in ms per second. Not part of `npm test`.
 *
 *   npx tsx --conditions=@sqlinbox/source scripts/bench/idle-poll.ts [--rows=1000000] [--polls=10,25,50,100] [--subscriptions=10] [--seconds=10]
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { defineInbox, field } from "@sqlinbox/core";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, silentLogger, subscriber } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { analyzeTable, connect } from "./db.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const rows = Number(flag("rows") ?? 1_000_000);
const polls = (flag("polls") ?? "10,25,50,100").split(",").map(Number);
const subscriptions = Number(flag("subscriptions") ?? 10);
const seconds = Number(flag("seconds") ?? 10);
for (const [name, value] of [["rows", rows], ["subscriptions", subscriptions], ["seconds", seconds], ...polls.map((p) => ["polls", p] as const)] as const) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be whole numbers of 1 or more, got ${value}`);
}
if (rows > 1_000_000) throw new Error(`--rows must be at most 1,000,000, got ${rows}`);
const TABLE = "bench_idle";
const spec = defineInbox({
  table: TABLE,
  columns: {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    lockedUntil: field.lease("locked_until"),
    processedAt: field.processedAt("processed_at"),
    payload: field.payload<{ n: number }>(),
  },
});

const setup = connect("mariadb", 2);
await sql`drop table if exists ${sql.id(TABLE)}`.execute(setup);
await createInboxTable(setup, spec);
const digits = sql`(select 0 as d union all select 1 union all select 2 union all select 3 union all select 4 union all select 5 union all select 6 union all select 7 union all select 8 union all select 9)`;
const i = sql`(a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * g.d + 100000 * h.d)`;
await sql`insert into ${sql.id(TABLE)} (payload, processed_at)
  select cast('{}' as binary), now(6) - interval 1 hour
  from ${digits} a cross join ${digits} b cross join ${digits} c cross join ${digits} e cross join ${digits} g cross join ${digits} h
  where ${i} < ${rows}`.execute(setup);
await analyzeTable(setup, "mariadb", TABLE);
const pidFile = String((await sql<{ f: string }>`select @@pid_file as f`.execute(setup)).rows[0]?.f);
const serverPid = Number(readFileSync(pidFile, "utf8").trim());
/** mariadbd's CPU so far, in ms (utime + stime, in clock ticks of 10 ms). */
const serverCpuMs = (): number => {
  const fields = readFileSync(`/proc/${serverPid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

// The server's own CPU with no subscription (purge after the fill, background threads), subtracted below.
const idleFrom = serverCpuMs();
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
const idleServerMsPerS = (serverCpuMs() - idleFrom) / seconds;
const lines: string[] = [];
for (const poll of polls) {
  let statements = 0;
  const db = connect("mariadb", subscriptions + 4, () => void statements++);
  let broker = SqlBroker.fromKysely(db);
  const names = Array.from({ length: subscriptions }, (_, n) => `idle${n}`);
  for (const name of names) broker = broker.route(spec, name);
  const subs = names.map((name) => subscriber(InboxQueue.of(spec, name).lease(30_000).pollInterval(poll), async () => HandlerOutcome.ack()));
  const app = await new App({ name: "idle-poll", version: "0", logger: silentLogger }).withBroker(broker, (b) => subs.reduce((with_, s) => with_.include(s), b)).start();
  await new Promise((resolve) => setTimeout(resolve, 2000));
  statements = 0;
  const server = serverCpuMs();
  const client = process.cpuUsage();
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const elapsed = (performance.now() - started) / 1000;
  const serverMs = serverCpuMs() - server;
  const used = process.cpuUsage(client);
  const per = (v: number) => v / elapsed / subscriptions;
  const serverAboveIdle = Math.max(0, serverMs - idleServerMsPerS * elapsed);
  lines.push(`| ${poll} | ${per(statements).toFixed(1)} | ${per(serverAboveIdle).toFixed(2)} | ${per((used.user + used.system) / 1000).toFixed(2)} |`);
  process.stderr.write(`poll ${poll} ms: ${statements} statements in ${elapsed.toFixed(1)} s\n`);
  await app.stop();
  await db.destroy();
}
await sql`drop table if exists ${sql.id(TABLE)}`.execute(setup);
await setup.destroy();
console.log(
  `MariaDB, ${rows} handled rows, ${subscriptions} idle lease subscriptions, ${seconds} s per interval, load ${loadavg()[0]?.toFixed(2)}; the server idle: ${idleServerMsPerS.toFixed(1)} ms/s of CPU`,
);
console.log("| poll (ms) | statements/s per subscription | server CPU above idle, ms/s per subscription | client CPU ms/s per subscription |");
console.log("|---:|---:|---:|---:|");
for (const line of lines) console.log(line);
