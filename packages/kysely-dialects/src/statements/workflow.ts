import { sql, type CompiledQuery } from "kysely";
import type { TableTypes } from "./create-table.js";
import type { BatchDelete } from "./retention.js";
import { COMPARE_PRECISION, compiled, type StatementContext } from "./query-db.js";

/** sqlinbox's own table of workflow runs: one row per run, per step, and per fan-out child. */
const WORKFLOW_TABLE = "sqlinbox_workflows";
/** The index retention picks finished runs through: (workflow, state, updated_at), of the runs' own rows where the engine has partial indexes. */
const FINISHED_INDEX = `${WORKFLOW_TABLE}_finished`;

/** Which finished runs one prune deletes (`Workflow.retain`). */
export interface PruneRunsOptions {
  /** The workflow's name. */
  readonly workflow: string;
  /** The run state that goes: `done`, `cancelled` or `failed` (one a statement, so the index gives the runs in time order). */
  readonly state: string;
  /** Runs whose own row last changed before this time go (the runtime's clock). */
  readonly before: Date;
  /** At most this many runs per statement. */
  readonly limit: number;
}

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
  /**
   * Deletes every row (the run's, its steps', its children's) of up to `limit` runs of the workflow in
   * `state` whose own row last changed before `before`, oldest first, picked through the finished-runs index: a finished run's rows never change
   * again, so two pruners at once delete a run once (where rows lock, the pick skips the runs another is deleting).
   */
  pruneRuns(options: PruneRunsOptions): CompiledQuery;
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
export function workflowStatements(ctx: StatementContext, types: TableTypes, batchDelete: BatchDelete): WorkflowStatements {
  const db = ctx.db;
  const at = (date: Date) => ctx.time.encode(date, COMPARE_PRECISION);
  const locking = ctx.capabilities.rowLock;
  const run = (workflowId: string) => db.selectFrom(WORKFLOW_TABLE).where("workflow_id", "=", workflowId);
  return Object.freeze({
    table: WORKFLOW_TABLE,
    // The three key columns fit one primary key on every engine (MySQL's varchar(255) × 2 and an integer stay under its 3072-byte key limit).
    create: (): CompiledQuery[] => {
      const table = db.schema
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
        .compile();
      if (!types.partialIndexes) {
        // MySQL/MariaDB: no CREATE INDEX IF NOT EXISTS (MySQL) and no partial index: the index is declared in the
        // table's own statement, over every row (a step's rows under the run's key are read past by the prune).
        const inline = `, index ${sql.id(FINISHED_INDEX).compile(db).sql} (\`workflow\`, \`state\`, \`updated_at\`))`;
        return [{ ...table, sql: table.sql.replace(/\)$/, inline) }];
      }
      const finished = db.schema
        .createIndex(FINISHED_INDEX)
        .ifNotExists()
        .on(WORKFLOW_TABLE)
        .columns(["workflow", "state", "updated_at"])
        .where(sql.ref("step"), "=", sql.lit(""))
        .compile();
      return [table, finished];
    },
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
    pruneRuns: (options: PruneRunsOptions): CompiledQuery => {
      let pick = db
        .selectFrom(WORKFLOW_TABLE)
        .select("workflow_id")
        .where("workflow", "=", options.workflow)
        .where("state", "=", options.state)
        .where("updated_at", "<", at(options.before))
        // A literal, as the partial index's own predicate: a planner proves the index applies from the text.
        .where("step", "=", sql.lit(""))
        .where("item", "=", -1)
        .orderBy("updated_at")
        .limit(options.limit);
      // Postgres skips the runs another pruner is deleting; MySQL/MariaDB take no lock in a delete's derived table.
      if (locking && batchDelete !== "order by and limit") pick = pick.forUpdate().skipLocked();
      const picked = pick;
      const remove = db.deleteFrom(WORKFLOW_TABLE);
      if (batchDelete === "ids from an array of a select") return compiled(remove.where((eb) => sql<boolean>`${eb.ref("workflow_id")} = any(array(${picked}))`));
      // MySQL/MariaDB refuse a LIMIT in an IN subquery, and would scan the whole table for an IN over a derived table:
      // a delete joined to the picked runs (a derived table, materialized first) reaches each run's rows by the primary key.
      if (batchDelete === "order by and limit") {
        return compiled(remove.using(WORKFLOW_TABLE).innerJoin(picked.as("picked"), "picked.workflow_id", `${WORKFLOW_TABLE}.workflow_id`));
      }
      return compiled(remove.where("workflow_id", "in", picked));
    },
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
