/**
 * `maxInWork(n)` across real processes, on every engine × form: three worker processes
 * (`support/fixtures/flow-worker.ts`) with `workers(4)` each drain a queue under a cap of 3. Each handler
 * reports its start and end; the runs of all processes, sampled every 10 ms (and at every start),
 * never number more than 3. One process is killed with SIGKILL while it has a row in work: its share
 * of the cap comes back at once where the hold is a session's (row lock, advisory), when its lease
 * expires in the lease form; every row is handled in the end.
 *
 * SQLite: one process per file in the advisory form (its key locks live in the process), so the
 * cap is tested there in one process, without the kill; its lease form runs three processes.
 */
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { insertJobs, matrix, startFixture, until, type WorkerProcess } from "../../support/claim-forms.js";
import { unique } from "../../support/engines.js";
import { createFlowTable, inWorkAt, mostInWork, runsOf } from "../../support/flow-tables.js";
import { sql } from "kysely";

const CAP = 3;
const WORKERS = 4;
const ROWS = 200;
const HOLD_MS = 60;
const LEASE_MS = 2000;
const VICTIM_HOLD_MS = 1500;

describe.each(matrix)("maxInWork($engine.name × $form)", ({ engine, form }) => {
  const oneProcess = engine.engine === "sqlite" && form === "advisory";
  const processes = oneProcess ? 1 : 3;
  test(`${processes} process(es) × workers(${WORKERS}) under maxInWork(${CAP}): never more than ${CAP} in work${oneProcess ? "" : "; a killed process's share comes back"}`, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    const table = unique(`cap_${form}`).toLowerCase();
    const children: WorkerProcess[] = [];
    const killedAt = new Map<number, number>();
    try {
      await createFlowTable(db, table);
      await insertJobs(db, table, ROWS);
      for (let i = 0; i < processes; i++) {
        children.push(
          startFixture("test/support/fixtures/flow-worker.ts", {
            FLOW_URL: url,
            FLOW_TABLE: table,
            FLOW_FORM: form,
            FLOW_WORKERS: String(WORKERS),
            // The first process's rows are long: it is the one killed, while a row is in work, and a row of 60 ms could
            // end (and its ack free the slot) between its start line reaching this test and the signal on a loaded machine.
            FLOW_HOLD_MS: String(i === 0 && !oneProcess ? VICTIM_HOLD_MS : HOLD_MS),
            FLOW_MAX_IN_WORK: String(CAP),
            FLOW_LEASE_MS: String(LEASE_MS),
          }),
        );
      }
      await Promise.all(children.map((c) => c.waitFor((l) => l.event === "ready", 30_000, "ready")));
      const done = (): number => children.reduce((sum, c) => sum + c.lines.filter((l) => l.event === "done").length, 0);
      let killed: WorkerProcess | undefined;
      if (!oneProcess) {
        await until(() => done() >= 10, 30_000, "ten rows handled");
        // Kill the first process while it has a row in work: its slot (or lease) is held when it dies. Its rows take
        // 1.5 s, so it holds one most of the time and the row seen starting is still in work when the signal lands.
        const inWork = (c: WorkerProcess): boolean => runsOf([{ pid: 0, lines: c.lines }], () => Number.POSITIVE_INFINITY).some((r) => r.end === Number.POSITIVE_INFINITY);
        const victim = children[0] as WorkerProcess;
        await until(() => inWork(victim), 30_000, "a row in work in the first process");
        victim.child.kill("SIGKILL");
        killedAt.set(victim.child.pid as number, Date.now());
        await victim.exited;
        killed = victim;
      }
      const survivors = children.filter((c) => c !== killed);
      await until(async () => Number((await sql<{ n: unknown }>`select count(*) as n from ${sql.id(table)}`.execute(db)).rows[0]?.n) === 0, 60_000, "every row handled");
      for (const c of survivors) c.child.kill("SIGTERM");
      await Promise.all(survivors.map((c) => c.exited));

      const runs = runsOf(
        children.map((c) => ({ pid: c.child.pid as number, lines: c.lines })),
        (pid) => killedAt.get(pid) ?? Number.POSITIVE_INFINITY,
      );
      expect(mostInWork(runs, 10)).toBeLessThanOrEqual(CAP);
      // The cap is used: at some moment the whole cap is in work (across processes, or in the one).
      expect(mostInWork(runs, 10)).toBe(CAP);
      expect(survivors.flatMap((c) => c.lines.filter((l) => l.event === "error"))).toEqual([]);
      if (killed !== undefined) {
        const at = killedAt.get(killed.child.pid as number) as number;
        // The first moment after the kill when the survivors have the whole cap in work again.
        const back = runs.filter((r) => r.pid !== killed.child.pid && r.start >= at && inWorkAt(runs, r.start) === CAP).map((r) => r.start - at);
        expect(back.length).toBeGreaterThan(0);
        const recovered = Math.min(...back);
        // Held by a session: back at once (a poll later, on a loaded machine). A lease: within its term.
        const bound = form === "lease" ? LEASE_MS + 3000 : 3000;
        expect(recovered).toBeLessThan(bound);
        // A lease is counted until it expires (it was extended at most half a term before the kill): not back at once.
        if (form === "lease") expect(recovered).toBeGreaterThan(LEASE_MS / 4);
        console.log(`${engine.name} × ${form}: the cap back ${recovered} ms after the SIGKILL`);
      }
    } finally {
      for (const c of children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
