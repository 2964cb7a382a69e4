import type { AttemptBucket, CappedCount, StatusReport, TableStatus } from "@sqlinbox/dashboard";
import { count, duration, textTable } from "./text-table.js";

const FORM_LABEL = { lease: "lease", rowLock: "row lock", advisory: "advisory" } as const;

/**
 * The database as an operator names it: `mariadb` for a MariaDB server (the `mysql` dialect runs
 * both), else the dialect's name. The dashboard's page names it the same way.
 */
function engineLabel(report: Pick<StatusReport, "engine" | "server">): string {
  return /^MariaDB\b/i.test(report.server ?? "") ? "mariadb" : report.engine;
}

/** `1:40 2:3 5:1`: rows per attempt count; `+` after it when the histogram is of a large table's sample. */
function attemptsText(buckets: readonly AttemptBucket[], sampled = false): string {
  return buckets.length === 0 ? "—" : `${buckets.map((b) => `${b.attempt}:${b.rows}`).join(" ")}${sampled ? " (+)" : ""}`;
}

/** A count as `count` shows it, or `10,000+` when a large table's count reached its cap and is a lower bound. */
function countOf(table: TableStatus, field: CappedCount) {
  const capped = new Set(table.capped?.atLeast ?? []);
  return (n: number | null): string => (n !== null && capped.has(field) ? `${n.toLocaleString("en-US")}+` : count(n));
}

function deadLetterText(table: TableStatus): string {
  if (table.deadLetters.length === 0) return "no dead letters declared";
  return `dead letters → ${table.deadLetters.map((d) => (d.kind === "table" ? d.table : `group ${d.deadGroup}`)).join(", ")}`;
}

/** The human form of `status`: per table a header, a row per group, expiring leases and notes. */
export function statusText(report: StatusReport, expiringWithinMs: number): string {
  const parts: string[] = [];
  if (report.paused !== undefined && report.paused !== null && report.paused.length > 0) parts.push(`Paused routes: ${report.paused.join(", ")} (sqlinbox resume <route>)`, "");
  for (const table of report.tables) {
    parts.push(`${table.table}  (${FORM_LABEL[table.form]} on ${engineLabel(report)}; ${deadLetterText(table)})`);
    const grouped = table.groups.some((g) => g.group !== null);
    // Only a fifo table has rows waiting behind their group's head: other tables keep their columns.
    const fifo = table.totals.waiting !== null;
    const ready = countOf(table, "ready");
    const waiting = countOf(table, "waiting");
    const inWork = countOf(table, "inWork");
    const delayed = countOf(table, "delayed");
    const dead = countOf(table, "dead");
    const done = countOf(table, "done");
    const atLeast = new Set(table.capped?.atLeast ?? []);
    const age = (ms: number | null) => `${duration(ms)}${ms !== null && atLeast.has("oldestAgeMs") ? "+" : ""}`;
    const rows = table.groups.map((g) => [
      ...(grouped ? [g.group ?? ""] : []),
      ready(g.ready),
      ...(fifo ? [waiting(g.waiting)] : []),
      inWork(g.inWork),
      delayed(g.delayed),
      dead(g.dead),
      done(g.done),
      age(g.oldestAgeMs),
      attemptsText(g.attempts, atLeast.has("attempts")),
    ]);
    if (grouped && table.groups.length > 1) {
      const t = table.totals;
      rows.push(["(all)", ready(t.ready), ...(fifo ? [waiting(t.waiting)] : []), inWork(t.inWork), delayed(t.delayed), dead(t.dead), done(t.done), age(t.oldestAgeMs), ""]);
    }
    if (rows.length === 0) rows.push([...(grouped ? [""] : []), "0", ...(fifo ? ["0"] : []), "0", "0", count(table.totals.dead), count(table.totals.done), "—", "—"]);
    parts.push(textTable([...(grouped ? ["GROUP"] : []), "READY", ...(fifo ? ["WAITING"] : []), "IN WORK", "DELAYED", "DEAD", "DONE", "OLDEST", "ATTEMPTS MADE (n:rows)"], rows));
    if (table.form === "lease") {
      if (table.expiringLeases.length === 0) {
        parts.push(
          `No lease runs out in the next ${duration(expiringWithinMs)}${atLeast.has("expiringLeases") ? ` among the first ${count(table.capped?.cap ?? null)} rows not done` : ""}.`,
        );
      } else {
        parts.push(
          `Leases running out in the next ${duration(expiringWithinMs)}${atLeast.has("expiringLeases") ? ` (among the first ${count(table.capped?.cap ?? null)} rows not done)` : ""}:`,
        );
        parts.push(
          textTable(
            ["ID", ...(grouped ? ["GROUP"] : []), "ATTEMPT", "EXPIRES IN", "LOCKED UNTIL"],
            table.expiringLeases.map((l) => [l.id, ...(grouped ? [l.group ?? ""] : []), count(l.attempt), duration(l.expiresInMs), l.lockedUntil]),
          ),
        );
      }
    }
    if (table.limits !== undefined && table.limits.length > 0) {
      parts.push("Caps and rate limits (across every process):");
      parts.push(
        textTable(
          ["ROUTE", "MAX IN WORK", "IN WORK", "RATE LIMIT", "STARTED IN WINDOW"],
          table.limits.map((l) => [
            l.route,
            l.maxInWork === null ? "—" : String(l.maxInWork),
            l.maxInWork === null ? "—" : count(l.inWork),
            l.rateLimit === null ? "—" : `${l.rateLimit.max} per ${duration(l.rateLimit.perMs)}`,
            l.rateLimit === null ? "—" : count(l.startedInWindow),
          ]),
        ),
      );
    }
    for (const note of table.notes) parts.push(`note: ${note}`);
    parts.push("");
  }
  if (report.schedules !== undefined) parts.push(...schedulesText(report.schedules));
  return parts.join("\n");
}

/** The "schedules" section: each cron schedule running apps recorded, its last and next tick. */
function schedulesText(schedules: NonNullable<StatusReport["schedules"]>): string[] {
  if (schedules.length === 0) return ["Schedules: none recorded (no running app declares app.cron)", ""];
  return [
    "Schedules (app.cron, as running apps recorded them):",
    textTable(
      ["ROUTE", "PATTERN", "ZONE", "LAST TICK", "NEXT TICK", "APP"],
      schedules.map((s) => [s.route, s.pattern, s.timeZone, s.lastTick ?? "—", s.overdue ? `${s.nextTick} (overdue: no app runs it)` : s.nextTick, s.app]),
    ),
    "",
  ];
}
