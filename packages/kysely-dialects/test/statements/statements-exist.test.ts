/**
 * Every statement a caller builds exists: what an engine or a table lacks is a trait the caller
 * reads first, and a statement built against its trait refuses, naming the trait. Checked three ways:
 * - on the sources of every package: no statement type (a `CompiledQuery`, a `…Statements` group, a
 *   function building one) shares a union with `null`, and no interface member holding or building
 *   one is optional or `| undefined`;
 * - on each engine: each trait says exactly whether its statement builds;
 * - at the type level (`statements-exist.test-d.ts`): no member of a statement group returns `null`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { column, InboxSpec } from "@sqlinbox/core/internal";
import ts from "typescript";
import { describe, expect, test } from "vitest";
import { mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect } from "../../src/index.js";
import { operatorFor } from "../../src/operator/index.js";
import { builds } from "../support/render.js";
import { fifoLease, fifoRowLock, idAdvisory, orderedLease, orderedRichRowLock, richAdvisory, seedByHand, simpleRowLock } from "../support/specs.js";

const packages = join(import.meta.dirname, "..", "..", "..");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith(".ts") && !name.endsWith(".d.ts") ? [path] : [];
  });
}

const STATEMENT_TYPE = /^(?:CompiledQuery|\w+Statements|OneStatementClaim)$/;

/** A type that is a statement, a group of them, a list of them, or a function that builds one. */
function isStatementType(node: ts.TypeNode): boolean {
  if (ts.isParenthesizedTypeNode(node)) return isStatementType(node.type);
  if (ts.isTypeReferenceNode(node)) return STATEMENT_TYPE.test(node.typeName.getText());
  if (ts.isFunctionTypeNode(node)) return isStatementType(node.type);
  if (ts.isArrayTypeNode(node)) return isStatementType(node.elementType);
  if (ts.isTypeOperatorNode(node)) return isStatementType(node.type);
  return false;
}

const isKeyword = (node: ts.TypeNode, kind: ts.SyntaxKind): boolean => node.kind === kind || (ts.isLiteralTypeNode(node) && node.literal.kind === kind);

/** Where a statement may be absent in `text`: `file:line: the type`. */
function absentStatements(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const report = (node: ts.Node) => found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText().replace(/\s+/g, " ")}`);
  const isMember = (node: ts.Node) => ts.isPropertySignature(node) || ts.isMethodSignature(node);
  const visit = (node: ts.Node): void => {
    if (ts.isUnionTypeNode(node) && node.types.some(isStatementType)) {
      const withNull = node.types.some((t) => isKeyword(t, ts.SyntaxKind.NullKeyword));
      // `| undefined` in the type of an interface member (a class's own state may be unset, a member the caller reads may not).
      const withUndefined = node.types.some((t) => isKeyword(t, ts.SyntaxKind.UndefinedKeyword)) && isMember(node.parent);
      if (withNull || withUndefined) report(node);
    }
    if (isMember(node) && node.questionToken !== undefined) {
      const type = ts.isMethodSignature(node) ? node.type : (node as ts.PropertySignature).type;
      if (type !== undefined && isStatementType(type)) report(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("no statement is typed as possibly absent", () => {
  test("the check finds what it must and passes what it may", () => {
    const finds = [
      "export function lockCapSlotsQuery(ctx: Ctx, n: number): CompiledQuery<{ slot: unknown }> | null { return null; }",
      "interface A { countAttempts(spec: S, ids: readonly unknown[]): CompiledQuery | null; }",
      "interface B { readonly rowLock: RowLockStatements | null; }",
      "interface C { readonly releaseOrderKeys: CompiledQuery | undefined; }",
      "interface D { lockFifoGroup?(spec: S): CompiledQuery<RawRow>; }",
      "interface E { readonly held: ((keys: readonly string[]) => CompiledQuery<{ key: string }>) | null; }",
      "type F = { readonly notify?: NotifyStatements };",
      "const g = (): null | CompiledQuery => null;",
    ];
    const passes = [
      "export function claim(ctx: Ctx, lease: LeaseStamp | null): CompiledQuery<RawRow> { return q; }",
      "class H { #release: CompiledQuery | undefined; }",
      "interface I { toTable(held?: HeldLease, precision?: number): CompiledQuery; }",
      "interface J { readonly precision: number | null; readonly storage?: QueueStorage; }",
      'interface K { readonly release: CompiledQuery | "with the transaction"; }',
    ];
    for (const sample of finds) expect(absentStatements("sample.ts", sample), sample).toHaveLength(1);
    for (const sample of passes) expect(absentStatements("sample.ts", sample), sample).toEqual([]);
  });

  test("holds in packages/*/src", () => {
    const files = readdirSync(packages)
      .map((name) => join(packages, name, "src"))
      .filter((dir) => statSync(dir, { throwIfNoEntry: false })?.isDirectory() === true)
      .flatMap(sources);
    expect(files.length).toBeGreaterThan(100); // the scan still reads every package's sources
    const found = files.flatMap((path) => absentStatements(relative(packages, path), readFileSync(path, "utf8")));
    expect(found).toEqual([]);
  });
});

const dialects: ReadonlyArray<readonly [string, EngineDialect]> = [
  ["postgres", postgresDialect],
  ["mysql", mysqlDialect],
  ["sqlite", sqliteDialect],
];
const now = new Date("2024-05-01T12:00:00.000Z");
const held = { id: 7, held: now };
const place = { name: "cap:jobs:s" };
const keyed = InboxSpec.table("jobs", column("id").generated()).payload(column("payload")).key(column("job_key")).description;
const bare = InboxSpec.table("bare", column("id").generated()).payload(column("payload")).description;

describe.each(dialects)("%s: each trait says whether its statement builds", (engine, d) => {
  const { capabilities } = d;

  test("engine traits", () => {
    expect(builds(() => d.rowLock.claim(simpleRowLock(), { limit: 1, now }))).toBe(capabilities.rowLock);
    expect(builds(() => d.rowLock.settleAck(simpleRowLock(), 7, now))).toBe(capabilities.rowLock);
    expect(builds(() => d.lease.claim(seedByHand, { limit: 1, now, until: now, precision: 3 }))).toBe(d.lease.claimsInOneStatement);
    expect(builds(() => d.lease.lockFifoGroup(fifoLease(), { limit: 1, now, group: "g" }))).toBe(!d.lease.claimsInOneStatement);
    expect(builds(() => d.advisory.tryLock("k", "db"))).toBe(capabilities.advisoryLocks === "session");
    expect(builds(() => d.advisory.unlock("k", "db"))).toBe(capabilities.advisoryLocks === "session");
    expect(builds(() => d.advisory.readTaken(richAdvisory(), 7))).toBe(!d.advisory.takeReturnsRow);
    expect(builds(() => d.advisory.tryLockMany(["k", "l"], "db"))).toBe(capabilities.advisoryLocks === "session");
    expect(builds(() => d.advisory.unlockMany(["k", "l"], "db"))).toBe(capabilities.advisoryLocks === "session");
    expect(builds(() => d.advisory.readTakenMany(richAdvisory(), [7, 8], now))).toBe(!d.advisory.takeReturnsRow);
    expect(builds(() => d.publish.insertKeyed(keyed, [{ payload: "p", job_key: "k" }]))).toBe(capabilities.insertReturning);
    expect(builds(() => d.flow.takeRateSlots(place, { max: 2, take: 1, freeBefore: 0 }, 1))).toBe(capabilities.updateReturning);
    expect(builds(() => d.flow.lockCapSlots(place, 2, 1))).toBe(capabilities.rowLock);
    expect(builds(() => d.flow.waitCapSlot(place, 1))).toBe(capabilities.rowLock);
    expect(builds(() => d.flow.lockWait.bound(1000))).toBe(capabilities.rowLock);
    expect(builds(() => d.flow.lockWait.unbound())).toBe(capabilities.rowLock);
    expect(builds(() => d.control.lockQueued(seedByHand, 7))).toBe(capabilities.rowLock);
    expect(builds(() => d.jobs.lockProbe(seedByHand, 7))).toBe(capabilities.rowLock);
    expect(builds(() => d.jobs.keyHeld("k", "db"))).toBe(capabilities.advisoryLocks === "session");
    expect(builds(() => d.jobs.lockProbeMany(seedByHand, [7, 8]))).toBe(capabilities.rowLock);
    expect(builds(() => d.jobs.keysHeld(["k"], "db"))).toBe(capabilities.advisoryLocks === "session");
    expect(builds(() => d.notify.notify("c"))).toBe(capabilities.listenNotify);
    const ops = operatorFor(capabilities.engine);
    expect(builds(() => ops.lockableProbe(simpleRowLock(), now))).toBe(capabilities.rowLock);
    expect(builds(() => ops.heldAdvisoryKeys(["k"], "db"))).toBe(capabilities.advisoryLocks === "session");
  });

  test.runIf(d.capabilities.rowLock)("row-lock traits", () => {
    const { rowLock } = d;
    expect(builds(() => rowLock.countAttempts(simpleRowLock(), [1]))).toBe(!rowLock.countsInClaim);
    expect(builds(() => rowLock.lockFifoGroup(fifoRowLock(), { limit: 1, now, group: "g" }))).toBe(!rowLock.claimLocksFifoGroup);
    expect(builds(() => rowLock.releaseOrderKeys())).toBe(rowLock.orderKeyLocksOutliveTransaction);
    expect(builds(() => rowLock.settleAckMany(simpleRowLock(), [1], now))).toBe(capabilities.heldRowsAckTogether);
  });

  test("what the table lacks refuses with Declaration, naming it", () => {
    const lacks = (build: () => unknown, what: RegExp) => expect(build).toThrow(what);
    if (capabilities.rowLock) {
      lacks(() => d.rowLock.lockOrderKeys(simpleRowLock(), {}, [7], [0]), /^Declaration: no rowLock.lockOrderKeys statement for this table: it has no ordered key/);
      lacks(() => d.rowLock.uncountAttempts(bare, [7]), /^Declaration: no rowLock.uncountAttempts statement for this table: it has no attempt column/);
      if (!d.rowLock.countsInClaim) lacks(() => d.rowLock.countAttempts(bare, [7]), /^Declaration: no rowLock.countAttempts statement for this table: it has no attempt column/);
      expect(() => d.rowLock.lockOrderKeys(orderedRichRowLock(), {}, [7], [0])).not.toThrow();
    }
    if (!d.lease.claimsInOneStatement)
      lacks(() => d.lease.lockFifoGroup(seedByHand, { limit: 1, now }), /^Declaration: no lockFifoGroup statement for this table: its fifo rule does not apply/);
    lacks(() => d.lease.selectCrowded(seedByHand, { now }, [7]), /^Declaration: no lease.selectCrowded statement for this table/);
    expect(() => d.lease.selectCrowded(orderedLease(), { now }, [7])).not.toThrow();
    lacks(() => operatorFor(capabilities.engine).attemptHistogram(bare), /^Declaration: no operator.attemptHistogram statement for this table: it has no attempt column/);
    lacks(
      () => operatorFor(capabilities.engine).expiringLeases(idAdvisory(), now, now, 1),
      /^Declaration: no operator.expiringLeases statement for this table: it has no lease column/,
    );
    expect(d.lease.settleRetry(seedByHand, held, null, 3).sql).toContain("locked_until");
  });

  test("an engine's refusal names the engine and the trait to read", () => {
    if (!d.lease.claimsInOneStatement) {
      expect(() => d.lease.claim(seedByHand, { limit: 1, now, until: now, precision: 3 })).toThrow(
        `UnsupportedForm: no lease.claim statement on ${engine}: it claims in two statements, selectClaimable then stampClaimed (lease.claimsInOneStatement is false)`,
      );
    }
    if (!capabilities.rowLock) expect(() => d.rowLock.claim(simpleRowLock(), { limit: 1, now })).toThrow(/capabilities\.rowLock is false/);
    if (!capabilities.listenNotify) expect(() => d.notify.listen("c")).toThrow(/capabilities\.listenNotify is false/);
  });
});

test("the traits, side by side", () => {
  const traits = (d: EngineDialect) => ({
    rowLock: d.capabilities.rowLock
      ? { countsInClaim: d.rowLock.countsInClaim, claimLocksFifoGroup: d.rowLock.claimLocksFifoGroup, orderKeyLocksOutliveTransaction: d.rowLock.orderKeyLocksOutliveTransaction }
      : "NOT_SUPPORTED",
    lease: { claimsInOneStatement: d.lease.claimsInOneStatement },
    advisory: { takeReturnsRow: d.advisory.takeReturnsRow },
  });
  expect(Object.fromEntries(dialects.map(([name, d]) => [name, traits(d)]))).toEqual({
    postgres: {
      rowLock: { countsInClaim: true, claimLocksFifoGroup: true, orderKeyLocksOutliveTransaction: false },
      lease: { claimsInOneStatement: true },
      advisory: { takeReturnsRow: true },
    },
    mysql: {
      rowLock: { countsInClaim: false, claimLocksFifoGroup: false, orderKeyLocksOutliveTransaction: true },
      lease: { claimsInOneStatement: false },
      advisory: { takeReturnsRow: false },
    },
    sqlite: { rowLock: "NOT_SUPPORTED", lease: { claimsInOneStatement: true }, advisory: { takeReturnsRow: true } },
  });
});
