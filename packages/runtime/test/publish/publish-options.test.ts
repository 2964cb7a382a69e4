/**
 * A publish's options live, on every engine × form, over a table from the generated DDL: claim
 * order follows the published priority; a row published to run later is not claimed early (its
 * time in the retryAfter column, or in the lease column on a lease table without one); an
 * advisory key built from a published data column serializes that key; a dedup key inserts once
 * and returns the first row's id, and is free again once its row is acked (deleted), but not on a
 * table that marks processedAt (the row, and so its key, stays).
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { App, createInboxTable, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { engines, unique, type TestEngine } from "../support/engines.js";
import { sleep } from "../support/sleep.js";

interface Job {
  readonly n: number;
}

/**
 * A table with a priority, a data column `customer_id`, a dedup key, and somewhere to store a
 * run-at: retryAfter (row lock, advisory) or the lease column alone (lease). The advisory key is
 * built from `customer_id`. `processed`: acks mark processedAt instead of deleting.
 */
function optionsSpec(table: string, form: ClaimForm, processed = false) {
  const base = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    payload: field.payload<Job>(),
    priority: field.priority(),
    customerId: field.data("customer_id").holds<number>().type("bigint"),
    jobKey: field.key("job_key"),
  };
  const columns = processed ? { ...base, processedAt: field.processedAt("processed_at") } : base;
  if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
  if (form === "advisory") return defineInbox({ table, columns: { ...columns, retryAfter: field.retryAfter("retry_after") }, advisoryLock: "customer-{customer_id}" });
  return defineInbox({ table, columns: { ...columns, retryAfter: field.retryAfter("retry_after") } });
}
type OptionsSpec = ReturnType<typeof optionsSpec>;

/** A fresh table from the generated DDL and a broker routing it as "jobs"; `run` gets both, then the table is dropped. */
async function withTable(
  engine: TestEngine,
  form: ClaimForm,
  run: (broker: SqlBroker<{ jobs: OptionsSpec }>, spec: OptionsSpec, count: () => Promise<number>) => Promise<void>,
  processed = false,
): Promise<void> {
  const url = engine.url();
  const db = await engine.connect(url);
  const table = unique(`pub_${form}`);
  const spec = optionsSpec(table, form, processed);
  try {
    await createInboxTable(db, spec);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } }).route(spec, "jobs");
    const count = async () => Number((await sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql.id(table)}`.execute(db)).rows[0]?.n);
    try {
      await run(broker, spec, count);
    } finally {
      await broker.close();
    }
  } finally {
    await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
    await db.destroy();
  }
}

/** Starts an app consuming "jobs" with `handler`; resolves with its stop. */
async function consume(broker: SqlBroker<{ jobs: OptionsSpec }>, spec: OptionsSpec, workers: number, handler: (job: Job) => Promise<void>): Promise<() => Promise<unknown>> {
  const queue = InboxQueue.of(spec, "jobs").lease(5000).pollInterval(50).workers(workers).batch(1);
  const app = await new App({ name: "publish-options", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(subscriber(queue, handler))).start();
  return () => app.stop();
}

describe.each(matrix)("publish options on $engine.name × $form", ({ engine, form }) => {
  test("claim order follows the published priority (smaller first)", async () => {
    await withTable(engine, form, async (broker, spec) => {
      // Published before any app: the broker connects for it.
      for (const p of [5, 1, 4, 2, 3]) await broker.publish("jobs", { n: p }, { priority: p, columns: { customerId: p } });
      const order: number[] = [];
      const stop = await consume(broker, spec, 1, async (job) => void order.push(job.n));
      try {
        await until(() => order.length === 5, 15_000, "every row");
      } finally {
        await stop();
      }
      expect(order).toEqual([1, 2, 3, 4, 5]);
    });
  });

  test("a row published with runAt or delay is not claimed before its time; one without is claimed at once", async () => {
    await withTable(engine, form, async (broker, spec) => {
      const started: Array<{ n: number; at: number }> = [];
      const stop = await consume(broker, spec, 2, async (job) => void started.push({ n: job.n, at: Date.now() }));
      try {
        const published = Date.now();
        await broker.publish("jobs", { n: 1 }, { delay: 1500, columns: { customerId: 1 } });
        await broker.publishMany("jobs", [{ n: 2 }], { runAt: new Date(published + 1500), columns: { customerId: 2 } });
        await broker.publish("jobs", { n: 3 }, { columns: { customerId: 3 } });
        await until(() => started.length === 3, 15_000, "every row");
        const at = new Map(started.map((s) => [s.n, s.at]));
        expect((at.get(3) ?? 0) - published).toBeLessThan(1400);
        // Times are stored to the millisecond (seconds on a DATETIME without a fraction): a few ms of rounding at most.
        expect((at.get(1) ?? 0) - published).toBeGreaterThanOrEqual(1490);
        expect((at.get(2) ?? 0) - published).toBeGreaterThanOrEqual(1490);
      } finally {
        await stop();
      }
    });
  });

  test("a dedup key inserts once and gives back the first row's id; publishMany handles duplicates in one call; the key is free again once its row is acked", async () => {
    await withTable(engine, form, async (broker, spec, count) => {
      const first = await broker.publish("jobs", { n: 1 }, { key: "a", columns: { customerId: 1 } });
      expect(first.created).toBe(true);
      const again = await broker.publish("jobs", { n: 2 }, { key: "a", columns: { customerId: 1 } });
      expect(again).toEqual({ id: first.id, created: false });
      const many = await broker.publishMany("jobs", [{ n: 3 }, { n: 4 }, { n: 5 }, { n: 6 }], { keys: ["b", "a", "b", undefined], columns: { customerId: 2 } });
      expect(many.map((p) => p.created)).toEqual([true, false, false, true]);
      expect(many[1]?.id).toEqual(first.id);
      expect(many[2]?.id).toEqual(many[0]?.id);
      expect(new Set([first.id, many[0]?.id, many[3]?.id].map(String)).size).toBe(3);
      expect(await count()).toBe(3);
      const seen: number[] = [];
      const stop = await consume(broker, spec, 2, async (job) => void seen.push(job.n));
      try {
        await until(async () => seen.length === 3 && (await count()) === 0, 15_000, "every row acked (deleted)");
        const later = await broker.publish("jobs", { n: 7 }, { key: "a", columns: { customerId: 1 } });
        expect(later.created).toBe(true);
        expect(String(later.id)).not.toBe(String(first.id));
        await until(() => seen.length === 4, 15_000, "the new row delivered");
      } finally {
        await stop();
      }
      expect([...seen].sort((a, b) => a - b)).toEqual([1, 3, 6, 7]);
    });
  });

  if (form === "advisory") {
    test("an advisory key built from a published data column serializes that key", async () => {
      await withTable(engine, form, async (broker, spec) => {
        const running = new Map<number, number>();
        let overlapSameKey = 0;
        let maxRunning = 0;
        const customerOf = (n: number) => n % 2;
        const stop = await consume(broker, spec, 4, async (job) => {
          const c = customerOf(job.n);
          running.set(c, (running.get(c) ?? 0) + 1);
          if ((running.get(c) ?? 0) > 1) overlapSameKey++;
          maxRunning = Math.max(
            maxRunning,
            [...running.values()].reduce((a, b) => a + b, 0),
          );
          await sleep(60);
          running.set(c, (running.get(c) ?? 0) - 1);
          done.push(job.n);
        });
        const done: number[] = [];
        try {
          const payloads = Array.from({ length: 8 }, (_, n) => ({ n }));
          await broker.publishMany("jobs", payloads, { columns: (job) => ({ customerId: customerOf(job.n) }) });
          await until(() => done.length === 8, 20_000, "every row handled");
        } finally {
          await stop();
        }
        expect(overlapSameKey).toBe(0);
        // Two customers: their rows may run side by side.
        expect(maxRunning).toBeLessThanOrEqual(2);
      });
    });
  }
});

describe.each(engines)("the id a publish resolves to, on $name", (engine) => {
  test("is the row's id as decimal text (a string on every engine), for one row, many, and a held key", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("pub_ids");
    const spec = optionsSpec(table, "lease");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(spec, "jobs");
    try {
      await createInboxTable(db, spec);
      const one = await broker.publish("jobs", { n: 1 }, { key: "a" });
      const many = await broker.publishMany("jobs", [{ n: 2 }, { n: 3 }], { keys: ["b", undefined] });
      const held = await broker.publish("jobs", { n: 4 }, { key: "a" });
      expect([one, ...many, held].map((p) => typeof p.id)).toEqual(["string", "string", "string", "string"]);
      expect(held).toEqual({ id: one.id, created: false });
      const { rows } = await sql<{ id: unknown; job_key: string | null }>`SELECT id, job_key FROM ${sql.id(table)} ORDER BY id`.execute(db);
      // Each id is the row's, as its decimal digits.
      expect(rows.map((r) => String(r.id))).toEqual([one.id, ...many.map((p) => p.id)]);
      expect([one, ...many].every((p) => /^[1-9][0-9]*$/.test(p.id))).toBe(true);
    } finally {
      await broker.close();
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});

describe.each(engines)("a dedup key on a table that marks processedAt, on $name", (engine) => {
  test("the acked row stays, and so does its key: a later publish gets its id with created: false", async () => {
    await withTable(
      engine,
      "lease",
      async (broker, spec, count) => {
        const first = await broker.publish("jobs", { n: 1 }, { key: "k", columns: { customerId: 1 } });
        const seen: number[] = [];
        const stop = await consume(broker, spec, 1, async (job) => void seen.push(job.n));
        try {
          await until(() => seen.length === 1, 15_000, "the row delivered");
          await sleep(300); // the ack marks processed_at
          const again = await broker.publish("jobs", { n: 2 }, { key: "k", columns: { customerId: 1 } });
          expect(again).toEqual({ id: first.id, created: false });
          await sleep(300);
          expect(seen).toEqual([1]);
          expect(await count()).toBe(1);
        } finally {
          await stop();
        }
      },
      true,
    );
  });
});

/** A lease table with a retryAfter column (the run-at) and a dedup key: what `replace` needs. */
function debounceSpec(table: string) {
  return defineInbox({
    table,
    columns: {
      id: field.id().generated(),
      attempt: field.attempt().generated(),
      payload: field.payload<Job>(),
      lockedUntil: field.lease("locked_until"),
      retryAfter: field.retryAfter("retry_after"),
      jobKey: field.key("job_key"),
    },
  });
}

describe.each(engines)("replace (debounce) on $name", (engine) => {
  test("a held key's waiting row takes the new payload and run-at; a row in work is left alone", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("pub_debounce");
    const spec = debounceSpec(table);
    try {
      await createInboxTable(db, spec);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } }).route(spec, "jobs");
      const first = await broker.publish("jobs", { n: 1 }, { key: "d", delay: 60_000 });
      // Not in work: it takes the new payload and is due now.
      const replaced = await broker.publish("jobs", { n: 2 }, { key: "d", delay: 0, replace: true });
      expect(replaced).toEqual({ id: first.id, created: false, replaced: true });
      const started: number[] = [];
      let release: () => void = () => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      const queue = InboxQueue.of(spec, "jobs").lease(5000).pollInterval(50).workers(2);
      const app = await new App({ name: "debounce", version: "0", logger: silentLogger })
        .withBroker(broker, (b) =>
          b.include(
            subscriber(queue, async (job) => {
              started.push(job.n);
              if (job.n === 3) await held;
            }),
          ),
        )
        .start();
      try {
        await until(() => started.includes(2), 10_000, "the replaced row delivered at its new time");
        await broker.publish("jobs", { n: 3 }, { key: "w" });
        await until(() => started.includes(3), 10_000, "the keyed row in work");
        const inWork = await broker.publish("jobs", { n: 4 }, { key: "w", replace: true });
        expect(inWork.created).toBe(false);
        expect(inWork.replaced).toBe(false);
        release();
        await sleep(300);
      } finally {
        release();
        await app.stop();
      }
      expect([...started].sort()).toEqual([2, 3]);
      const { rows } = await sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql.id(table)}`.execute(db);
      expect(Number(rows[0]?.n)).toBe(0);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });

  test("replace: true without a key is refused (Declaration, naming the route and table) and writes nothing, where the name is known only at run time", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("pub_replace_nokey");
    const spec = debounceSpec(table);
    try {
      await createInboxTable(db, spec);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(spec, "jobs");
      // A name typed `string` takes every option loosely: the compile-time rule cannot see it, the publish can.
      const name: string = "jobs";
      try {
        const refused = {
          code: "Declaration",
          place: { subscription: "jobs", table },
          message: expect.stringContaining("replace: true debounces the row that holds the publish's key"),
        };
        await expect(broker.publish(name, { n: 1 }, { replace: true, delay: 0 })).rejects.toMatchObject(refused);
        await expect(broker.publishMany(name, [{ n: 1 }, { n: 2 }], { replace: true })).rejects.toMatchObject(refused);
        await expect(broker.publishMany(name, [{ n: 1 }], { keys: [undefined], replace: true })).rejects.toMatchObject(refused);
        expect(await broker.publish(name, { n: 3 }, { key: "k", replace: true })).toMatchObject({ created: true });
      } finally {
        await broker.close();
      }
      const { rows } = await sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql.id(table)}`.execute(db);
      expect(Number(rows[0]?.n)).toBe(1);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});
