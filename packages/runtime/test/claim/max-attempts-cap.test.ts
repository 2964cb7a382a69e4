/**
 * `maxAttempts` is a cap on every form × engine: a row whose attempt reached it goes to the dead
 * letter whatever the onError policy (or the handler) returned — `retry()`, `retryAfter(ms)` —
 * with a warning that names the row, the attempt, the cap and the outcome it overrode. A policy
 * can still dead-letter earlier.
 */
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "../support/fixtures.js";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, silentLogger, subscriber, type FailurePolicy, type LogFields, type Logger } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { createTables, deadJobsOf, dropTables, insertGrouped, readDead, readSource, retryJobsOf } from "../support/dead-letter-tables.js";

const ROWS = 4;
const MAX_ATTEMPTS = 3;

interface Warning {
  readonly fields: LogFields;
  readonly message: string;
}

describe.each(matrix)("maxAttempts caps every outcome on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  /** Drains `ROWS` rows through `handle` with `onError`, until every row is in the dead letter. */
  async function drain(handle: () => HandlerOutcome, onError?: FailurePolicy) {
    const jobs = unique(`cap_${form}`);
    const dead = unique(`cap_dead_${form}`);
    await createTables(engine, db, jobs, dead, { retryAfter: true });
    const spec = retryJobsOf(jobs, form);
    const seen = new Map<number, Array<number | undefined>>();
    const warnings: Warning[] = [];
    const logger: Logger = { ...silentLogger, warn: (fields, message) => void warnings.push({ fields, message }) };
    let queue = InboxQueue.of(spec, "jobs").pollInterval(50).deadLetter(deadJobsOf(dead), { maxAttempts: MAX_ATTEMPTS });
    if (onError !== undefined) queue = queue.onError(onError);
    const sub = subscriber(queue, async (_job, ctx) => {
      const id = Number(ctx.id);
      seen.set(id, [...(seen.get(id) ?? []), ctx.get(keys.attempt)]);
      return handle();
    });
    const app = await new App({ name: "t", version: "0", logger })
      .withBroker(
        SqlBroker.fromUrl(url, { pool: { max: 3 } })
          .lease(2000)
          .route(spec, "jobs"),
        (b) => b.include(sub),
      )
      .start();
    try {
      await insertGrouped(db, jobs, ROWS);
      await until(async () => (await readDead(db, dead)).length === ROWS, 20_000, `${ROWS} rows in the dead letter`);
      return { seen, warnings, source: await readSource(db, jobs), moved: await readDead(db, dead) };
    } finally {
      await app.stop();
      await dropTables(db, jobs, dead);
    }
  }

  const boom = (): never => {
    throw new Error("boom");
  };

  /** Every row was delivered at attempts 1 … cap, moved with `lastError`, and one warning per row names what the cap overrode. */
  function expectCapped(result: Awaited<ReturnType<typeof drain>>, lastError: string, overridden: string, source: string) {
    const { seen, warnings, source: left, moved } = result;
    expect([...seen.values()]).toEqual(Array.from({ length: ROWS }, () => [1, 2, 3]));
    expect(left).toEqual([]);
    expect(moved.map((m) => [m.lastError, m.failedAttempts])).toEqual(Array.from({ length: ROWS }, () => [lastError, MAX_ATTEMPTS]));
    const capped = warnings.filter((w) => w.fields["maxAttempts"] === MAX_ATTEMPTS);
    expect(capped.map((w) => Number(w.fields["id"])).sort((a, b) => a - b)).toEqual([...seen.keys()].sort((a, b) => a - b));
    for (const w of capped) {
      expect(w.fields).toMatchObject({ subscription: "jobs", attempt: MAX_ATTEMPTS, maxAttempts: MAX_ATTEMPTS, overridden });
      expect(w.message).toBe(`attempt ${MAX_ATTEMPTS} reached maxAttempts ${MAX_ATTEMPTS}: the row goes to the dead letter, not ${overridden} as ${source} returned`);
    }
  }

  test("a policy that always returns retry(): moved at exactly the cap, the cap's override logged per row", async () => {
    expectCapped(await drain(boom, () => HandlerOutcome.retry()), "Error: boom", "retry()", "the onError policy");
  });

  test("a policy that always returns retryAfter(5): moved at exactly the cap, the cap's override logged per row", async () => {
    expectCapped(await drain(boom, () => HandlerOutcome.retryAfter(5)), "Error: boom", "retryAfter(5)", "the onError policy");
  });

  test("a handler that always returns retry(): moved at exactly the cap too", async () => {
    expectCapped(await drain(() => HandlerOutcome.retry()), `attempt ${MAX_ATTEMPTS} reached maxAttempts ${MAX_ATTEMPTS}`, "retry()", "the handler");
  });

  test("a policy can still dead-letter earlier: moved at attempt 2, no override logged", async () => {
    const { seen, warnings, moved } = await drain(boom, (_error, attempt) => ((attempt ?? 1) >= 2 ? HandlerOutcome.deadLetter("early") : HandlerOutcome.retry()));
    expect([...seen.values()]).toEqual(Array.from({ length: ROWS }, () => [1, 2]));
    expect(moved.map((m) => [m.lastError, m.failedAttempts])).toEqual(Array.from({ length: ROWS }, () => ["early", 2]));
    expect(warnings.filter((w) => w.fields["maxAttempts"] !== undefined)).toEqual([]);
  });
});
