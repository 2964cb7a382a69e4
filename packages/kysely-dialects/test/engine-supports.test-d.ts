/**
 * The capability map at the type level: `EngineSupports<E, C>` reads the capabilities each engine's
 * `engine.ts` states (the same objects its dialect carries), so a type rule of the runtime asks
 * "has this engine row locks" instead of naming SQLite.
 */
import { describe, expectTypeOf, test } from "vitest";
import type { Engine, EngineSupports } from "../src/index.js";

describe("EngineSupports", () => {
  test("one engine: its own answer, as written in its engine.ts", () => {
    expectTypeOf<EngineSupports<"sqlite", "rowLock">>().toEqualTypeOf<false>();
    expectTypeOf<EngineSupports<"mysql", "rowLock">>().toEqualTypeOf<true>();
    expectTypeOf<EngineSupports<"postgres", "listenNotify">>().toEqualTypeOf<true>();
    expectTypeOf<EngineSupports<"mysql", "listenNotify">>().toEqualTypeOf<false>();
    expectTypeOf<EngineSupports<"sqlite", "singleWriter">>().toEqualTypeOf<true>();
  });

  test("engines that disagree, or any engine: boolean", () => {
    expectTypeOf<EngineSupports<Engine, "rowLock">>().toEqualTypeOf<boolean>();
    expectTypeOf<EngineSupports<"postgres" | "sqlite", "listenNotify">>().toEqualTypeOf<boolean>();
    expectTypeOf<EngineSupports<"postgres" | "mysql", "rowLock">>().toEqualTypeOf<true>();
  });

  test("only yes-or-no capabilities can be asked", () => {
    // @ts-expect-error maxParameters is a number, not a yes or a no
    expectTypeOf<EngineSupports<"sqlite", "maxParameters">>();
  });
});
