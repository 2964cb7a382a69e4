/**
 * docs/failures.md, "Your own pool": `SqlBroker.fromKysely` over the application's own `pg.Pool`.
 * The test ends the sessions of that pool only (found by the application_name its URL carries),
 * several times while it works, and checks that the process survives with the documented error
 * listeners, and crashes without them, which is why the docs ask for them.
 */
import type { ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { createJobsTable, insertJobs, killSession, scopedUrl, sessionsOf, startFixture, until, type WorkerLine } from "../support/claim-forms.js";
import { engineNamed, selects, unique } from "../support/engines.js";
import { sleep } from "../support/sleep.js";

const postgres = engineNamed("postgres");

describe.runIf(selects("postgres"))("the application's own pg.Pool under SqlBroker.fromKysely, its sessions killed", () => {
  let setup: AnyKysely;
  beforeAll(async () => {
    setup = await postgres.connect(postgres.url());
  });
  afterAll(async () => {
    await setup?.destroy();
  });

  async function run(form: ClaimForm, handlers: "documented" | "none") {
    const table = unique(`rt_ownpool_${form}`);
    const scope = unique("sqlinbox_ownpool");
    await createJobsTable(postgres, setup, table);
    await insertJobs(setup, table, 30);
    const worker = startFixture("test/support/fixtures/own-pool-worker.ts", {
      OWN_POOL_URL: await scopedUrl(postgres, setup, scope),
      OWN_POOL_TABLE: table,
      OWN_POOL_FORM: form,
      OWN_POOL_HANDLERS: handlers,
    });
    let stderr = "";
    worker.child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    let exitCode: number | null | undefined;
    void worker.exited.then((code) => (exitCode = code));
    let killed = 0;
    try {
      await worker.waitFor((l) => l.event === "done", 20_000, "a first delivery");
      // Five rounds: every session of this pool (and of no other) ended from the server.
      for (let round = 0; round < 5 && exitCode === undefined; round++) {
        for (const pid of await sessionsOf(postgres, setup, scope)) {
          await killSession(postgres, setup, pid);
          killed++;
        }
        await sleep(400);
      }
      await sleep(500);
      const count = async () => Number((await sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql.id(table)}`.execute(setup)).rows[0]?.n);
      if (exitCode === undefined) {
        await insertJobs(setup, table, 10, undefined, 1000);
        await until(async () => exitCode !== undefined || (await count()) === 0, 30_000, "the queue to drain after the kills");
      }
      return { killed, exitCode, lines: worker.lines as readonly (WorkerLine | { event: string })[], left: await count(), worker, stderr: () => stderr };
    } finally {
      if (worker.child.exitCode === null) {
        worker.child.kill("SIGTERM");
        await worker.exited;
      }
      await postgres.dropTable(setup, table);
    }
  }

  test.each(["lease", "advisory", "rowLock"] as const)(
    "%s: with the documented listeners the process keeps working through the kills, drains, and stops cleanly",
    async (form) => {
      const { killed, exitCode, lines, left, worker } = await run(form, "documented");
      expect(killed).toBeGreaterThan(0);
      expect(exitCode).toBeUndefined(); // still running after the kills
      expect(left).toBe(0); // every row, the 30 before and the 10 after the kills, acked
      expect(lines.filter((l) => l.event === "done").length).toBeGreaterThanOrEqual(40);
      worker.child.kill("SIGTERM");
      expect(await worker.exited).toBe(0);
      expect(worker.lines.some((l) => l.event === "stopped")).toBe(true);
    },
    90_000,
  );

  test("without them, the first idle session killed crashes the process (an unhandled 'error' event)", async () => {
    const { killed, exitCode, stderr } = await run("lease", "none");
    expect(killed).toBeGreaterThan(0);
    expect(exitCode).not.toBe(0);
    expect(exitCode).not.toBeUndefined();
    // The server's notice when the kill reaches a session mid-read, the socket's end when it reaches an idle one,
    // or a reset when the socket closes under the pool's read: each an 'error' event nobody handled.
    expect(stderr()).toMatch(/terminating connection due to administrator command|Connection terminated unexpectedly|read ECONNRESET/);
    expect(stderr()).toMatch(/Unhandled 'error' event|Emitted 'error' event/);
  }, 90_000);
});
