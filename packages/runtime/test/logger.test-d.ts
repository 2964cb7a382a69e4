import { expectTypeOf, test } from "vitest";
import { pino } from "pino";
import type { Logger } from "../src/index.js";

test("pino fits the Logger interface directly", () => {
  const logger: Logger = pino({ level: "silent" });
  expectTypeOf(logger).toMatchTypeOf<Logger>();
});
