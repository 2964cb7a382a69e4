import type { InboxDescription } from "@sqlinbox/core/internal";
import { advisoryKeyOf, dialectFor, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import { operatorFor } from "@sqlinbox/kysely-dialects/operator";
import type { JobBrowseState } from "./job-list.js";
import { BadRequest, heldOf, holdsInRow, type JobTables, plain, policiesOf, type RoutePolicy, tableOf } from "./job-tables.js";

/** How much of a payload, result or header text the job page shows: the first 64 KiB. */
const SHOWN_BYTES = 64 * 1024;

/** A long text as the page shows it: at most `SHOWN_BYTES` of its UTF-8, JSON pretty-printed when it parses. */
export interface ShownText {
  readonly text: string;
  /** Its whole size in bytes (UTF-8). */
  readonly bytes: number;
  /** True when `text` is only the first `SHOWN_BYTES`. */
  readonly cut: boolean;
}

/** One job as its page shows it. */
export interface JobDetail {
  readonly table: string;
  readonly id: string;
  /** `waiting or running` where which of the two cannot be seen from outside (advisory keys on SQLite). */
  readonly state: JobBrowseState | "waiting or running";
  /** A dead letter in a table of its own: that table. */
  readonly deadLetterTable?: string;
  readonly attempt: number | null;
  readonly runAt: string | null;
  readonly leaseUntil: string | null;
  /**
   * Who holds it in work, in words: the lease (its deadline is the worker's token: `leaseUntil`
   * says until when), a session's row lock, a session's advisory key; `null` when nothing does.
   */
  readonly holder: string | null;
  readonly lastError: ShownText | null;
  readonly headers: ShownText | null;
  readonly result: ShownText | null;
  readonly progress: ShownText | null;
  readonly payload: ShownText | null;
  /** Every other column of the real row, as JSON values. */
  readonly columns: Readonly<Record<string, unknown>>;
  /**
   * The policy of the route(s) that run the job (max attempts, timeout, …), as the dashboard's
   * `--module` declares them; empty when it was started without one, or the module exports no queue
   * of the table.
   */
  readonly policies: readonly RoutePolicy[];
  /** The workflow run the job is a step (or a fan-out child) of, with every step of the run; `null` when it is none's. */
  readonly workflow: JobWorkflow | null;
}

/** A workflow run as the job page shows it: the run, which step the job is, and every step of the run. */
export interface JobWorkflow {
  readonly id: string;
  readonly name: string;
  /** `running`, `done`, `failed` or `cancelled`. */
  readonly state: string;
  /** The step this job is, and its fan-out item (`null`: the step itself). */
  readonly step: string;
  readonly item: number | null;
  /** Every step and fan-out child of the run, in step then item order. */
  readonly steps: readonly {
    readonly step: string;
    readonly item: number | null;
    /** `waiting`, `released`, `done`, `failed` or `cancelled`. */
    readonly state: string;
    /** The job it published (its table as the run records it: `schema.table` or the table), once released. */
    readonly jobTable: string | null;
    readonly jobId: string | null;
  }[];
}

/**
 * The workflow run job `id` of `spec`'s table belongs to, read from sqlinbox's workflow table by the
 * job's table and id (its unique index), then the run's rows by its key; `null` when the job is no
 * step of a run, or the database has no workflow table.
 */
export async function workflowOfJob(source: { readonly opened: Pick<JobTables["opened"], "db" | "engine"> }, spec: InboxDescription, id: string): Promise<JobWorkflow | null> {
  const { db, engine } = source.opened;
  const dialect = dialectFor(engine);
  const statements = dialect.workflow;
  const exists = dialect.readFoundColumns((await db.executeQuery(dialect.schema.describeTable(statements.table))).rows).length > 0;
  if (!exists) return null;
  const jobTable = spec.schema === undefined ? spec.table : `${spec.schema}.${spec.table}`;
  const found = (await db.executeQuery(statements.findByJob(jobTable, id))).rows[0];
  if (found === undefined) return null;
  const rows = (await db.executeQuery(statements.readRun(found.workflow_id, false))).rows;
  const own = rows.find((r) => r.step === "");
  const item = (n: unknown) => (Number(n) < 0 ? null : Number(n));
  return {
    id: found.workflow_id,
    name: own?.workflow ?? "",
    state: own?.state ?? "gone",
    step: found.step,
    item: item(found.item),
    steps: rows
      .filter((r) => r.step !== "")
      .map((r) => ({ step: r.step, item: item(r.item), state: r.state, jobTable: r.job_table, jobId: r.job_id === null ? null : String(r.job_id) })),
  };
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

/** A column value as shown text: bytes read as UTF-8, JSON pretty-printed, cut at `SHOWN_BYTES`. */
function shownText(raw: unknown): ShownText | null {
  if (raw === null || raw === undefined) return null;
  let text = raw instanceof Uint8Array ? utf8.decode(raw) : typeof raw === "string" ? raw : JSON.stringify(raw, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null) text = JSON.stringify(parsed, null, 2);
  } catch {
    // Not JSON: shown as it is.
  }
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= SHOWN_BYTES) return { text, bytes, cut: false };
  // Cut on a character boundary: the decoder drops a partial last character.
  const head = new TextDecoder("utf-8", { fatal: false }).decode(Buffer.from(text, "utf8").subarray(0, SHOWN_BYTES)).replace(/\uFFFD$/, "");
  return { text: head, bytes, cut: true };
}

/**
 * One job by id (`GET /api/job`): the whole row (`select *` by primary key), its state told as the
 * list tells it, and its texts shown up to 64 KiB. `dead` looks in the table's dead-letter table.
 */
export async function readJob(source: JobTables, tableName: string | undefined, id: string | undefined, dead: boolean): Promise<JobDetail | null> {
  const table = tableOf(source, tableName);
  if (id === undefined || id === "") throw new BadRequest("send the job's id: /api/job?table=…&id=…");
  const { spec } = table;
  const { db, engine } = source.opened;
  const ops = operatorFor(engine);
  const now = source.opened.now();
  const place = table.deadLetters[0];
  if (dead) {
    if (place?.kind !== "table") throw new BadRequest(`${spec.table} keeps no dead-letter table (dead letters in a group are rows of the table: open them without dead)`);
    const row = (await db.executeQuery(ops.peekDeadLetters(spec, place, 1, [id]))).rows[0];
    return row === undefined
      ? null
      : {
          ...detail(source, place.destination, row, "deadLettered", null, place.destination.table),
          policies: table.policies ?? [],
          // A dead-letter table that keeps the job's own id (not generated) names it as the run knows it: by the source table.
          workflow: place.destination.id.generated ? null : await workflowOfJob(source, spec, id),
        };
  }
  const row = (await db.executeQuery(ops.peek({ spec }, { state: "all", now, ids: [id], limit: 1 }))).rows[0];
  if (row === undefined) return null;
  return { ...(await stateOf(source, table, row, now)), policies: policiesOf(table, row), workflow: await workflowOfJob(source, spec, id) };
}

/** The job page of a row of the table itself, its state told as the list tells it. */
async function stateOf(source: JobTables, table: JobTables["tables"][number], row: RawRow, now: Date): Promise<Omit<JobDetail, "policies" | "workflow">> {
  const { spec } = table;
  const { engine } = source.opened;
  const place = table.deadLetters[0];
  const at = (name: string | undefined) => (name === undefined ? null : plain(engine, spec, name, row[name]));
  const ahead = (name: string | undefined) => {
    const t = at(name);
    return typeof t === "string" && Date.parse(t) > now.getTime();
  };
  if (at(spec.processedAt?.name) !== null) return detail(source, spec, row, "done", null);
  if (place?.kind === "group" && spec.group !== undefined && String(row[spec.group.name]) === place.deadGroup) return detail(source, spec, row, "deadLettered", null);
  if (ahead(spec.lease?.name)) return detail(source, spec, row, "running", `a worker's lease (${spec.lease?.name} holds its token)`);
  if (ahead(spec.retryAfter?.name)) return detail(source, spec, row, "scheduled", null);
  if (holdsInRow(spec)) return detail(source, spec, row, "waiting", null);
  const held = await heldOf(source, spec, [row]);
  if (held === "unknown") return detail(source, spec, row, "waiting or running", "cannot be seen from outside (advisory keys on SQLite live in the application's process)");
  const holder = spec.advisoryKey !== undefined ? `a session holds its advisory key "${advisoryKeyOf(spec, row)}"` : "a session holds its row lock (a claim's open transaction)";
  return held[0] === "held" ? detail(source, spec, row, "running", holder) : detail(source, spec, row, "waiting", null);
}

function detail(
  source: JobTables,
  spec: InboxDescription,
  row: RawRow,
  state: JobDetail["state"],
  holder: string | null,
  deadLetterTable?: string,
): Omit<JobDetail, "policies" | "workflow"> {
  const { engine } = source.opened;
  const value = (c: { name: string } | undefined) => (c === undefined ? null : plain(engine, spec, c.name, row[c.name]));
  const text = (c: { name: string } | undefined) => (c === undefined ? null : shownText(row[c.name]));
  const lastError = spec.lastError?.name ?? ("last_error" in row ? "last_error" : undefined);
  const shown = new Set([spec.id, spec.attempt, spec.failedAttempts, spec.retryAfter, spec.lease, spec.headers, spec.result, spec.progress, spec.payload].map((c) => c?.name));
  shown.add(lastError);
  const columns: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(row)) if (!shown.has(name)) columns[name] = plain(engine, spec, name, raw);
  const attempt = value(spec.attempt ?? spec.failedAttempts) ?? ("attempts" in row ? row["attempts"] : null);
  return {
    table: spec.table,
    id: String(row[spec.id.name]),
    state,
    ...(deadLetterTable !== undefined ? { deadLetterTable } : {}),
    attempt: attempt === null || attempt === undefined ? null : Number(attempt),
    runAt: value(spec.retryAfter) as string | null,
    leaseUntil: value(spec.lease) as string | null,
    holder,
    lastError: text(lastError === undefined ? undefined : { name: lastError }),
    headers: text(spec.headers),
    result: text(spec.result),
    progress: text(spec.progress),
    payload: text(spec.payload),
    columns,
  };
}
