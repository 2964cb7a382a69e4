/**
 * The attempt an advisory delivery reports is the one its take counted, read back by the take
 * (`RETURNING`) or on the session that holds the key (MySQL/MariaDB), never the candidate the
 * window read, which may predate a retry of the same row. Two apps on one table (as two
 * processes would be), 200 rows that always throw, `maxAttempts: 3` and backoffs of a few ms, so
 * rows come back while the other app's window still holds an older reading of them: every row is
 * delivered exactly three times, reading attempts 1, 2, 3, and ends in the dead letter.
 */
import { describe, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { engines } from "../../support/engines.js";
import { useEngineConnection } from "../../support/fixtures.js";
import { ATTEMPTS_ROWS, exactAttempts } from "./attempts-scenario.js";

describe.each(engines)("advisory attempts on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test(
    `${ATTEMPTS_ROWS} rows that always throw, maxAttempts 3, short backoffs, two apps: each row delivered 3 times, attempts 1, 2, 3`,
    () => exactAttempts(engine, db, url, { prefix: "adv_attempts" }),
    120_000,
  );
});
