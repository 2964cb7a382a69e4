import { sql, type CompiledQuery } from "kysely";
import type { TableTypes } from "./create-table.js";
import { COMPARE_PRECISION, compiled, type StatementContext } from "./query-db.js";

/** sqlinbox's own table of workflow runs: one row per run, per step, and per fan-out child. */
const WORKFLOW_TABLE = "sqlinbox_workflows";

/**
 * A row of the workflow table. The run's own row has `step` `""` and `item` -1 (its `data` is the
 * input as JSON); a step's row has its name and `item` -1; a fan-out's children have the step's
 * name and their index. `data` holds a done step's or child's result as JSON, and a failed one's reason.
 */
export interface WorkflowRow {
  readonly workflow_id: string;
  readonly step: string;
  readonly item: number;
  readonly workflow: string;
  readonly state: string;
  readonly job_table: string | null;
  readonly job_id: string | null;
  readonly data: string | null;
}

/** What a write changes in one row of the workflow table. */
export interface WorkflowChange {
  readonly state?: string;
  readonly data?: string | null;
  readonly job_table?: string | null;
  readonly job_id?: string | null;
}

/** The workflow table (every engine): created beside the control table, and written in the transactions of the step jobs' acks. */
export interface WorkflowStatements {
  readonly table: string;
  /** `CREATE TABLE IF NOT EXISTS sqlinbox_workflows`, keyed by (workflow_id, step, item), and the unique (job_table, job_id) an ack finds its step through. */
  create(): CompiledQuery[];
  /** Inserts rows (a run starting, a fan-out's children): one statement. */
  insert(rows: readonly WorkflowRow[], now: Date): CompiledQuery;
  /**
   * Locks the run's own row (`SELECT … FOR UPDATE`, where the engine locks rows): every change to a run
   * takes it first, so two acks of one run's steps write one after the other, the second seeing the first's.
   * SQLite has one writer at a time: the ack's write holds it already.
   */
  lockRun(workflowId: string): CompiledQuery<{ readonly state: string }>;
  /**
   * Every row of a run. `locked`: read after `lockRun`, in the same transaction, as a locking read where the
   * engine locks rows (it sees every commit before it, whatever the isolation); else a plain read (a handle's `state()`).
   */
  readRun(workflowId: string, locked: boolean): CompiledQuery<WorkflowRow>;
  /** The step or child a job is (by its table and id as text): what an ack looks up. */
  findByJob(jobTable: string, jobId: string): CompiledQuery<Pick<WorkflowRow, "workflow_id" | "step" | "item" | "state">>;
  /**
   * The runs' own rows, by run id after `after` (a page: keyset on the primary key), of one workflow
   * and in one state when given: what `sqlinbox workflows` lists.
   */
  readRuns(filter: { readonly workflow?: string; readonly state?: string; readonly after?: string; readonly limit: number }): CompiledQuery<WorkflowRow>;
  /** Changes one row, only while it is in state `from`: one row affected, or none. */
  change(workflowId: string, step: string, item: number, from: string, to: WorkflowChange, now: Date): CompiledQuery;
}

/**
 * The workflow table's statements.
 *
 * An ack finds its step by its job's table and id (the unique constraint's index):
 * ```sql postgres:workflow.findByJob
 * select "workflow_id", "step", "item", "state" from "sqlinbox_workflows" where "job_table" = $1 and "job_id" = $2
 * ```
 * then locks the run's own row, so that two acks of one run write one after the other:
 * ```sql mysql:workflow.lockRun
 * select `state` from `sqlinbox_workflows` where `workflow_id` = ? and `step` = ? and `item` = ? for update
 * ```
 */
export function workflowStatements(ctx: StatementContext, types: TableTypes): WorkflowStatements {
  const db = ctx.db;
  const at = (date: Date) => ctx.time.encode(date, COMPARE_PRECISION);
  const locking = ctx.capabilities.rowLock;
  const run = (workflowId: string) => db.selectFrom(WORKFLOW_TABLE).where("workflow_id", "=", workflowId);
  return Object.freeze({
    table: WORKFLOW_TABLE,
    // The three key columns fit one primary key on every engine (MySQL's varchar(255) × 2 and an integer stay under its 3072-byte key limit).
    create: (): CompiledQuery[] => [
      db.schema
        .createTable(WORKFLOW_TABLE)
        .ifNotExists()
        .addColumn("workflow_id", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("step", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("item", sql.raw(types.counter), (c) => c.notNull())
        .addColumn("workflow", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("state", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("job_table", sql.raw(types.indexedText))
        .addColumn("job_id", sql.raw(types.indexedText))
        .addColumn("data", sql.raw(types.longText))
        .addColumn("updated_at", sql.raw(types.time), (c) => c.notNull())
        .addPrimaryKeyConstraint(`${WORKFLOW_TABLE}_pkey`, ["workflow_id", "step", "item"])
        // Each ack of a job finds its step by the job's table and id, a job is one step's at most. A constraint
        // in the table's own statement, not a CREATE INDEX: MySQL has no CREATE INDEX IF NOT EXISTS, and several NULLs (a waiting step) are allowed everywhere.
        .addUniqueConstraint(`${WORKFLOW_TABLE}_job`, ["job_table", "job_id"])
        .compile(),
    ],
    insert: (rows: readonly WorkflowRow[], now: Date): CompiledQuery => compiled(db.insertInto(WORKFLOW_TABLE).values(rows.map((r) => ({ ...r, updated_at: at(now) })))),
    lockRun: (workflowId: string) => {
      const query = run(workflowId).select("state").where("step", "=", "").where("item", "=", -1);
      return compiled(locking ? query.forUpdate() : query);
    },
    readRun: (workflowId: string, locked: boolean) => {
      const query = run(workflowId).select(["workflow_id", "step", "item", "workflow", "state", "job_table", "job_id", "data"]).orderBy("step").orderBy("item");
      return compiled(locked && locking ? query.forUpdate() : query);
    },
    readRuns: (filter: { readonly workflow?: string; readonly state?: string; readonly after?: string; readonly limit: number }) => {
      let query = db
        .selectFrom(WORKFLOW_TABLE)
        .select(["workflow_id", "step", "item", "workflow", "state", "job_table", "job_id", "data"])
        .where("step", "=", "")
        .where("item", "=", -1);
      if (filter.workflow !== undefined) query = query.where("workflow", "=", filter.workflow);
      if (filter.state !== undefined) query = query.where("state", "=", filter.state);
      if (filter.after !== undefined) query = query.where("workflow_id", ">", filter.after);
      return compiled(query.orderBy("workflow_id").limit(filter.limit));
    },
    findByJob: (jobTable: string, jobId: string) =>
      compiled(db.selectFrom(WORKFLOW_TABLE).select(["workflow_id", "step", "item", "state"]).where("job_table", "=", jobTable).where("job_id", "=", jobId)),
    change: (workflowId: string, step: string, item: number, from: string, to: WorkflowChange, now: Date): CompiledQuery =>
      compiled(
        db
          .updateTable(WORKFLOW_TABLE)
          .set({ ...to, updated_at: at(now) })
          .where("workflow_id", "=", workflowId)
          .where("step", "=", step)
          .where("item", "=", item)
          .where("state", "=", from),
      ),
  });
}
