import type { InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { QueryResult } from "kysely";
import { isDuplicateKey, type AnyKysely, type Database } from "../drivers/database.js";
import { publishOptionWithoutColumn } from "../errors.js";
import { chunkRows } from "./publish-rows.js";

/** The part of `Database` a publish's statements run through (tracked: a completed statement outside a transaction committed). */
export type PublishDatabase = Pick<Database, "execute" | "dialect">;

/** A row's outcome as the statements give it: the id as the driver read it (`idText` makes it a `Published`). */
export interface Inserted {
  readonly id: unknown;
  readonly created: boolean;
  readonly replaced?: boolean;
}

/**
 * `replace`: each row whose key was held updates the holding row unless that row is in work (its
 * lease runs past now), in order, so the last payload of a key wins. One UPDATE per row, fenced by
 * the lease column: a claim stamping it meanwhile holds the row lock, and exactly one of the two wins.
 */
export async function replaceHeld(
  database: PublishDatabase,
  spec: InboxDescription,
  rows: readonly RawRow[],
  outcome: readonly Inserted[],
  target: AnyKysely | undefined,
  now: Date,
): Promise<Inserted[]> {
  const out: Inserted[] = [];
  for (const [i, published] of outcome.entries()) {
    if (published.created) {
      out.push(published);
      continue;
    }
    const result = await database.execute("publish", database.dialect.publish.replaceKeyed(spec, rows[i] as RawRow, now), target);
    out.push({ ...published, replaced: (result.numAffectedRows ?? 0n) > 0n });
  }
  return out;
}

/** How often a keyed row is tried again when the row holding its key went away (acked) between the insert and the read. */
const KEY_RETRIES = 5;

/**
 * Inserts rows of which some carry a dedup key, in key order (two publishers of the same keys
 * take them in the same order, so they never wait on each other in a circle), or with `inGivenOrder`
 * in the order given, so that their ids follow it (an inbox bridge's messages, in delivery order). Where the engine
 * has RETURNING, one `ON CONFLICT (key) DO NOTHING` insert per chunk, then one read of the ids
 * of the keys it skipped; on MySQL/MariaDB one plain insert per row, a duplicate-key error (1062)
 * meaning the key is held, then a locking read of its id. A key whose row went away between the
 * two (acked meanwhile) is inserted again. No read before a write: the unique index decides.
 */
export async function insertKeyed(
  database: PublishDatabase,
  spec: InboxDescription,
  route: string,
  rows: readonly RawRow[],
  target: AnyKysely | undefined,
  inGivenOrder = false,
): Promise<Inserted[]> {
  const keyColumn = (spec.key as NonNullable<InboxDescription["key"]>).name;
  const keyOf = (row: RawRow): string | undefined => row[keyColumn] as string | undefined;
  const out: Array<Inserted | undefined> = rows.map(() => undefined);
  const given = rows.map((_, i) => i);
  const order = inGivenOrder ? given : given.sort((a, b) => compareKeys(keyOf(rows[a] as RawRow), keyOf(rows[b] as RawRow)));
  // The first row of each key in this call is the one that may insert it; later ones take its outcome.
  const firstOfKey = new Map<string, number>();
  const pending: number[] = [];
  for (const i of order) {
    const key = keyOf(rows[i] as RawRow);
    if (key === undefined || !firstOfKey.has(key)) pending.push(i);
    if (key !== undefined && !firstOfKey.has(key)) firstOfKey.set(key, i);
  }
  const publish = database.dialect.publish;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > KEY_RETRIES) throw publishOptionWithoutColumn(route, spec.table, "a keyed publish kept finding its key held by a row that then went away: try again");
    const missing: number[] = [];
    if (database.dialect.capabilities.insertReturning) {
      let start = 0;
      for (const part of chunkRows(
        pending.map((i) => rows[i] as RawRow),
        database.dialect.capabilities.maxParameters,
      )) {
        const chunk = pending.slice(start, start + part.length);
        start += part.length;
        const inserted = (await database.execute("publish", publish.insertKeyed(spec, part), target)).rows;
        const byKey = new Map<string, unknown>();
        const unkeyedIds: unknown[] = [];
        for (const r of inserted) {
          const key = r[keyColumn];
          if (key === null || key === undefined) unkeyedIds.push(r[spec.id.name]);
          else byKey.set(String(key), r[spec.id.name]);
        }
        for (const i of chunk) {
          const key = keyOf(rows[i] as RawRow);
          if (key === undefined) out[i] = { id: unkeyedIds.shift(), created: true };
          else if (byKey.has(key)) out[i] = { id: byKey.get(key), created: true };
          else missing.push(i);
        }
      }
    } else {
      for (const i of pending) {
        const row = rows[i] as RawRow;
        try {
          const result = await database.execute("publish", publish.insert(spec, [row]), target);
          out[i] = { id: insertedIds(spec, [row], result)[0], created: true };
        } catch (error) {
          if (!isDuplicateKey(error) || keyOf(row) === undefined) throw error;
          missing.push(i);
        }
      }
    }
    pending.length = 0;
    if (missing.length === 0) break;
    const held = (await database.execute("publish", publish.keyedRows(spec, [...new Set(missing.map((i) => keyOf(rows[i] as RawRow) as string))]), target)).rows;
    const heldIds = new Map(held.map((r) => [String(r[keyColumn]), r[spec.id.name]]));
    for (const i of missing) {
      const key = keyOf(rows[i] as RawRow) as string;
      if (heldIds.has(key)) out[i] = { id: heldIds.get(key), created: false };
      else pending.push(i);
    }
  }
  // Later rows of a key take the first row's id: this call inserted it at most once.
  return rows.map((row, i) => {
    const key = keyOf(row);
    const first = key === undefined ? i : (firstOfKey.get(key) as number);
    const outcome = out[first] as Inserted;
    return first === i ? outcome : { id: outcome.id, created: false };
  });
}

function compareKeys(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  return a < b ? -1 : 1;
}

const MAX_SAFE_ID = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The ids of inserted rows: RETURNING where the engine has it, else consecutive from MySQL's insertId
 * (one insert's auto-increment values are consecutive with the default auto_increment_increment of 1),
 * else the ids given.
 */
export function insertedIds(spec: InboxDescription, rows: readonly RawRow[], result: QueryResult<RawRow>): unknown[] {
  const id = spec.id.name;
  if (result.rows.length === rows.length) return result.rows.map((r) => r[id]);
  if (spec.id.generated && result.insertId !== undefined) {
    const first = result.insertId;
    // Numbers while the last id is a safe integer (one check for the statement), else bigints.
    if (first + BigInt(rows.length - 1) <= MAX_SAFE_ID) {
      const at = Number(first);
      return rows.map((_, i) => at + i);
    }
    return rows.map((_, i) => {
      const value = first + BigInt(i);
      return value <= MAX_SAFE_ID ? Number(value) : value;
    });
  }
  return rows.map((r) => r[id]);
}
