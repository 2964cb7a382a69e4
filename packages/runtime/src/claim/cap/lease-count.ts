import type { InboxDescription } from "@sqlinbox/core/internal";
import type { FlowStatements } from "@sqlinbox/kysely-dialects";
import type { Clock } from "../../clock.js";
import type { CapHold, CapPlace, CapRun } from "./max-in-work.js";

/**
 * The lease form's hold on a cap, counted from the table itself: a row is in work while its lease
 * is ahead. A claim takes room for `n` minus the live leases, and once its rows are committed counts
 * again, keeping only what leaves the others room (`kept`).
 *
 * Why the second count holds the cap without a lock: every delivery in work at some instant was
 * kept by a claim whose second count ran after that claim committed. Take the latest such count
 * among the deliveries in work: every other one was committed before it, still live, and counted;
 * and that claim kept only `n` minus the others it counted. So at most `n` are in work. Two claims
 * side by side may both give back rows (the cap is held, some work waits a poll).
 *
 * A process killed mid-handler holds its rows' leases until they expire: its share of the cap
 * comes back then. Nothing is given back by hand: a lease ends with its row's settlement.
 */
export class LeaseCount implements CapHold {
  readonly n: number;
  readonly #flow: FlowStatements;
  readonly #spec: InboxDescription;
  readonly #group: { readonly group?: string };
  readonly #clock: Clock;

  constructor(n: number, setup: { readonly flow: FlowStatements; readonly spec: InboxDescription; readonly group: { readonly group?: string }; readonly clock: Clock }) {
    this.n = n;
    this.#flow = setup.flow;
    this.#spec = setup.spec;
    this.#group = setup.group;
    this.#clock = setup.clock;
  }

  async take(run: CapRun, want: number): Promise<readonly CapPlace[]> {
    const room = Math.min(want, Math.max(0, this.n - (await this.#live(run))));
    return Array.from({ length: room }, (_, place) => place);
  }

  async release(): Promise<void> {}

  async kept(run: CapRun, taken: number): Promise<number> {
    const others = (await this.#live(run)) - taken;
    return Math.min(taken, Math.max(0, this.n - others));
  }

  async #live(run: CapRun): Promise<number> {
    const row = (await run(this.#flow.countLiveLeases(this.#spec, { now: this.#clock.now(), ...this.#group }))).rows[0];
    return Number(row?.live ?? 0);
  }
}
