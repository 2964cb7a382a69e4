/**
 * What one refresh of the dashboard (and one `sqlinbox status`) costs on a large queue table: a lease table with a
 * processedAt column is filled with `--rows` rows (half handled, 5 % leased, the rest ready) by one INSERT … SELECT,
 * analyzed, then the operator console the dashboard serves from reads its status `--refreshes` times. Prints the
 * statements per refresh and the refresh's median and slowest time per engine. Then a page of the job browser's
 * search in the payloads (each ~150 bytes of JSON) for a text no row holds: the page reads its whole window of 10,000
 * ready rows (its worst case), in two statements (the window's end, then the page). Not part of `npm test`.
 *
 *   npx tsx scripts/bench/dashboard-refresh.ts [--engines=postgres,mariadb,sqlite] [--rows=1000000] [--refreshes=10] [--keep]
 *
 * `--keep` leaves the filled table (bench_dashboard) in place, to EXPLAIN its statements by hand.
 */
import { loadavg } from "node:os";
import { OperatorConsole, openDatabase, resolveTables } from "@sqlinbox/cli";
import { defineInbox, field } from "@sqlinbox/core";
import { dialectFor, payloadSearch, SEARCH_WINDOW } from "@sqlinbox/kysely-dialects/internal";
import { createInboxTable } from "@sqlinbox/runtime";
import { type KyselyPlugin, sql } from "kysely";
import { analyzeTable, connect, urlOf } from "./db.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const engines = (flag("engines") ?? "postgres,mariadb,sqlite").split(",").filter(Boolean) as EngineName[];
const rows = Number(flag("rows") ?? 1_000_000);
const refreshes = Number(flag("refreshes") ?? 10);
if (!Number.isInteger(rows) || rows < 1 || rows > 1_000_000) throw new Error(`--rows must be a whole number from 1 to 1,000,000, got ${flag("rows")}`);
const TABLE = "bench_dashboard";

const spec = defineInbox({
  table: TABLE,
  columns: {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    locked_until: field.lease(),
    processed_at: field.processedAt(),
    payload: field.payload<{ n: number }>(),
  },
});

const times = {
  postgres: {
    past: sql`now() - interval '1 hour'`,
    future: sql`now() + interval '1 hour'`,
    bytes: (i: unknown) => sql`convert_to('{"customer":"c' || ${i} || '","note":"' || repeat('x', 120) || '"}', 'UTF8')`,
  },
  mariadb: {
    past: sql`now(6) - interval 1 hour`,
    future: sql`now(6) + interval 1 hour`,
    bytes: (i: unknown) => sql`cast(concat('{"customer":"c', ${i}, '","note":"', repeat('x', 120), '"}') as binary)`,
  },
  sqlite: {
    past: sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour')`,
    future: sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 hour')`,
    bytes: (i: unknown) => sql`cast('{"customer":"c' || ${i} || '","note":"' || printf('%.120c', 'x') || '"}' as blob)`,
  },
} as const;

async function fill(engine: EngineName): Promise<void> {
  const db = connect(engine, 2);
  try {
    await sql`drop table if exists ${sql.id(TABLE)}`.execute(db);
    await createInboxTable(db, spec);
    const t = times[engine];
    const digits = sql`(select 0 as d union all select 1 union all select 2 union all select 3 union all select 4 union all select 5 union all select 6 union all select 7 union all select 8 union all select 9)`;
    const i = sql`(a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * g.d + 100000 * h.d)`;
    await sql`insert into ${sql.id(TABLE)} (payload, locked_until, processed_at)
      select ${t.bytes(i)}, case when ${i} % 20 = 1 then ${t.future} else null end, case when ${i} % 2 = 0 then ${t.past} else null end
      from ${digits} a cross join ${digits} b cross join ${digits} c cross join ${digits} e cross join ${digits} g cross join ${digits} h
      where ${i} < ${rows}`.execute(db);
    await analyzeTable(db, engine, TABLE);
  } finally {
    await db.destroy();
  }
}

async function measure(engine: EngineName): Promise<{ statements: number; ms: number[] }> {
  const opened = await openDatabase(urlOf(engine));
  let statements = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      statements++;
      return args.result;
    },
  };
  const counted = { ...opened, db: opened.db.withPlugin(counter) };
  try {
    const tables = await resolveTables(counted, { tables: [TABLE] });
    const console_ = new OperatorConsole(counted, tables);
    for (let w = 0; w < 2; w++) await console_.status();
    statements = 0;
    const ms: number[] = [];
    for (let r = 0; r < refreshes; r++) {
      const started = performance.now();
      await console_.status();
      ms.push(performance.now() - started);
    }
    return { statements: statements / refreshes, ms };
  } finally {
    await opened.db.destroy();
  }
}

/** A searched page of ready jobs from the start, for a text no payload holds (2 warm-up pages): the type, the window's end, the page. */
async function searchTimes(engine: EngineName): Promise<number[]> {
  const opened = await openDatabase(urlOf(engine));
  try {
    const { jobs } = dialectFor(opened.engine);
    const description = spec.description;
    const ms: number[] = [];
    for (let r = 0; r < refreshes + 2; r++) {
      const started = performance.now();
      const search = await payloadSearch(opened.db, opened.engine, description, "absent-text");
      const filter = { rows: "due" as const, now: opened.now(), limit: 50 };
      const end = (await opened.db.executeQuery(jobs.listWindowEnd(description, filter, SEARCH_WINDOW))).rows[0]?.id;
      const found = (await opened.db.executeQuery(jobs.list(description, { ...filter, search: { ...search, through: end } }))).rows;
      if (found.length !== 0 || end === undefined) throw new Error(`the search found ${found.length} rows, window end ${String(end)}: the fill is not what this measures`);
      if (r >= 2) ms.push(performance.now() - started);
    }
    return ms;
  } finally {
    await opened.db.destroy();
  }
}

const lines: string[] = [];
for (const engine of engines) {
  const started = performance.now();
  await fill(engine);
  process.stderr.write(`${engine}: ${rows} rows filled and analyzed in ${Math.round(performance.now() - started)} ms\n`);
  const { statements, ms } = await measure(engine);
  const sorted = [...ms].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] as number;
  const searched = (await searchTimes(engine)).sort((a, b) => a - b);
  lines.push(
    `| ${engine} | ${statements.toFixed(1)} | ${median.toFixed(1)} | ${(sorted.at(-1) as number).toFixed(1)} | ${(searched[Math.floor(searched.length / 2)] as number).toFixed(1)} | ${(searched.at(-1) as number).toFixed(1)} |`,
  );
  if (argv.includes("--keep")) continue;
  const db = connect(engine, 1);
  await sql`drop table if exists ${sql.id(TABLE)}`.execute(db);
  await db.destroy();
}
console.log(`${rows} rows (half handled, 5 % leased), ${refreshes} refreshes after 2 warm-up ones, load ${loadavg()[0]?.toFixed(2)}`);
console.log("| engine | statements per refresh | refresh median (ms) | slowest (ms) | searched page median (ms) | slowest (ms) |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const line of lines) console.log(line);
