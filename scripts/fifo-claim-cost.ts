/**
 * What a fifo claim costs as its group grows (docs/claim-forms.md, "FIFO groups"): the claim locks
 * the group's due rows, so its time grows with them. For each server engine and group size: a
 * lease table holding that many rows in one group (and as many in another), then 30 claims of the
 * group's head, each in a transaction that is rolled back (the table stays as it was), against
 * the same claims on the same table without fifo. Prints the median milliseconds per claim.
 *
 * Run: npx tsx --conditions=@sqlinbox/source scripts/fifo-claim-cost.ts
 * (SQLINBOX_PG_URL / SQLINBOX_MYSQL_URL, default the local `test` databases)
 */
import { InboxSpec, column } from "@sqlinbox/core";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import { fifoRuleApplies } from "@sqlinbox/kysely-dialects/internal";
import { sql, type CompiledQuery } from "kysely";
import { fillTable, median, openServers, type Server } from "./fifo-servers.js";

const SIZES = [10, 100, 1000, 10000];
const CLAIMS = 30;
const TABLE = "fifo_claim_cost";

const DDL: Record<Server["name"], string> = {
  postgres: `create table ${TABLE} (id bigserial primary key, attempt int not null default 1, locked_until timestamptz, priority int not null default 0, grp text not null, payload text not null)`,
  mariadb: `create table ${TABLE} (id bigint auto_increment primary key, attempt int not null default 1, locked_until datetime(3) null, priority int not null default 0, grp varchar(64) not null, payload text not null, key (grp)) engine=InnoDB`,
};

const spec = (fifo: boolean) => {
  const base = InboxSpec.table(TABLE, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .priority(column("priority"))
    .group(column("grp"))
    .payload(column("payload")).description;
  return { ...base, fifo };
};

/** One lease claim of group `g` the way the runtime runs it, in a transaction rolled back; returns its ms. */
async function claimOnce(server: Server, fifo: boolean): Promise<number> {
  const { lease, capabilities } = server.dialect;
  const description = spec(fifo);
  const now = new Date();
  const options = { limit: 1, now, until: new Date(now.getTime() + 30_000), precision: 3, group: "g" };
  let begin = server.db.startTransaction();
  if (capabilities.claimIsolation !== undefined) begin = begin.setIsolationLevel(capabilities.claimIsolation);
  const trx = await begin.execute();
  const run = async (query: CompiledQuery) => (await trx.executeQuery(query)).rows as RawRow[];
  const started = performance.now();
  let claimed: RawRow[];
  if (lease.claimsInOneStatement) claimed = await run(lease.claim(description, options));
  else {
    const fifoLocked = fifoRuleApplies(description, {}) ? (await run(lease.lockFifoGroup(description, options))).length : undefined;
    claimed = await run(lease.selectClaimable(description, { ...options, fifoLocked }));
    await run(
      lease.stampClaimed(
        description,
        claimed.map((r) => r["id"]),
        options.until,
        3,
      ),
    );
  }
  const ms = performance.now() - started;
  await trx.rollback().execute();
  if (claimed.length !== 1) throw new Error(`${server.name}: a claim took ${claimed.length} rows`);
  return ms;
}

const lines: string[] = ["| engine | rows in the group | fifo claim ms (median) | non-fifo claim ms (median) |", "|---|---:|---:|---:|"];
for (const server of openServers()) {
  try {
    for (const size of SIZES) {
      const rows = Array.from({ length: size * 2 }, (_, i) => ({ grp: i % 2 === 0 ? "g" : "h", priority: i % 4, payload: "{}" }));
      await fillTable(server, TABLE, [DDL[server.name]], rows);
      const fifo: number[] = [];
      const plain: number[] = [];
      for (let i = 0; i < CLAIMS; i++) {
        fifo.push(await claimOnce(server, true));
        plain.push(await claimOnce(server, false));
      }
      lines.push(`| ${server.name} | ${size} | ${median(fifo).toFixed(2)} | ${median(plain).toFixed(2)} |`);
    }
    await sql`drop table if exists ${sql.id(TABLE)}`.execute(server.db);
  } finally {
    await server.db.destroy();
  }
}
console.log(lines.join("\n"));
