/**
 * No member of a statement group can hand a caller `null` or `undefined` where a statement should
 * be: what an engine or a table lacks is a trait (a boolean, or a capability), read first.
 */
import { describe, expectTypeOf, test } from "vitest";
import type { EngineDialect } from "../../src/index.js";
import type { OperatorStatements } from "../../src/operator/index.js";

/** What each member of a group gives: a method's result, or the member itself. */
type Given<G> = { [K in keyof G]: G[K] extends (...args: never[]) => infer R ? R : G[K] }[keyof G];

type Groups = EngineDialect[Exclude<keyof EngineDialect, "capabilities" | "time" | "checkServerVersion" | "missingTable" | "readFoundColumns" | "dbSystemName">];

describe("statement members never give null or undefined", () => {
  test("the dialect's groups are all there", () => {
    expectTypeOf<Extract<Groups, null | undefined>>().toBeNever();
  });

  test("each statement of each group exists", () => {
    expectTypeOf<Extract<Given<EngineDialect["rowLock"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["lease"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["advisory"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["publish"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["flow"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["control"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["jobs"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["notify"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["deadLetter"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<EngineDialect["schema"]>, null | undefined>>().toBeNever();
    expectTypeOf<Extract<Given<OperatorStatements>, null | undefined>>().toBeNever();
  });

  test("the check itself: a member that may give null is found", () => {
    expectTypeOf<Extract<Given<{ claim(): { sql: string } | null }>, null | undefined>>().not.toBeNever();
    expectTypeOf<Extract<Given<{ readonly release?: { sql: string } }>, null | undefined>>().not.toBeNever();
  });

  test("a held retry takes a time: a retry at once writes nothing, and has no statement to ask for", () => {
    expectTypeOf<Parameters<EngineDialect["rowLock"]["settleRetry"]>[2]>().toEqualTypeOf<Date>();
    expectTypeOf<Parameters<EngineDialect["advisory"]["settleRetry"]>[2]>().toEqualTypeOf<Date>();
  });
});
