import { expectTypeOf, test } from "vitest";
import { App, type AppInfo, type LeaseClock } from "../../../src/index.js";

test('leaseClock is "database" (the default) or "host"', () => {
  expectTypeOf<LeaseClock>().toEqualTypeOf<"database" | "host">();
  expectTypeOf<AppInfo["leaseClock"]>().toEqualTypeOf<LeaseClock | undefined>();
  new App({ name: "a", version: "0", leaseClock: "host" });
  new App({ name: "a", version: "0", leaseClock: "database" });
  // @ts-expect-error: there is no third clock to judge leases on
  new App({ name: "a", version: "0", leaseClock: "server" });
});
