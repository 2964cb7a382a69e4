import type { FlowStatements, SlotPlace } from "@sqlinbox/kysely-dialects";
import type { CapHold, CapPlace, CapRun } from "./max-in-work.js";

/** How long a claim that found every slot taken waits in the queue for one (MySQL/MariaDB count whole seconds: 1 s). */
const CAP_SLOT_WAIT_MS = 1000;

/**
 * Whether a claim that found every slot taken queues for one: while its process holds less than half
 * the cap. A process that holds more leaves the slots other processes queue for to them; one that
 * holds less than its half takes the next slot that frees before the process that freed it can take
 * it back (without the queue, the process whose delivery ended claimed its slot again at once,
 * and a process waiting for its poll never found one free: 60 starts of 60 went to one process).
 */
function queuesForSlot(held: number, n: number): boolean {
  return held * 2 < n;
}

/**
 * The row-lock form's hold on a cap: `n` slot rows of `sqlinbox_slots` (inserted at startup), of
 * which a claim's transaction locks one per row (`FOR UPDATE SKIP LOCKED`, passing over those other
 * transactions hold). A slot is held until the transaction ends: its settlement's commit, a
 * rollback, or the session's end in a crash, which gives it back at once.
 *
 * Shared across processes: a claim that finds every slot taken, in a process holding less than half
 * of them (`queuesForSlot`), waits for one slot (`FOR UPDATE`, at most `CAP_SLOT_WAIT_MS`). InnoDB
 * hands a freed slot to the transaction waiting for it as the holder commits, before the claim of the
 * process whose delivery freed it, which skips locked slots; Postgres hands it over when the waiter
 * next runs, so that claim can win it in the same instant (rarely), and the waiter waits on.
 */
export class SlotRows implements CapHold {
  readonly n: number;
  readonly #place: SlotPlace;
  readonly #flow: FlowStatements;
  /** How many of the slots this process's deliveries hold now; `undefined`: this claim never queues (a shared claim's transaction). */
  readonly #held: () => number | undefined;
  #waitedInVain = false;

  constructor(n: number, place: SlotPlace, flow: FlowStatements, held: () => number | undefined) {
    this.n = n;
    this.#place = place;
    this.#flow = flow;
    this.#held = held;
  }

  async take(run: CapRun, want: number): Promise<readonly CapPlace[]> {
    this.#waitedInVain = false;
    const free = (await run(this.#flow.lockCapSlots(this.#place, this.n, want))).rows.map((row) => Number(row.slot));
    const held = this.#held();
    if (free.length > 0 || want === 0 || held === undefined || !queuesForSlot(held, this.n)) return free;
    return this.#queue(run);
  }

  /** Waits for one slot, picked at random so that the processes queued spread over the slots; none when the wait runs out. */
  async #queue(run: CapRun): Promise<readonly CapPlace[]> {
    const { lockWait } = this.#flow;
    const slot = Math.floor(Math.random() * this.n);
    await run(lockWait.bound(CAP_SLOT_WAIT_MS));
    let waited = false;
    try {
      const rows = (await run(this.#flow.waitCapSlot(this.#place, slot))).rows;
      waited = true;
      return rows.map((row) => Number(row.slot));
    } catch (error) {
      if (!lockWait.timedOut(error)) throw error;
      this.#waitedInVain = true;
      return [];
    } finally {
      // Postgres: a failed wait aborted the transaction, whose rollback sets the bound back.
      if (waited || !lockWait.timeoutAbortsTransaction) await run(lockWait.unbound());
    }
  }

  /** The last claim queued for a slot until its wait ran out: the next claim may queue again at once (the wait was its poll). */
  get waitedInVain(): boolean {
    return this.#waitedInVain;
  }

  /** Nothing: the transaction's end gives its slot rows back. */
  async release(): Promise<void> {}

  /** A slot admitted each row. */
  async kept(_run: CapRun, taken: number): Promise<number> {
    return taken;
  }
}
