import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { InboxSpec, column } from "@sqlinbox/core";
import type { CompiledQuery } from "kysely";
import { describe, expect, test } from "vitest";
import { mysqlDialect, postgresDialect, sqliteDialect } from "../src/index.js";
import { operatorFor } from "../src/operator/index.js";
import { deadJobs, fifoLease, groupedLease, orderedLease, orderedRichRowLock, resultLease, richAdvisory, richLease, seedByHand } from "./support/specs.js";

// Like the Rust original's doctests asserting `sql()`: every SQL block a JSDoc comment shows is
// named (```sql <name>) and compared here with what the statement it names compiles to.

const now = new Date("2024-05-01T12:00:00.123Z");
const until = new Date("2024-05-01T12:01:00.123Z");
const held = { id: 7, held: new Date("2024-05-01T12:00:30.789Z") };
const otherHeld = new Date("2024-05-01T12:00:45.000Z");
const postgresOperator = operatorFor("postgres");
const simpleDone = InboxSpec.table("done_jobs", column("id").generated()).payload(column("payload")).processedAt(column("processed_at")).description;

/** The statement each name in the docs stands for. */
const shown: Readonly<Record<string, () => CompiledQuery | null>> = {
  "postgres:lease.claim(reports)": () => postgresDialect.lease.claim(seedByHand, { limit: 5, now, until, precision: 3 }),
  "postgres:lease.claim(fifo)": () => postgresDialect.lease.claim(fifoLease(), { limit: 5, now, until, precision: 3, group: "g1" }),
  "postgres:lease.claim(ordered)": () => postgresDialect.lease.claim(orderedLease(), { limit: 5, now, until, precision: 3 }),
  "postgres:lease.selectCrowded(ordered)": () => postgresDialect.lease.selectCrowded(orderedLease(), { now }, [7, 8]),
  "sqlite:lease.claim(reports)": () => sqliteDialect.lease.claim(seedByHand, { limit: 5, now, until, precision: 3 }),
  "postgres:lease.settleAck(reports)": () => postgresDialect.lease.settleAck(seedByHand, held, now, 3),
  "postgres:lease.settleAckWithResult(results)": () => postgresDialect.lease.settleAckWithResult(resultLease, held, now, '{"url":"/r/7"}', 3),
  "postgres:lease.writeProgress(results)": () => postgresDialect.lease.writeProgress(resultLease, held, "0.5", 3),
  "mysql:lease.settleRetry(reports, later)": () => mysqlDialect.lease.settleRetry(seedByHand, held, until, 3),
  "mysql:lease.settleSnooze(reports, later)": () => mysqlDialect.lease.settleSnooze(seedByHand, held, until, 3),
  "postgres:rowLock.settleSnooze(reports, later)": () => postgresDialect.rowLock.settleSnooze(seedByHand, 7, until),
  "postgres:lease.settleAckMany(two tokens)": () => postgresDialect.lease.settleAckMany(seedByHand, [held, { id: 8, held: held.held }, { id: 9, held: otherHeld }], now, 3),
  "postgres:rowLock.lockOrderKeys(ordered)": () => postgresDialect.rowLock.lockOrderKeys(orderedRichRowLock(), {}, [7], [0]),
  "mysql:rowLock.lockOrderKeys(ordered)": () => mysqlDialect.rowLock.lockOrderKeys(orderedRichRowLock(), {}, [7], [0]),
  "mysql:rowLock.releaseOrderKeys": () => mysqlDialect.rowLock.releaseOrderKeys(),
  "postgres:rowLock.settleAckMany(reports, three ids)": () => postgresDialect.rowLock.settleAckMany(seedByHand, [7, 8, 9], now),
  "postgres:deadLetter.toTable(reports, dead, held)": () => postgresDialect.deadLetter.toTable(seedByHand, deadJobs, 7, { lastError: "boom", attempts: 3 }, held, 3),
  "mysql:deadLetter.removeMoved(reports, held)": () => mysqlDialect.deadLetter.removeMoved(seedByHand, 7, held, 3),
  "sqlite:deadLetter.toGroup(grouped, held)": () => sqliteDialect.deadLetter.toGroup(groupedLease, 7, "dead", { lastError: "boom", attempts: 3 }, held, 3),
  "postgres:retention.prune(done)": () => postgresDialect.retention.prune(simpleDone, { before: now, limit: 500 }),
  "mysql:retention.prune(done)": () => mysqlDialect.retention.prune(simpleDone, { before: now, limit: 500 }),
  "postgres:advisory.take(rich)": () => postgresDialect.advisory.take(richAdvisory(), 7, now),
  "mysql:advisory.readTaken(rich)": () => mysqlDialect.advisory.readTaken(richAdvisory(), 7),
  "postgres:advisory.tryLock": () => postgresDialect.advisory.tryLock("report_jobs:7", "app"),
  "postgres:advisory.unlock": () => postgresDialect.advisory.unlock("report_jobs:7", "app"),
  "mysql:advisory.tryLock": () => mysqlDialect.advisory.tryLock("report_jobs:7", "app"),
  "mysql:advisory.unlock": () => mysqlDialect.advisory.unlock("report_jobs:7", "app"),
  "postgres:advisory.tryLockMany(two keys)": () => postgresDialect.advisory.tryLockMany(["report_jobs:7", "report_jobs:8"], "app"),
  "postgres:advisory.unlockMany(two keys)": () => postgresDialect.advisory.unlockMany(["report_jobs:7", "report_jobs:8"], "app"),
  "mysql:advisory.tryLockMany(two keys)": () => mysqlDialect.advisory.tryLockMany(["report_jobs:7", "report_jobs:8"], "app"),
  "mysql:advisory.unlockMany(two keys)": () => mysqlDialect.advisory.unlockMany(["report_jobs:7", "report_jobs:8"], "app"),
  "postgres:advisory.takeMany(rich, three ids)": () => postgresDialect.advisory.takeMany(richAdvisory(), [7, 8, 9], now),
  "mysql:advisory.readTakenMany(rich, three ids)": () => mysqlDialect.advisory.readTakenMany(richAdvisory(), [7, 8, 9], now),
  "postgres:notify.listen": () => postgresDialect.notify.listen("sqlinbox_report_jobs"),
  "postgres:notify.unlistenAll": () => postgresDialect.notify.unlistenAll(),
  "postgres:notify.notify": () => postgresDialect.notify.notify("sqlinbox_report_jobs", "emails"),
  "postgres:schema.describeTable": () => postgresDialect.schema.describeTable("report_jobs"),
  "mysql:schema.describeTable": () => mysqlDialect.schema.describeTable("report_jobs"),
  "postgres:schema.serverTime": () => postgresDialect.schema.serverTime(),
  "mysql:schema.serverTime": () => mysqlDialect.schema.serverTime(),
  "sqlite:schema.serverTime": () => sqliteDialect.schema.serverTime(),
  "mysql:schema.cluster[0]": () => mysqlDialect.schema.cluster()[0] ?? null,
  "mysql:schema.cluster[1]": () => mysqlDialect.schema.cluster()[1] ?? null,
  "sqlite:schema.describeTable": () => sqliteDialect.schema.describeTable("report_jobs"),
  "sqlite:fileWake.databaseFile": () => sqliteDialect.fileWake.databaseFile(),
  "sqlite:fileWake.dataVersion": () => sqliteDialect.fileWake.dataVersion(),
  "postgres:schema.filledColumns": () => postgresDialect.schema.filledColumns("report_jobs"),
  "mysql:schema.filledColumns": () => mysqlDialect.schema.filledColumns("report_jobs"),
  "sqlite:schema.filledColumns": () => sqliteDialect.schema.filledColumns("report_jobs"),
  "postgres:schema.uniqueColumns": () => postgresDialect.schema.uniqueColumns("report_jobs"),
  "mysql:schema.uniqueColumns": () => mysqlDialect.schema.uniqueColumns("report_jobs"),
  "sqlite:schema.uniqueColumns": () => sqliteDialect.schema.uniqueColumns("report_jobs"),
  "postgres:operator.countByState(rich lease)": () => postgresOperator.countByState({ spec: richLease(), createdAt: "created_at" }, now),
  "postgres:operator.peek(fifo, ready)": () => postgresOperator.peek({ spec: fifoLease() }, { state: "ready", now, limit: 20 }),
  "mysql:operator.purge(fifo, waiting)": () => operatorFor("mysql").purge({ spec: fifoLease() }, { state: "waiting", now }),
  "postgres:table.create(reports)": () => postgresDialect.table.create(seedByHand)[0] ?? null,
  "postgres:table.create(reports, queueStorage false)": () => postgresDialect.table.create(seedByHand, undefined, { queueStorage: false })[0] ?? null,
  "mysql:table.create(rich lease, index)": () => mysqlDialect.table.create(richLease())[1] ?? null,
  "postgres:flow.createSlotTable": () => postgresDialect.flow.createSlotTable(),
  "postgres:flow.takeRateSlots": () => postgresDialect.flow.takeRateSlots({ name: "rate:report_jobs:reports" }, { max: 10, take: 2, freeBefore: 1000 }, 5000),
  "postgres:flow.oldestStart": () => postgresDialect.flow.oldestStart({ name: "rate:report_jobs:reports" }, 10),
  "postgres:flow.startsSince": () => postgresDialect.flow.startsSince({ name: "rate:report_jobs:reports" }, 10, 1000),
  "postgres:flow.lockCapSlots": () => postgresDialect.flow.lockCapSlots({ name: "cap:report_jobs:reports" }, 3, 1),
  "postgres:flow.waitCapSlot": () => postgresDialect.flow.waitCapSlot({ name: "cap:report_jobs:reports" }, 2),
  "postgres:lockWait.bound": () => postgresDialect.flow.lockWait.bound(1000),
  "postgres:lockWait.unbound": () => postgresDialect.flow.lockWait.unbound(),
  "mysql:lockWait.bound": () => mysqlDialect.flow.lockWait.bound(1000),
  "mysql:lockWait.unbound": () => mysqlDialect.flow.lockWait.unbound(),
  "postgres:flow.countLiveLeases(rich lease)": () => postgresDialect.flow.countLiveLeases(richLease(), { now, group: "g1" }),
  "postgres:control.read": () => postgresDialect.control.read(),
  "postgres:control.recordRoutes": () => postgresDialect.control.recordRoutes(["reports"], "reports-app", now),
  "postgres:workflow.findByJob": () => postgresDialect.workflow.findByJob("ship_jobs", "7"),
  "mysql:workflow.lockRun": () => mysqlDialect.workflow.lockRun("3f0c"),
  "postgres:jobs.read(reports)": () => postgresDialect.jobs.read(seedByHand, 7),
  "mysql:jobs.lockProbe(reports)": () => mysqlDialect.jobs.lockProbe(seedByHand, 7),
  "postgres:operator.heldAdvisoryKeys": () => postgresOperator.heldAdvisoryKeys(["report_jobs:7"], "app"),
  "postgres:operator.countProcessedBetween": () => postgresOperator.countProcessedBetween(simpleDone, now, until),
  "postgres:operator.rowSpan": () => postgresOperator.rowSpan(simpleDone),
  "postgres:operator.cappedDone": () => postgresOperator.cappedDone(simpleDone, 10_000),
  "postgres:operator.idHighWater": () => postgresOperator.idHighWater(simpleDone),
  "mysql:operator.idHighWater": () => operatorFor("mysql").idHighWater(simpleDone),
  "sqlite:operator.idHighWater": () => operatorFor("sqlite").idHighWater(simpleDone),
};

interface Block {
  readonly file: string;
  readonly name: string;
  readonly sql: string;
}

const srcDir = join(import.meta.dirname, "..", "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/** The text of every JSDoc comment of a file, the leading ` * ` of each line removed. */
function docComments(text: string): string[] {
  return [...text.matchAll(/\/\*\*([\s\S]*?)\*\//g)].map((m) =>
    (m[1] ?? "")
      .split("\n")
      .map((line) => line.replace(/^\s*\* ?/, ""))
      .join("\n"),
  );
}

const collapse = (sql: string): string => sql.replace(/\s+/g, " ").trim();

function sqlBlocks(file: string, comments: readonly string[]): Block[] {
  return comments.flatMap((comment) => [...comment.matchAll(/```sql([^\n]*)\n([\s\S]*?)```/g)].map((m) => ({ file, name: (m[1] ?? "").trim(), sql: collapse(m[2] ?? "") })));
}

/** Why a block does not show what its statement emits; `null` when it does. */
function mismatch(block: Block): string | null {
  const build = shown[block.name];
  if (build === undefined) return `no statement is registered for "${block.name}" in doc-sql.test.ts`;
  const query = build();
  if (query === null) return `"${block.name}" builds no statement`;
  return block.sql === query.sql ? null : `${block.file} shows\n  ${block.sql}\nbut "${block.name}" emits\n  ${query.sql}`;
}

const files = sourceFiles(srcDir).map((path) => ({ file: relative(srcDir, path), comments: docComments(readFileSync(path, "utf8")) }));
const blocks: Block[] = files.flatMap(({ file, comments }) => sqlBlocks(file, comments));

describe("SQL shown in JSDoc is the SQL emitted", () => {
  test("the sources show SQL, and every block names its statement", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(Object.keys(shown).length);
    expect(blocks.filter((b) => b.name === "").map((b) => b.file)).toEqual([]);
  });

  test("every named statement of this table is shown somewhere (no stale entries)", () => {
    const names = new Set(blocks.map((b) => b.name));
    expect(Object.keys(shown).filter((name) => !names.has(name))).toEqual([]);
  });

  test.each(blocks.map((b) => [`${b.file}: ${b.name}`, b] as const))("%s", (_label, block) => {
    expect(mismatch(block)).toBeNull();
  });

  test("comments describe other statements in words: no unchecked statement text in inline code", () => {
    // A statement keyword followed by a FROM / SET / WHERE / INTO clause in `code` is SQL text nothing checks.
    const statementLike = /`+ ?(select|insert|update|delete|with) [^`]*\b(from|set|where|into)\b/i;
    const unchecked = files.flatMap(({ file, comments }) =>
      comments
        .map((comment) => comment.replace(/```[\s\S]*?```/g, ""))
        .flatMap((comment) =>
          comment
            .split("\n")
            .filter((line) => statementLike.test(line))
            .map((line) => `${file}: ${line.trim()}`),
        ),
    );
    expect(unchecked).toEqual([]);
  });

  test("the check itself: the drift issue 8 found (one arm per row, where one arm per token is emitted) is caught", () => {
    const source = [
      "/**",
      " * Ack of many leases:",
      " * ```sql postgres:lease.settleAckMany(two tokens)",
      ' * delete from "report_jobs" where ("id" = $1 and "locked_until" = $2) or ("id" = $3 and "locked_until" = $4)',
      ' *   or ("id" = $5 and "locked_until" = $6) returning "id"',
      " * ```",
      " */",
    ].join("\n");
    const [drifted] = sqlBlocks("synthetic.ts", docComments(source));
    expect(drifted?.name).toBe("postgres:lease.settleAckMany(two tokens)");
    expect(mismatch(drifted!)).toContain("emits");
    expect(mismatch({ file: "synthetic.ts", name: "postgres:nothing", sql: "select 1" })).toContain("no statement is registered");
    expect(mismatch({ file: "synthetic.ts", name: "postgres:lease.settleAckMany(two tokens)", sql: shown["postgres:lease.settleAckMany(two tokens)"]!()!.sql })).toBeNull();
  });
});
