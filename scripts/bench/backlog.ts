/**
 * Cost as the backlog grows: the claim and the settle of each form against a table that already holds 10⁴, 10⁵, 10⁶ (and
 * with `--sizes=…` 10⁷) claimable rows, in six shapes, on Postgres, MariaDB and SQLite (SQLite to 10⁶ unless asked):
 *   plain      — id, attempt, payload (and the lease column);
 *   priority   — a priority column, 10 values spread over the rows;
 *   fifo       — a group column with 10,000 groups and `.fifo()`, each claim naming the next group (not the advisory form);
 *   delayed    — 9 rows in 10 carry a retry_after a day ahead, so only a tenth is due;
 *   processed  — a processed_at column and as many processed rows (the older ids) as pending ones, kept 1:1;
 *   ordered    — an order key (`account_id`) with 10,000 keys spread over the ids, so each claim probes its row's key
 *                for the key's head (not the advisory form).
 * The backlog is built with one INSERT … SELECT (Postgres `generate_series`, MariaDB the sequence engine's `seq_1_to_N`,
 * SQLite a recursive CTE), then the indexes a claim of the shape needs, then the planner's statistics (Postgres VACUUM
 * ANALYZE, MariaDB ANALYZE TABLE, SQLite ANALYZE). Each form then runs up to `--claims` claims of one row and settles each
 * (an ack), one connection, the dialect's own statements in the runtime's order, and times the two halves apart.
 * The claims take rows away: up to 10⁵ rows each form gets a freshly built backlog and takes at most a quarter of its due rows
 * (2,000 of 10⁴); above, one build serves every form, and all three take under 1% of it.
 *
 *   npm run bench:backlog -- [--engines=postgres,mariadb,sqlite] [--sizes=10000,100000,1000000] [--shapes=…] [--forms=…] [--claims=2000]
 *
 * Prints a Markdown table, each shape's EXPLAIN at the largest size, and writes bench-results/backlog-<time>.json.
 * The indexes are the ones a claim of the shape reads by (priority, id; group, id; due time, id; the pending rows), created
 * here by hand: the same as the generated DDL proposes for those roles.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { column, InboxSpec, type InboxDescription } from "@sqlinbox/core/internal";
import { advisoryKeyOf, fifoRuleApplies, type EngineDialect, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import { CompiledQuery, sql, type QueryResult } from "kysely";
import { connect, LEASE_PRECISION, type AnyDb, type FormName } from "./db.js";
import { loadDialect } from "./systems/dialects.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const list = (name: string, dflt: readonly string[]) => flag(name)?.split(",").filter(Boolean) ?? dflt;

export const SHAPES = ["plain", "priority", "fifo", "delayed", "processed", "ordered"] as const;
export type Shape = (typeof SHAPES)[number];
const GROUPS = 10_000;
/** Order keys of the ordered shape. */
const KEYS = 10_000;
const LEASE_MS = 30_000;

const engines = list("engines", ["postgres", "mariadb", "sqlite"]) as EngineName[];
const sizes = list("sizes", ["10000", "100000", "1000000"]).map(Number);
const sqliteMax = Number(flag("sqlite-max") ?? 1_000_000);
const shapes = list("shapes", SHAPES) as Shape[];
const forms = list("forms", ["lease", "rowLock", "advisory"]) as FormName[];
const maxClaims = Number(flag("claims") ?? 2_000);
const warmup = 50;
const REBUILD_UP_TO = 100_000;

const log = (m: string) => process.stderr.write(`${m}\n`);
const table = (shape: Shape) => `backlog_${shape}`;

/** The table's description for a form and shape, as an app would declare it. */
export function backlogSpec(form: FormName, shape: Shape): InboxDescription {
  // biome-ignore lint/suspicious/noExplicitAny: the roles are chosen at run time from the shape; each builder step's type rules are for literal chains
  let s: any = InboxSpec.table(table(shape), column("id").generated()).attempt(column("attempt").generated());
  if (form === "lease") s = s.lease(column("locked_until"));
  if (shape === "priority") s = s.priority(column("priority"));
  if (shape === "fifo") s = s.group(column("grp")).fifo();
  if (shape === "delayed") s = s.retryAfter(column("retry_after"));
  if (shape === "processed") s = s.processedAt(column("processed_at"));
  if (shape === "ordered") s = s.orderKey(column("account_id"));
  s = s.payload(column("payload"));
  if (form === "advisory") s = s.advisoryLock("job-{id}");
  return s.description as InboxDescription;
}

function ddl(engine: EngineName, shape: Shape): string {
  const t = table(shape);
  if (engine === "postgres")
    return `create table ${t} (id bigserial primary key, attempt int not null default 1, locked_until timestamptz, priority int not null default 0, grp text, retry_after timestamptz, processed_at timestamptz, account_id bigint, payload text not null)`;
  if (engine === "mariadb")
    return `create table ${t} (id bigint auto_increment primary key, attempt int not null default 1, locked_until datetime(6) null, priority int not null default 0, grp varchar(32) null, retry_after datetime(6) null, processed_at datetime(6) null, account_id bigint null, payload text not null) engine=InnoDB`;
  return `create table ${t} (id integer primary key, attempt integer not null default 1, locked_until text, priority integer not null default 0, grp text, retry_after text, processed_at text, account_id integer, payload text not null)`;
}

/** The indexes a claim of the shape reads by (the plain shape reads the primary key). */
export function indexes(engine: EngineName, shape: Shape): string[] {
  const t = table(shape);
  switch (shape) {
    case "plain":
      return [];
    case "priority":
      return [`create index ${t}_claim on ${t} (priority, id)`];
    case "fifo":
      return [`create index ${t}_group on ${t} (grp, id)`];
    case "delayed":
      // Postgres sorts NULL last by default; the claim asks for never-delayed rows first, so the index says so too.
      return [`create index ${t}_due on ${t} (retry_after${engine === "postgres" ? " asc nulls first" : ""}, id)`];
    case "processed":
      // MariaDB has no partial index: (processed_at, id) reads the NULLs in id order.
      return [engine === "mariadb" ? `create index ${t}_pending on ${t} (processed_at, id)` : `create index ${t}_pending on ${t} (id) where processed_at is null`];
    case "ordered":
      // The head probe: a key's rows in id order; the lease form's probe of the key's latest lease, walked backward
      // (never-leased rows last, so Postgres, which puts NULL last in ascending order, says nulls first).
      return [
        `create index ${t}_order_key on ${t} (account_id, id)`,
        `create index ${t}_order_key_lease on ${t} (account_id, locked_until${engine === "postgres" ? " nulls first" : ""})`,
      ];
  }
}

/** One INSERT … SELECT of the whole backlog (the processed shape: as many processed rows first, then the pending ones). */
function fill(engine: EngineName, shape: Shape, size: number): string {
  const total = shape === "processed" ? 2 * size : size;
  const g = engine === "mariadb" ? "seq" : "g";
  const cat = (a: string, b: string) => (engine === "mariadb" ? `concat(${a}, ${b})` : `${a} || ${b}`);
  const at = (offset: "+1 day" | "-1 hour") =>
    engine === "postgres"
      ? `now() ${offset === "+1 day" ? "+ interval '1 day'" : "- interval '1 hour'"}`
      : engine === "mariadb"
        ? `utc_timestamp(6) ${offset === "+1 day" ? "+ interval 1 day" : "- interval 1 hour"}`
        : `strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '${offset}')`;
  const cols = {
    priority: shape === "priority" ? `(${g} * 7) % 10` : "0",
    grp: shape === "fifo" ? cat("'g'", `((${g} - 1) % ${GROUPS})`) : "null",
    retry_after: shape === "delayed" ? `case when ${g} % 10 = 0 then null else ${at("+1 day")} end` : "null",
    processed_at: shape === "processed" ? `case when ${g} <= ${size} then ${at("-1 hour")} else null end` : "null",
    // 7919 is prime to 10,000: consecutive ids walk every key before one repeats.
    // (Postgres: generate_series gives int4, and 10⁶ × 7919 is past it.)
    account_id: shape === "ordered" ? `(${engine === "postgres" ? `${g}::bigint` : g} * 7919) % ${KEYS}` : "null",
    payload: cat(`'{"i":'`, cat(`${g}`, "'}'")),
  };
  const select = `select ${Object.values(cols).join(", ")}`;
  const into = `insert into ${table(shape)} (${Object.keys(cols).join(", ")})`;
  if (engine === "postgres") return `${into} ${select} from generate_series(1, ${total}) g`;
  if (engine === "mariadb") return `${into} ${select} from seq_1_to_${total}`;
  return `with recursive s(g) as (select 1 union all select g + 1 from s where g < ${total}) ${into} ${select} from s`;
}

async function build(db: AnyDb, engine: EngineName, shape: Shape, size: number): Promise<number> {
  const started = performance.now();
  const t = table(shape);
  await sql.raw(`drop table if exists ${t}`).execute(db);
  await sql.raw(ddl(engine, shape)).execute(db);
  await sql.raw(fill(engine, shape, size)).execute(db);
  for (const statement of indexes(engine, shape)) await sql.raw(statement).execute(db);
  await sql.raw(engine === "postgres" ? `vacuum analyze ${t}` : engine === "mariadb" ? `analyze table ${t}` : `analyze ${t}`).execute(db);
  return performance.now() - started;
}

type Session = { executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> };

/** One claim and its settle, in the runtime's statements for the form; returns the microseconds of each, or null when nothing was claimable. */
type Step = (i: number) => Promise<{ claim: number; settle: number } | null>;

function stepper(engine: EngineName, form: FormName, shape: Shape, size: number, dialect: EngineDialect, conn: Session, database: string): Step {
  const spec = backlogSpec(form, shape);
  const precision = LEASE_PRECISION[engine];
  const run = async (q: CompiledQuery<unknown>) => (await conn.executeQuery(q)) as QueryResult<RawRow>;
  const tx = dialect.transaction;
  // Claim i names group i (g0 … g9999 in turn; fewer groups where the backlog has fewer rows).
  const groupOf = (i: number) => (shape === "fifo" ? { group: `g${i % Math.min(GROUPS, size)}` } : {});
  const us = (from: number) => (performance.now() - from) * 1000;

  if (form === "lease") {
    const L = dialect.lease;
    return async (i) => {
      const now = new Date();
      const until = dialect.time.truncate(new Date(now.getTime() + LEASE_MS), precision);
      const options = { limit: 1, now, until, precision, ...groupOf(i) };
      const t0 = performance.now();
      let rows: readonly RawRow[];
      if (L.claimsInOneStatement) rows = (await run(L.claim(spec, options))).rows;
      else {
        for (const q of tx.begin) await run(q);
        const fifoLocked = fifoRuleApplies(spec, {}) ? (await run(L.lockFifoGroup(spec, options))).rows.length : undefined;
        rows = (await run(L.selectClaimable(spec, { ...options, fifoLocked }))).rows;
        if (rows.length > 0)
          await run(
            L.stampClaimed(
              spec,
              rows.map((r) => r.id),
              until,
              precision,
            ),
          );
        await run(tx.commit);
      }
      // Ordered keys where claims run side by side: the runtime reads the claimed rows' keys once more after the commit.
      const check =
        engine === "sqlite" || rows.length === 0
          ? null
          : L.selectCrowded(
              spec,
              { now },
              rows.map((r) => r.id),
            );
      if (check !== null && (await run(check)).rows.length > 0) throw new Error(`${engine} ${shape} lease: a claimed row's key holds another live lease`);
      const claim = us(t0);
      if (rows.length === 0) return null;
      const t1 = performance.now();
      const acked = await run(L.settleAck(spec, { id: rows[0]!.id, held: until }, new Date(), precision));
      if (Number(acked.numAffectedRows ?? 0n) !== 1) throw new Error(`${engine} ${shape} lease: the ack matched ${acked.numAffectedRows} rows`);
      return { claim, settle: us(t1) };
    };
  }
  if (form === "rowLock") {
    const R = dialect.rowLock!;
    return async (i) => {
      const now = new Date();
      const options = { limit: 1, now, ...groupOf(i) };
      const t0 = performance.now();
      for (const q of tx.begin) await run(q);
      const fifoLocked = fifoRuleApplies(spec, {}) && !R.claimLocksFifoGroup ? (await run(R.lockFifoGroup(spec, options))).rows.length : undefined;
      const rows = (await run(R.claim(spec, { ...options, fifoLocked }))).rows;
      if (rows.length === 0) {
        await run(tx.rollback);
        return null;
      }
      if (spec.attempt !== undefined && !R.countsInClaim)
        await run(
          R.countAttempts(
            spec,
            rows.map((r) => r.id),
          ),
        );
      const claim = us(t0);
      const t1 = performance.now();
      await run(R.settleAck(spec, rows[0]!.id, new Date()));
      await run(tx.commit);
      return { claim, settle: us(t1) };
    };
  }
  const A = dialect.advisory;
  const heldKeys = new Set<string>();
  return async (i) => {
    const now = new Date();
    const t0 = performance.now();
    const [row] = (await run(A.selectCandidates(spec, { limit: 1, now, ...groupOf(i) }))).rows;
    if (row === undefined) return null;
    const key = advisoryKeyOf(spec, row);
    const sessionLocks = dialect.capabilities.advisoryLocks === "session";
    if (sessionLocks) {
      if (!Number((await run(A.tryLock(key, database))).rows[0]?.locked)) throw new Error(`${engine} ${shape} advisory: the key of ${row.id} is held`);
    } else heldKeys.add(key);
    // The take returns the row it counted (RETURNING), or the engine reads it back on the key's session, as the runtime does.
    const taken = await run(A.take(spec, row.id, now));
    const matched = A.takeReturnsRow ? taken.rows.length : Number(taken.numAffectedRows ?? 0n);
    if (matched !== 1) throw new Error(`${engine} ${shape} advisory: take matched ${matched} rows`);
    if (!A.takeReturnsRow && (await run(A.readTaken(spec, row.id))).rows.length !== 1) throw new Error(`${engine} ${shape} advisory: the taken row ${row.id} did not read back`);
    const claim = us(t0);
    const t1 = performance.now();
    await run(A.settleAck(spec, row.id, new Date()));
    if (sessionLocks) await run(A.unlock(key, database));
    else heldKeys.delete(key);
    return { claim, settle: us(t1) };
  };
}

/**
 * The claim statement of the shape's lease form (the select on MySQL/MariaDB), with the rows it read: Postgres EXPLAIN ANALYZE
 * in a rolled-back transaction, MariaDB ANALYZE (the select alone, its locks released at once), SQLite EXPLAIN QUERY PLAN.
 */
async function explain(engine: EngineName, shape: Shape, dialect: EngineDialect, conn: Session): Promise<string> {
  const spec = backlogSpec("lease", shape);
  const now = new Date();
  const precision = LEASE_PRECISION[engine];
  const options = { limit: 1, now, until: dialect.time.truncate(new Date(now.getTime() + LEASE_MS), precision), precision, ...(shape === "fifo" ? { group: "g1" } : {}) };
  // MySQL/MariaDB: the select after lockFifoGroup, given the number of rows that lock would take (the group's rows).
  const L = dialect.lease;
  if (L.claimsInOneStatement) return explainQuery(engine, L.claim(spec, options), conn);
  const fifoLocked = fifoRuleApplies(spec, {}) ? (await conn.executeQuery(L.lockFifoGroup(spec, options))).rows.length : undefined;
  return explainQuery(engine, L.selectClaimable(spec, { ...options, fifoLocked }), conn);
}

async function explainQuery(engine: EngineName, q: CompiledQuery, conn: Session): Promise<string> {
  if (engine === "postgres") {
    await conn.executeQuery(CompiledQuery.raw("begin"));
    try {
      const r = await conn.executeQuery(CompiledQuery.raw(`explain (analyze, costs off, timing off, summary off) ${q.sql}`, [...q.parameters]));
      return r.rows.map((x) => String(Object.values(x as object)[0])).join("\n");
    } finally {
      await conn.executeQuery(CompiledQuery.raw("rollback"));
    }
  }
  // MariaDB's ANALYZE runs the select and reports the rows each step actually read (r_rows) beside the estimate.
  const prefix = engine === "mariadb" ? "analyze" : "explain query plan";
  const r = await conn.executeQuery(CompiledQuery.raw(`${prefix} ${q.sql}`, [...q.parameters]));
  return r.rows
    .map((x) => {
      const o = x as Record<string, unknown>;
      return engine === "mariadb"
        ? `${o.select_type} ${o.table} type=${o.type} key=${o.key ?? "-"} rows=${o.rows} r_rows=${o.r_rows ?? "-"} ${o.Extra ?? ""}`
        : `${o.id}/${o.parent} ${o.detail}`;
    })
    .join("\n");
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

interface Row {
  engine: EngineName;
  shape: Shape;
  form: FormName;
  size: number;
  claims: number;
  claimP50: number;
  claimP99: number;
  claimMean: number;
  settleP50: number;
  settleMean: number;
  buildMs: number;
}

const rows: Row[] = [];
const failures: { engine: EngineName; shape: Shape; error: string }[] = [];
const explains: { engine: EngineName; shape: Shape; size: number; plan: string }[] = [];
const started = new Date();
const loadAtStart = loadavg();
for (const engine of engines) {
  const dialect = await loadDialect(engine);
  if (typeof dialect === "string") {
    log(`${engine}: not available: ${dialect}`);
    continue;
  }
  const db = connect(engine, 1);
  try {
    await db.connection().execute(async (conn) => {
      const database = String((await conn.executeQuery(dialect.schema.currentDatabase())).rows[0]?.name ?? "");
      const engineSizes = sizes.filter((n) => engine !== "sqlite" || n <= sqliteMax);
      for (const shape of shapes) {
        // A shape that fails is reported and the run goes on with the next one.
        try {
          for (const size of engineSizes) {
            const due = shape === "delayed" ? size / 10 : size;
            const warm = Math.min(warmup, Math.floor(due / 40));
            const claims = Math.max(10, Math.min(maxClaims, Math.floor(due / 4) - warm));
            let buildMs = 0;
            for (const form of forms) {
              if (form === "rowLock" && !dialect.capabilities.rowLock) continue;
              if (form === "advisory" && (shape === "fifo" || shape === "ordered")) continue; // neither fifo nor an order key is an advisory table's shape
              // A fresh backlog per form up to 10⁵ rows (a form takes up to a quarter of the due rows); above, one build serves
              // every form, whose claims take under 1% of it.
              if (buildMs === 0 || size <= REBUILD_UP_TO) {
                buildMs = await build(conn as AnyDb, engine, shape, size);
                log(`${engine} ${shape} ${size}: built in ${(buildMs / 1000).toFixed(1)} s`);
              }
              const step = stepper(engine, form, shape, size, dialect, conn, database);
              // Each form starts at the next groups (at 10⁴ a group holds one row, which an earlier form may have taken).
              const offset = size <= REBUILD_UP_TO ? 0 : forms.indexOf(form) * (claims + warm);
              const claim: number[] = [];
              const settle: number[] = [];
              for (let i = 0; i < claims + warm; i++) {
                const r = await step(offset + i);
                if (r === null) throw new Error(`${engine} ${shape} ${form} ${size}: claim ${i} found nothing`);
                if (i >= warm) {
                  claim.push(r.claim);
                  settle.push(r.settle);
                }
              }
              const row: Row = {
                engine,
                shape,
                form,
                size,
                claims,
                claimP50: pct(claim, 0.5),
                claimP99: pct(claim, 0.99),
                claimMean: mean(claim),
                settleP50: pct(settle, 0.5),
                settleMean: mean(settle),
                buildMs,
              };
              rows.push(row);
              log(`  ${form}: claim p50 ${row.claimP50.toFixed(0)} µs (mean ${row.claimMean.toFixed(0)}), settle p50 ${row.settleP50.toFixed(0)} µs, ${claims} claims`);
            }
            if (size === Math.max(...engineSizes)) explains.push({ engine, shape, size, plan: await explain(engine, shape, dialect, conn) });
          }
        } catch (e) {
          log(`${engine} ${shape}: FAILED: ${(e as Error).message}`);
          failures.push({ engine, shape, error: (e as Error).message });
        }
        await sql.raw(`drop table if exists ${table(shape)}`).execute(conn as AnyDb);
      }
    });
  } finally {
    await db.destroy();
  }
}

const fmt = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–");
const out: string[] = [];
out.push(
  `Backlog growth — ${started.toISOString()}; load ${loadAtStart.map((x) => x.toFixed(2)).join(" ")} → ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}; claims of 1 row, one connection`,
);
out.push("");
const shown = [...new Set(rows.map((r) => r.size))].sort((a, b) => a - b);
out.push(
  `| engine | shape | form | ${shown.map((n) => `claim µs p50 @ ${n.toExponential(0).replace("e+", "e")}`).join(" | ")} | largest ÷ smallest | ${shown.map((n) => `settle µs @ ${n.toExponential(0).replace("e+", "e")}`).join(" | ")} |`,
);
out.push(`|---|---|---|${shown.map(() => "---:").join("|")}|---:|${shown.map(() => "---:").join("|")}|`);
const keys = [...new Set(rows.map((r) => `${r.engine}|${r.shape}|${r.form}`))];
for (const k of keys) {
  const [engine, shape, form] = k.split("|");
  const of = rows.filter((r) => r.engine === engine && r.shape === shape && r.form === form);
  const at = (n: number) => of.find((r) => r.size === n);
  const first = of[0]!;
  const last = of[of.length - 1]!;
  out.push(
    `| ${engine} | ${shape} | ${form} | ${shown.map((n) => fmt(at(n)?.claimP50 ?? Number.NaN)).join(" | ")} | ${(last.claimP50 / first.claimP50).toFixed(2)}× | ${shown
      .map((n) => fmt(at(n)?.settleP50 ?? Number.NaN))
      .join(" | ")} |`,
  );
}
for (const e of explains) {
  out.push("");
  out.push(`${e.engine} ${e.shape} at ${e.size.toLocaleString("en-US")} rows (lease claim):`);
  out.push("```");
  out.push(e.plan);
  out.push("```");
}
for (const f of failures) out.push(`\n${f.engine} ${f.shape}: FAILED: ${f.error}`);
console.log(out.join("\n"));
mkdirSync("bench-results", { recursive: true });
const file = join("bench-results", `backlog-${started.toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(
  file,
  `${JSON.stringify({ command: `npm run bench:backlog -- ${argv.join(" ")}`.trim(), started: started.toISOString(), loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadavg(), rows, explains, failures }, null, 2)}\n`,
);
log(`results: ${file}`);
