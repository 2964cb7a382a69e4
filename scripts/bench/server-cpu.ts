import { readdirSync, readFileSync } from "node:fs";
import type { EngineName } from "./types.js";

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`: 100 on Linux). */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  readonly pid: number;
  readonly comm: string;
  readonly ppid: number;
  /** utime + stime of the process, in ticks. */
  readonly own: number;
  /** cutime + cstime: its children that ended and were waited for, in ticks. */
  readonly children: number;
}

function procStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // pid (comm) state ppid … : comm may hold spaces, so the fields after it are split from its closing parenthesis.
    const close = text.lastIndexOf(")");
    const comm = text.slice(text.indexOf("(") + 1, close);
    const f = text.slice(close + 2).split(" ");
    // After comm: [0] state, [1] ppid, … [11] utime, [12] stime, [13] cutime, [14] cstime.
    return { pid, comm, ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), children: Number(f[13]) + Number(f[14]) };
  } catch {
    return undefined; // it ended meanwhile
  }
}

/** The server's processes by name: Postgres runs one per connection under its postmaster, MariaDB one with threads. */
const SERVER_COMM: Partial<Record<EngineName, string>> = { postgres: "postgres", mariadb: "mariadbd" };

/**
 * CPU time the database server has used in all, in µs: the server process (MariaDB), or every
 * Postgres process plus what its postmaster's ended children used (a backend that closes with its
 * connection moves its time there). The difference over a drain is what that drain cost the server,
 * including anything else the server ran meanwhile (autovacuum, other clients). `undefined`: an
 * embedded engine (SQLite: its CPU is the client's), or no /proc.
 */
export function serverCpuMicros(engine: EngineName): number | undefined {
  const comm = SERVER_COMM[engine];
  if (comm === undefined) return undefined;
  let pids: number[];
  try {
    pids = readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return undefined;
  }
  const servers = pids.map(procStat).filter((p): p is ProcStat => p !== undefined && p.comm === comm);
  if (servers.length === 0) return undefined;
  const ids = new Set(servers.map((p) => p.pid));
  let ticks = 0;
  for (const p of servers) {
    ticks += p.own;
    // A top process (the postmaster, or mariadbd): its ended children count too.
    if (!ids.has(p.ppid)) ticks += p.children;
  }
  return (ticks * 1_000_000) / TICKS_PER_SECOND;
}
