import { fmt } from "./stats.js";
import type { DrainResult } from "./workloads/drain.js";

/** A reason shortened for a table cell; the JSON file keeps it whole. */
export const short = (text: string | undefined, max = 90): string => {
  const t = (text ?? "").replace(/\s+/g, " ");
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

/** A plain-text table: columns padded to their widest cell. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export function drainTable(results: readonly DrainResult[]): string {
  return table(
    ["W1 drain", "N", "jobs/s (median)", "min–max", "stmts/job", "cpu µs/job", "server µs/job"],
    results.map((r) => [
      r.id,
      r.n !== undefined ? String(r.n) : "",
      r.jobsPerSec ? fmt(r.jobsPerSec.median) : r.notAvailable ? `not available: ${short(r.notAvailable)}` : `FAILED: ${short(r.error)}`,
      r.jobsPerSec ? `${fmt(r.jobsPerSec.min)}–${fmt(r.jobsPerSec.max)}` : "",
      r.statementsPerJob !== undefined ? fmt(r.statementsPerJob, 2) : "",
      r.cpuMicrosPerJob !== undefined ? fmt(r.cpuMicrosPerJob, 1) : "",
      r.serverCpuMicrosPerJob !== undefined ? fmt(r.serverCpuMicrosPerJob, 1) : "",
    ]),
  );
}
