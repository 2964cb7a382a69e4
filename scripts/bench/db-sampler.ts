import { readdirSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { sql } from "kysely";
import type { AnyDb } from "./db.js";
import type { EngineName, StoreName } from "./types.js";

/**
 * What the database side did during a drain: CPU of its processes (from /proc), commits and fsyncs from its own
 * counters, and what its sessions were waiting on (sampled every `everyMs`). Read-only: it signals nothing.
 */
export interface DbSample {
  /** Wall seconds between `start()` and `end()`. */
  readonly seconds: number;
  /**
   * CPU seconds of the bench database's own backends (Postgres: pids from pg_stat_activity of this database);
   * undefined on MariaDB (one process, threads not mapped to sessions) and for a server on another host.
   */
  readonly sessionCpuSec?: number;
  /** CPU seconds of every server process (all `postgres` processes / `mariadbd`): other databases' sessions included. Undefined for a server on another host. */
  readonly serverCpuSec?: number;
  /** Busy share of all cores (1 − idle − iowait) over the window, from /proc/stat: everything on the machine. */
  readonly machineBusy: number;
  /** Server counter deltas (Postgres pg_stat_wal / pg_stat_bgwriter / pg_stat_database; MariaDB SHOW GLOBAL STATUS). */
  readonly counters: Readonly<Record<string, number>>;
  /** Samples taken, and per wait (`Lock:tuple`, `IO:WALSync`, `row lock wait` …) how many session-samples showed it. */
  readonly samples: number;
  readonly activeSessionSamples: number;
  readonly waits: Readonly<Record<string, number>>;
}

let clkTck: number | undefined;
/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`, 100 on Linux). */
function ticksPerSecond(): number {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** The database server's processes by command name: Postgres runs one per connection under its postmaster. */
const SERVER_PROCESSES: Record<StoreName, readonly string[]> = { postgres: ["postgres"], mariadb: ["mariadbd", "mysqld"], sqlite: [], redis: ["redis-server"] };

/** A process's CPU ticks: its own (utime + stime) and its ended, waited-for children's (cutime + cstime), and its parent. */
function procTicks(pid: number): { own: number; children: number; ppid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // fields after the parenthesised command: state is field 3, ppid 4, utime 14, stime 15, cutime 16, cstime 17
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(fields[1]), own: Number(fields[11]) + Number(fields[12]), children: Number(fields[13]) + Number(fields[14]) };
  } catch {
    return undefined;
  }
}

/** utime + stime of a process in ticks, or undefined when it is gone or unreadable. */
export function cpuTicksOf(pid: number): number | undefined {
  return procTicks(pid)?.own;
}

/**
 * CPU time the local database server has used in all, in µs: `mariadbd`, or every Postgres process plus what the
 * postmaster's ended children used (a backend that closes with its connection moves its time there), so two reads
 * around a drain need no sampling in between. It counts whatever else the server ran meanwhile. `undefined` for
 * SQLite (its CPU is the client's) or where /proc shows no server.
 */
export function serverCpuMicros(engine: StoreName): number | undefined {
  const names = SERVER_PROCESSES[engine];
  if (names.length === 0) return undefined;
  const pids = new Set(pidsNamed(names));
  const procs = [...pids].flatMap((pid) => procTicks(pid) ?? []);
  if (procs.length === 0) return undefined;
  let ticks = 0;
  // A top process (the postmaster, mariadbd) also counts its ended children.
  for (const p of procs) ticks += p.own + (pids.has(p.ppid) ? 0 : p.children);
  return (ticks * 1_000_000) / ticksPerSecond();
}

/** Pids whose command name (/proc/<pid>/comm) is one of `names`. */
export function pidsNamed(names: readonly string[]): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (names.includes(readFileSync(`/proc/${entry}/comm`, "utf8").trim())) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** Whether a database URL names this host (loopback or a Unix socket), where /proc shows the server's processes. */
export function isLocalUrl(url: string): boolean {
  const host = /^[a-z]+:\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^:/?]*)/i.exec(url)?.[1] ?? "";
  return ["", "localhost", "127.0.0.1", "[::1]"].includes(host.toLowerCase()) || /[?&]host=\//.test(url);
}

/** Busy and total ticks of all cores from the first line of /proc/stat. */
export function machineTicks(): { busy: number; total: number } {
  const [, ...v] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
  const n = v.map(Number);
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - n[3]! - n[4]!, total };
}

/** CPU ticks of a set of processes: those alive at the start count from then, those born later from zero. */
class ProcessCpu {
  readonly #first = new Map<number, number>();
  readonly #last = new Map<number, number>();
  constructor(readonly names: readonly string[]) {}
  /** `initial`: the processes alive now count from their current ticks. */
  observe(pids: readonly number[], initial = false): void {
    for (const pid of pids) {
      const t = cpuTicksOf(pid);
      if (t === undefined) continue;
      if (!this.#first.has(pid)) this.#first.set(pid, initial ? t : 0);
      this.#last.set(pid, t);
    }
  }
  observeByName(initial = false): void {
    this.observe(pidsNamed(this.names), initial);
  }
  seconds(): number {
    let ticks = 0;
    for (const [pid, last] of this.#last) ticks += last - this.#first.get(pid)!;
    return ticks / ticksPerSecond();
  }
}

type Counters = Record<string, number>;

const PG_COUNTERS = sql<Counters>`SELECT
  w.wal_records, w.wal_write, w.wal_sync, w.wal_write_time, w.wal_sync_time,
  b.buffers_backend_fsync, b.checkpoints_timed + b.checkpoints_req AS checkpoints,
  d.xact_commit, d.xact_rollback, d.deadlocks
  FROM pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d WHERE d.datname = current_database()`;
const PG_WAITS = sql<{ pid: number; wait: string | null; state: string | null }>`SELECT pid,
  CASE WHEN wait_event_type IS NULL THEN NULL ELSE wait_event_type || ':' || wait_event END AS wait, state
  FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
const PG_LOCKS_WAITING = sql<{ n: string }>`SELECT count(*) AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
  WHERE NOT l.granted AND d.datname = current_database()`;

const MARIADB_STATUS = [
  "Innodb_os_log_fsyncs",
  "Innodb_data_fsyncs", // MariaDB 10.11 has no Innodb_os_log_fsyncs; here this one follows Innodb_log_writes one for one
  "Innodb_log_writes",
  "Innodb_log_waits",
  "Innodb_row_lock_waits",
  "Innodb_row_lock_time",
  "Innodb_deadlocks",
  "Com_commit",
  "Handler_commit",
];
const MARIADB_COUNTERS = sql<{ Variable_name: string; Value: string }>`SHOW GLOBAL STATUS WHERE Variable_name IN (${sql.join(MARIADB_STATUS)})`;
const MARIADB_WAITS = sql<{ state: string | null; n: string }>`SELECT STATE AS state, COUNT(*) AS n FROM information_schema.PROCESSLIST
  WHERE DB = DATABASE() AND COMMAND <> 'Sleep' AND ID <> CONNECTION_ID() GROUP BY STATE`;
const MARIADB_LOCK_WAITS = sql<{ n: string }>`SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX t
  JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()`;

async function readCounters(db: AnyDb, engine: EngineName): Promise<Counters> {
  if (engine === "postgres") {
    const row = (await PG_COUNTERS.execute(db)).rows[0] ?? {};
    return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
  }
  const rows = (await MARIADB_COUNTERS.execute(db)).rows;
  return Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]));
}

/**
 * Samples one engine while a drain runs. `db` is a connection of its own on the bench database
 * (its session is left out of every count). Call `start()` just before the drain, `end()` as it completes,
 * and `counters()` once the workers exited (Postgres backends flush their statistics when they end).
 */
export class DbSampler {
  readonly #serverNames: readonly string[];
  // Each window (`start()` … `end()`) starts from fresh accumulators: one sampler serves every drain of a case.
  #server: ProcessCpu;
  #sessions = new ProcessCpu([]);
  #timer: NodeJS.Timeout | undefined;
  #busy = Promise.resolve();
  #startedAt = 0;
  #seconds = 0;
  #machine0 = { busy: 0, total: 0 };
  #machineBusy = 0;
  #counters0: Counters = {};
  #samples = 0;
  #active = 0;
  #waits: Record<string, number> = {};

  /** `local`: the server runs on this host, so its processes' CPU can be read from /proc (a remote server's pids mean nothing here). */
  constructor(
    readonly db: AnyDb,
    readonly engine: EngineName,
    readonly local: boolean,
    readonly everyMs = 100,
  ) {
    this.#serverNames = SERVER_PROCESSES[engine];
    this.#server = new ProcessCpu(this.#serverNames);
  }

  async start(): Promise<void> {
    this.#server = new ProcessCpu(this.#serverNames);
    this.#sessions = new ProcessCpu([]);
    this.#waits = {};
    this.#samples = 0;
    this.#active = 0;
    this.#counters0 = await readCounters(this.db, this.engine);
    if (this.local) this.#server.observeByName(true);
    if (this.local && this.engine === "postgres") this.#sessions.observe(await this.#backendPids(), true);
    this.#machine0 = machineTicks();
    this.#startedAt = performance.now();
    this.#timer = setInterval(() => {
      this.#busy = this.#busy.then(() => this.#sample()).catch(() => {});
    }, this.everyMs);
  }

  /** The drain completed: stop sampling and read the CPU times (before the workers' sessions end). */
  async end(): Promise<void> {
    clearInterval(this.#timer);
    await this.#busy;
    this.#seconds = (performance.now() - this.#startedAt) / 1000;
    if (this.local && this.engine === "postgres") this.#sessions.observe(await this.#backendPids());
    if (this.local) this.#server.observeByName();
    const m = machineTicks();
    this.#machineBusy = (m.busy - this.#machine0.busy) / Math.max(1, m.total - this.#machine0.total);
  }

  /** Counter deltas since `start()`, and everything `end()` measured. */
  async result(): Promise<DbSample> {
    const c1 = await readCounters(this.db, this.engine);
    const counters = Object.fromEntries(Object.entries(c1).map(([k, v]) => [k, v - (this.#counters0[k] ?? 0)]));
    return {
      seconds: this.#seconds,
      ...(this.local && this.engine === "postgres" ? { sessionCpuSec: this.#sessions.seconds() } : {}),
      ...(this.local ? { serverCpuSec: this.#server.seconds() } : {}),
      machineBusy: this.#machineBusy,
      counters,
      samples: this.#samples,
      activeSessionSamples: this.#active,
      waits: { ...this.#waits },
    };
  }

  async #backendPids(): Promise<number[]> {
    return (await PG_WAITS.execute(this.db)).rows.map((r) => Number(r.pid));
  }

  #count(wait: string, n = 1): void {
    this.#waits[wait] = (this.#waits[wait] ?? 0) + n;
  }

  async #sample(): Promise<void> {
    this.#samples++;
    if (this.engine === "postgres") {
      const rows = (await PG_WAITS.execute(this.db)).rows;
      if (this.local) this.#sessions.observe(rows.map((r) => Number(r.pid)));
      for (const r of rows) {
        if (r.state !== "active") continue;
        this.#active++;
        this.#count(r.wait ?? "CPU (no wait event)");
      }
      const locks = Number((await PG_LOCKS_WAITING.execute(this.db)).rows[0]?.n ?? 0);
      if (locks > 0) this.#count("pg_locks not granted", locks);
    } else {
      for (const r of (await MARIADB_WAITS.execute(this.db)).rows) {
        this.#active += Number(r.n);
        this.#count(`state: ${r.state || "(none)"}`, Number(r.n));
      }
      const lockWaits = Number((await MARIADB_LOCK_WAITS.execute(this.db)).rows[0]?.n ?? 0);
      if (lockWaits > 0) this.#count("INNODB_TRX LOCK WAIT", lockWaits);
    }
  }
}
