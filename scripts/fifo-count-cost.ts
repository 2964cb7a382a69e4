/**
 * What `countByState` (the counting pass of `sqlinbox status`, `purge` and the dashboard) costs on
 * a fifo table (packages/kysely-dialects/src/operator/README.md): a lease table with every role and
 * an index on the group column, holding 20,000 due rows in 2,000 groups, counted 10 times after one
 * warm-up run. Prints the median milliseconds per engine, and the counts summed over the groups
 * (the same before and after a change of the statement, or the change is wrong).
 *
 * Run: npx tsx --conditions=@sqlinbox/source scripts/fifo-count-cost.ts
 * (SQLINBOX_PG_URL / SQLINBOX_MYSQL_URL, default the local `test` databases)
 */
import { column, InboxSpec } from "@sqlinbox/core";
import { operatorFor, waitingOf } from "@sqlinbox/kysely-dialects/operator";
import { sql } from "kysely";
import { fillTable, median, openServers, type Server } from "./fifo-servers.js";

const ROWS = 20_000;
const GROUPS = 2_000;
const RUNS = 10;
const TABLE = "fifo_count_cost";

const DDL: Record<Server["name"], readonly string[]> = {
  postgres: [
    `create table ${TABLE} (id bigserial primary key, attempt int not null default 1, locked_until timestamptz, retry_after timestamptz, processed_at timestamptz, priority int not null default 0, grp text not null, payload text not null)`,
    `create index ${TABLE}_grp on ${TABLE} (grp)`,
  ],
  mariadb: [
    `create table ${TABLE} (id bigint auto_increment primary key, attempt int not null default 1, locked_until datetime(3) null, retry_after datetime(3) null, processed_at datetime(3) null, priority int not null default 0, grp varchar(64) not null, payload text not null, key (grp)) engine=InnoDB`,
  ],
};

const spec = {
  ...InboxSpec.table(TABLE, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .retryAfter(column("retry_after"))
    .processedAt(column("processed_at"))
    .priority(column("priority"))
    .group(column("grp"))
    .payload(column("payload")).description,
  fifo: true,
};

const lines: string[] = ["| engine | countByState ms (median of 10) | counts summed over the groups |", "|---|---:|---|"];
for (const server of openServers()) {
  try {
    const rows = Array.from({ length: ROWS }, (_, i) => ({ grp: `g${i % GROUPS}`, priority: i % 3, payload: "{}" }));
    await fillTable(server, TABLE, DDL[server.name], rows);
    const ops = operatorFor(server.engine);
    const ms: number[] = [];
    let counted: Record<string, unknown>[] = [];
    for (let i = 0; i <= RUNS; i++) {
      const started = performance.now();
      counted = (await server.db.executeQuery(ops.countByState({ spec }, new Date()))).rows as Record<string, unknown>[];
      if (i > 0) ms.push(performance.now() - started);
    }
    // Every count column the statement returns, summed: the numbers a change must not move.
    const sums = new Map<string, number>();
    for (const row of counted) {
      for (const [key, value] of Object.entries(row)) {
        if (["grp", "oldest", "max_attempt", "max_id"].includes(key)) continue;
        sums.set(key, (sums.get(key) ?? 0) + Number(value));
      }
      if ("due" in row) sums.set("waiting (due − claimable)", (sums.get("waiting (due − claimable)") ?? 0) + (waitingOf(spec, row) ?? 0));
    }
    lines.push(`| ${server.name} | ${median(ms).toFixed(1)} | ${[...sums].map(([k, v]) => `${k} ${v}`).join(", ")} |`);
    await sql`drop table if exists ${sql.id(TABLE)}`.execute(server.db);
  } finally {
    await server.db.destroy();
  }
}
console.log(lines.join("\n"));
