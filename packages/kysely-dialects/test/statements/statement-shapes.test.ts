import type { InboxDescription } from "@sqlinbox/core/internal";
import { type CompiledQuery, sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { EngineTraits } from "../../src/forms/engine-traits.js";
import { mysqlEngine } from "../../src/mysql/engine.js";
import { postgresEngine } from "../../src/postgres/engine.js";
import { sqliteEngine } from "../../src/sqlite/engine.js";
import { buildDialect } from "../../src/forms/dialect.js";
import { takenRowQuery, takeQuery } from "../../src/statements/advisory-take.js";
import { stampPickedQuery } from "../../src/statements/claim-stamp.js";
import { selectClaimableQuery } from "../../src/statements/claimable.js";
import { ackManyQuery, paddedIds, releaseUnstartedQuery, selectHeldQuery, tokenGroups } from "../../src/statements/held-leases.js";
import { compiled } from "../../src/statements/query-db.js";
import { ackQuery, lockedAckManyQuery, lockedRetryQuery } from "../../src/statements/settle.js";
import { StatementShapes, Whole } from "../../src/statements/shapes.js";
import type { ClaimOptions, HeldLease } from "../../src/types.js";
import { fifoLease, groupedLease, richAdvisory, richLease, richRowLock, seedByHand, simpleRowLock } from "../support/specs.js";

// Statements compiled once per shape must be exactly what the builder makes from the same values:
// every cached statement is compared with a fresh build, over calls whose values all differ.

const engines: [string, EngineTraits][] = [
  ["postgres", postgresEngine],
  ["mysql", mysqlEngine],
  ["sqlite", sqliteEngine],
];

const at = (ms: number) => new Date(Date.UTC(2024, 4, 1, 12) + ms);
const plain = (q: CompiledQuery | null) => (q === null ? null : { sql: q.sql, parameters: q.parameters });

/** Claim options of call `i`: every value different from the last call's. */
function claimOptions(i: number, shape: { group?: boolean; exclude?: number }): ClaimOptions {
  return {
    limit: 3 + i,
    now: at(1_000 * i + 7),
    ...(shape.group === true ? { group: `g${i}` } : {}),
    ...(shape.exclude !== undefined && shape.exclude > 0 ? { exclude: Array.from({ length: shape.exclude }, (_, k) => 100 * i + k) } : {}),
  };
}

/** Leases of call `i`: `tokens` distinct deadlines, `perToken` ids each. */
function leasesOf(i: number, tokens: number, perToken: number): HeldLease[] {
  const leases: HeldLease[] = [];
  for (let t = 0; t < tokens; t++) for (let k = 0; k < perToken; k++) leases.push({ id: 1_000 * i + 10 * t + k, held: at(60_000 + 1_000 * i + 3 * t) });
  return leases;
}

const claimShapes = [{}, { group: true }, { exclude: 2 }, { group: true, exclude: 3 }];

describe.each(engines)("%s: a statement compiled once per shape equals a fresh build", (_name, engine) => {
  const dialect = buildDialect(engine);
  const ctx = engine.statements;
  const whole = ctx.capabilities.arrayParameters;
  // One parameter per id: each token's list as the dialect pads it (its last id repeated, to a few lengths).
  const groupsOf = (leases: readonly HeldLease[]) => tokenGroups(leases).map((g) => ({ held: g.held, ids: whole ? new Whole(g.ids) : paddedIds(g.ids) }));

  test.each(claimShapes)("lease claims, %o", (shape) => {
    for (const spec of [seedByHand, richLease(), groupedLease, fifoLease()] as InboxDescription[]) {
      if (shape.group === true && spec.group === undefined) continue;
      for (let i = 0; i < 4; i++) {
        // A fifo claim names its group; where it is not one statement it carries the count its lock took.
        const options = spec.fifo ? { ...claimOptions(i, { ...shape, group: true }), ...(ctx.capabilities.rowLock ? { fifoLocked: 2 + i } : {}) } : claimOptions(i, shape);
        const until = at(90_000 + i);
        const precision = 3 + (i % 2) * 3;
        const oneStatement = engine.oneStatementClaim;
        expect(dialect.lease.claimsInOneStatement).toBe(oneStatement !== "select then stamp");
        if (oneStatement !== "select then stamp")
          expect(plain(dialect.lease.claim(spec, { ...options, until, precision }))).toEqual(plain(oneStatement(ctx, spec, options, { until, precision })));
        expect(plain(dialect.lease.selectClaimable(spec, options))).toEqual(
          plain(compiled(selectClaimableQuery(ctx, spec, options, { lock: ctx.capabilities.rowLock ? "skip locked" : "none" }))),
        );
        const ids = Array.from({ length: 1 + (i % 3) }, (_, k) => 50 * i + k);
        expect(plain(dialect.lease.stampClaimed(spec, ids, until, precision))).toEqual(plain(stampPickedQuery(ctx, spec, ids, { until, precision })));
      }
    }
  });

  test.each([
    [1, 1],
    [1, 5],
    [2, 3],
    [3, 1],
    [1, 9],
    [2, 70],
  ])("lease acks, gives back and held checks: %i tokens × %i ids", (tokens, perToken) => {
    for (const spec of [seedByHand, richLease()] as InboxDescription[]) {
      for (let i = 0; i < 4; i++) {
        const leases = leasesOf(i, tokens, perToken);
        const now = at(5_000 + i);
        for (const precision of [3, 6]) {
          expect(plain(dialect.lease.settleAckMany(spec, leases, now, precision))).toEqual(plain(ackManyQuery(ctx, spec, groupsOf(leases), now, precision)));
          expect(plain(dialect.lease.selectHeld(spec, leases, precision))).toEqual(plain(selectHeldQuery(ctx, spec, groupsOf(leases), precision)));
          expect(plain(dialect.lease.releaseUnstarted(spec, leases, precision))).toEqual(plain(releaseUnstartedQuery(ctx, spec, groupsOf(leases), precision)));
        }
      }
    }
  });

  test.runIf(engine.capabilities.rowLock).each(claimShapes)("row-lock claims and settlements, %o", (shape) => {
    const rowLock = dialect.rowLock;
    for (const spec of [richRowLock(), simpleRowLock()]) {
      if (shape.group === true && spec.group === undefined) continue;
      for (let i = 0; i < 4; i++) {
        const options = claimOptions(i, shape);
        const oneStatement = engine.oneStatementClaim;
        const fresh =
          oneStatement !== "select then stamp" && spec.attempt !== undefined
            ? oneStatement(ctx, spec, options, null)
            : compiled(selectClaimableQuery(ctx, spec, options, { lock: "skip locked" }));
        expect(plain(rowLock.claim(spec, options))).toEqual(plain(fresh));
        const ids = [i, i + 1];
        if (!rowLock.countsInClaim) expect(plain(rowLock.countAttempts(spec, ids))).toEqual(plain(stampPickedQuery(ctx, spec, ids, null)));
        expect(plain(rowLock.settleAck(spec, 40 + i, at(i)))).toEqual(plain(ackQuery(ctx, spec, 40 + i, at(i))));
        // Lists of 1, 3, 1 and 3 ids: a shape built for one list is filled with another's values (Postgres: any length).
        const many = Array.from({ length: 1 + (i % 2) * 2 }, (_, k) => 60 + i * 10 + k);
        const manyIds = engine.capabilities.arrayParameters ? new Whole(many) : many;
        if (engine.capabilities.heldRowsAckTogether) expect(plain(rowLock.settleAckMany(spec, many, at(i)))).toEqual(plain(lockedAckManyQuery(ctx, spec, manyIds, at(i))));
        if (spec.retryAfter !== undefined) expect(plain(rowLock.settleRetry(spec, 40 + i, at(7 + i)))).toEqual(plain(lockedRetryQuery(ctx, spec, 40 + i, at(7 + i))));
      }
    }
  });

  test.each(claimShapes)("advisory candidates, takes and settlements, %o", (shape) => {
    const spec = richAdvisory();
    if (shape.group === true && spec.group === undefined) return;
    for (let i = 0; i < 4; i++) {
      const options = claimOptions(i, shape);
      expect(plain(dialect.advisory.selectCandidates(spec, options))).toEqual(plain(compiled(selectClaimableQuery(ctx, spec, options, { lock: "none" }))));
      expect(plain(dialect.advisory.take(spec, 9 + i, at(i)))).toEqual(plain(takeQuery(ctx, spec, 9 + i, at(i))));
      if (!dialect.advisory.takeReturnsRow) expect(plain(dialect.advisory.readTaken(spec, 9 + i))).toEqual(plain(takenRowQuery(ctx, spec, 9 + i)));
      expect(plain(dialect.advisory.settleAck(spec, 9 + i, at(i)))).toEqual(plain(ackQuery(ctx, spec, 9 + i, at(i))));
      expect(plain(dialect.advisory.settleRetry(spec, 9 + i, at(3 + i)))).toEqual(plain(lockedRetryQuery(ctx, spec, 9 + i, at(3 + i))));
    }
  });
});

describe.each(engines)("%s: gathered acks of every count share few texts", (_name, engine) => {
  test("an ack of 1 to 512 leases of one token: one text with array parameters, else 22 (lists padded to a few lengths)", () => {
    const dialect = buildDialect(engine);
    const texts = new Set<string>();
    for (let n = 1; n <= 512; n++) {
      const leases = Array.from({ length: n }, (_, k): HeldLease => ({ id: k + 1, held: at(60_000) }));
      const ack = dialect.lease.settleAckMany(seedByHand, leases, at(5_000), 3);
      texts.add(ack.sql);
      // The padding repeats the last id: the same rows, no other.
      if (!engine.statements.capabilities.arrayParameters) expect(new Set(ack.parameters.filter((p) => typeof p === "number"))).toEqual(new Set(leases.map((l) => l.id)));
    }
    // Up to 8 ids as they are, then multiples of 8 to 64, then of 64 to 512.
    expect(texts.size).toBe(engine.statements.capabilities.arrayParameters ? 1 : 8 + 7 + 7);
  });

  test("paddedIds: lengths 1–8 kept, then the next multiple of 8 to 64, then of 64", () => {
    const lengths = (n: number) => paddedIds(Array.from({ length: n }, (_, k) => k)).length;
    expect([1, 8, 9, 16, 17, 64, 65, 128, 129, 500, 512].map(lengths)).toEqual([1, 8, 16, 16, 24, 64, 128, 128, 192, 512, 512]);
    expect(paddedIds([1, 2, 3, 4, 5, 6, 7, 8, 9])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 9, 9, 9, 9]);
  });
});

describe("StatementShapes", () => {
  const ctx = postgresEngine.statements;

  test("builds a shape once per key and fills every later call", () => {
    const shapes = new StatementShapes(ctx);
    let builds = 0;
    const build = (c: typeof ctx, v: { id: unknown; now: Date }) => {
      builds++;
      return ackQuery(c, seedByHand, v.id, v.now);
    };
    const first = shapes.fill(seedByHand, "ack", { id: 1, now: at(1) }, build);
    const second = shapes.fill(seedByHand, "ack", { id: 2, now: at(2) }, build);
    expect(builds).toBe(1);
    expect(first.sql).toBe(second.sql);
    expect(second.parameters).toEqual([2]);
    expect(plain(second)).toEqual(plain(ackQuery(ctx, seedByHand, 2, at(2))));
  });

  test("refuses a builder that writes a value into the text instead of a parameter", () => {
    const shapes = new StatementShapes(ctx);
    expect(() =>
      shapes.fill(seedByHand, "inlined", { id: 1 }, (c, v) =>
        compiled(
          c.db
            .selectFrom("report_jobs")
            .select("id")
            .where(sql<boolean>`id = ${sql.raw(String(v.id))}`),
        ),
      ),
    ).toThrow(/written into the text/);
  });
});
