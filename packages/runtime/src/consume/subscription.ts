import type { InboxDescription } from "@sqlinbox/core/internal";
import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import { errorFields } from "../logger.js";
import { within, type SubscriptionStop } from "../stop-report.js";
import { type BatchRun, batchRunOf, deliverBatch } from "./batch-delivery.js";
import { claimMeasured, claimPaceFor, type ClaimPace, DeliveryBuffer, rowsToClaim } from "./claim-pacer.js";
import { type DeliveryReport, DeliveryRun } from "./delivery-run.js";
import { SlotSet } from "../claim/slot-set.js";
import { eventLoopTurned, PollGate } from "./poll-gate.js";
import type { SubscriptionSetup } from "./setup.js";

export type { DeliveryObserver, SubscriptionSetup } from "./setup.js";

/**
 * One subscriber consuming its queue: ask the pacer how many rows to claim, claim them, hand them
 * to free workers. A claim that came back short waits the poll interval (or a wake from a publish
 * in this process); the pacer decides from the claim form's profile how far ahead to claim.
 *
 * Where rows wait at no cost (the lease form), a claim takes up to `batch` rows as soon as a
 * worker is free and the buffer is empty, and workers take from the buffer; a handler that
 * returned frees its worker at once while its settlement finishes on its own (a stop waits for
 * it). Forms that hold a connection per delivery keep the worker until the settlement released it.
 */
export class Subscription {
  readonly name: string;
  readonly table: string;
  /** The table's description (what the control watch looks a cancelled row up with). */
  readonly spec: InboxDescription;
  readonly #s: SubscriptionSetup;
  /** Deliveries whose handler runs (or, holding a connection, whose settlement runs). */
  readonly #inFlight = new SlotSet<ClaimedDelivery>();
  /** Waiting for no delivery in work and no settlement. */
  readonly #idle: Array<() => void> = [];
  /** Claim statements running. */
  readonly #claims = new Set<Promise<void>>();
  /** Claimed ahead, not started yet. */
  readonly #buffer: DeliveryBuffer;
  /** What `rowsToClaim` reads: the shape, the claiming/settling counters, drained; the rest is copied in before each ask. */
  readonly #pace: ClaimPace;
  readonly #gate: PollGate;
  /** Each delivery from its row to its settlement. */
  readonly #run: DeliveryRun;
  /** A batch handler's subscription: what each batch delivery needs, and the batches in work. */
  readonly #batches: { readonly run: BatchRun; inWork: number } | undefined;
  /** Set when the stop began: deliveries finishing from then on count in its report. */
  #stop: { finished: number } | undefined;

  constructor(setup: SubscriptionSetup) {
    this.#s = setup;
    this.name = setup.subscriber.name;
    this.table = setup.spec.table;
    this.spec = setup.spec;
    const { batch, workers, pollInterval } = setup.options;
    const { profile } = setup.strategy;
    const batchHandler = setup.subscriber.kind === "batch";
    this.#pace = claimPaceFor({ workers, batch, mode: batchHandler ? "wholeBatches" : profile.pace, sideBySide: profile.claimsSideBySide, contend: profile.claimsContend });
    this.#gate = new PollGate(setup.clock, pollInterval, () => this.wake());
    this.#run = new DeliveryRun(setup, this.#ended.bind(this), this.#pace);
    this.#buffer = new DeliveryBuffer(
      () => !this.#gate.closed && !this.#gate.paused && this.#inFlight.size < workers,
      (delivery) => this.#start(delivery),
    );
    this.#batches = batchHandler ? { run: batchRunOf(setup, this.#run), inWork: 0 } : undefined;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  start(): void {
    this.#s.strategy.start();
    this.#gate.start();
    this.#claimMore();
  }

  /** Claims again now instead of at the end of the poll wait: a publish in this process starts a claim in the same turn. */
  /** Waiting out its poll interval for work (its last claim came back short): a wake would start a claim now. */
  get waiting(): boolean {
    return this.#gate.waiting;
  }

  wake(): void {
    this.#gate.wake();
    this.#s.strategy.invalidate();
    this.#s.activity.touch();
    this.#claimMore();
  }

  /** Whether its route is paused (the control table): it claims nothing until `resume`. */
  get paused(): boolean {
    return this.#gate.paused;
  }

  /**
   * Stops claiming (its route was paused): deliveries in work go on; rows claimed ahead and not
   * started are given back at once, without spending their attempt.
   */
  async pause(): Promise<void> {
    if (this.#gate.paused || this.#gate.closed) return;
    this.#gate.pause();
    const unstarted = this.#buffer.takeAll();
    if (unstarted.length > 0) await this.#s.strategy.releaseUnstarted(unstarted);
  }

  /** Claims again (its route's pause ended). */
  resume(): void {
    if (!this.#gate.paused) return;
    this.#gate.resume();
    this.#claimMore();
  }

  /**
   * Aborts the signal of each delivery in work here whose id (as text) is in `targets`, with the
   * reason `reasonOf` gives; returns the ids it found in work.
   */
  interrupt(targets: { has(target: string): boolean }, reasonOf: (id: unknown) => unknown): string[] {
    const found: string[] = [];
    for (const delivery of this.#inFlight) {
      const target = String(delivery.id);
      if (!targets.has(target)) continue;
      delivery.interrupt(reasonOf(delivery.id));
      found.push(target);
    }
    return found;
  }

  /**
   * Claims when a row this process delayed comes due at `at` (ms on the app's clock): a settlement's
   * delay, a publish's run-at. One timer to the soonest such time; a time already past wakes now.
   */
  wakeAt(at: number): void {
    if (!this.#gate.dueAt(at) && !this.#gate.closed) this.wake();
  }

  /**
   * Stops claiming and keeping leases; deliveries in work go on; rows claimed ahead and not
   * started are given back. Waits for running claims and the give-back at most `waitMs`
   * (a database down or restarting may never answer); returns how many rows were given back.
   */
  async stopClaiming(waitMs: number): Promise<{ unstarted: number; timedOut: boolean }> {
    this.#gate.close();
    this.#stop ??= { finished: 0 };
    const claims = (async () => {
      while (this.#claims.size > 0) await Promise.all(this.#claims);
    })();
    const claimsDone =
      (await within(
        claims.then(() => true),
        waitMs,
      )) === true;
    const unstarted = this.#buffer.takeAll();
    let givenBack = true;
    if (unstarted.length > 0) {
      givenBack =
        (await within(
          this.#s.strategy.releaseUnstarted(unstarted).then(() => true),
          waitMs,
        )) === true;
    }
    this.#s.strategy.stop();
    return { unstarted: unstarted.length, timedOut: !claimsDone || !givenBack };
  }

  /** Waits for deliveries in work and their settlements up to `graceMs`; abandons the rest (their signals abort). */
  async drain(graceMs: number, unstarted = 0, claimTimedOut = false): Promise<SubscriptionStop> {
    const { stop } = this.#s.strategy.profile;
    const finished = (): number => this.#stop?.finished ?? 0;
    if (this.#inFlight.size === 0 && this.#pace.settling === 0) return { stop, finished: finished(), unstarted, abandoned: 0, timedOut: claimTimedOut };
    let timer: { cancel(): void } | undefined;
    const graceOver = new Promise<"grace">((resolve) => {
      timer = this.#s.clock.setTimer(graceMs, () => resolve("grace"));
    });
    const idle = new Promise<"done">((resolve) => this.#idle.push(() => resolve("done")));
    const done = await Promise.race([idle, graceOver]);
    timer?.cancel();
    let abandoned = 0;
    if (done === "grace") {
      this.#run.giveUpTimeouts();
      for (const delivery of this.#inFlight) {
        this.#s.logger.warn({ id: delivery.id }, `shutdown grace over: delivery abandoned; ${stop.fate}`);
        delivery.abandon(new Error("shutdown grace period over"));
        abandoned++;
      }
    }
    return { stop, finished: finished(), unstarted, abandoned, timedOut: claimTimedOut };
  }

  /** Starts claims while they are wanted: called whenever a worker, a settlement or a wake may have changed that. */
  #claimMore(): void {
    const pace = this.#pace;
    while (this.#gate.open) {
      pace.inFlight = this.#batches === undefined ? this.#inFlight.size : this.#batches.inWork;
      pace.buffered = this.#buffer.size;
      pace.claims = this.#claims.size;
      pace.heldTransactions = this.#s.strategy.heldTransactions;
      const limit = rowsToClaim(pace);
      if (limit === 0) return;
      pace.claiming += limit;
      const claim = this.#claim(limit).finally(() => {
        this.#claims.delete(claim);
        pace.claiming -= limit;
        this.#claimMore();
      });
      this.#claims.add(claim);
    }
  }

  async #claim(limit: number): Promise<void> {
    const { strategy, logger } = this.#s;
    const told = this.#s.observer?.claimed;
    const pace = this.#pace;
    const wakes = this.#gate.wakes;
    const claimStartedAt = told === undefined && !pace.measures ? 0 : performance.now();
    let claimed: ClaimedDelivery[];
    try {
      const turn = eventLoopTurned();
      if (turn !== undefined) {
        await turn;
        // Stopped while the loop turned: no claim after stopClaiming.
        if (this.#gate.closed) return;
      }
      claimed = await strategy.claim(limit);
      if (told !== undefined) told({ subscription: this.name, rows: claimed.length, durationMs: performance.now() - claimStartedAt });
      if (pace.measures) claimMeasured(pace, performance.now() - claimStartedAt, this.#run.handlerMs);
    } catch (error) {
      logger.error({ ...errorFields(error) }, "claim failed; trying again after the poll interval");
      this.#pollWait();
      return;
    }
    // Paused while the claim ran: its rows go back at once.
    if (this.#gate.paused && claimed.length > 0) {
      await strategy
        .releaseUnstarted(claimed)
        .catch((error: unknown) => logger.warn({ ...errorFields(error) }, "giving back rows claimed as the route paused failed; they return when their holds end"));
      return;
    }
    if (claimed.length > 0 && this.#batches !== undefined) {
      this.#startBatch(this.#batches, claimed);
    } else if (claimed.length > 0) {
      this.#buffer.add(claimed);
      this.#buffer.pump();
    }
    // Short: the queue looks empty; wait for the poll interval unless a publish woke us meanwhile.
    const drained = claimed.length < limit;
    pace.drained = drained;
    if (drained && this.#gate.wakes === wakes) this.#pollWait();
  }

  #pollWait(): void {
    this.#gate.wait(() => this.#claimMore(), this.#s.strategy.waitAfterShortMs?.());
  }

  /**
   * Runs one delivery. A handler that returns without a promise, on a form whose settlement frees
   * the worker at once (the lease form), runs here to its end with no promise made: the worker is
   * free again when this returns. Anything asynchronous (a promise returned, a schema that may
   * validate later, a transaction to open, a settlement that holds the worker) goes on in `#finish`.
   */
  #start(delivery: ClaimedDelivery): void {
    // A lease that ran out while its row waited for a worker: the row may be another claim's now. Not run; the next one
    // is taken (the pump goes on), and the claims go on as after any delivery.
    if (delivery.lapsedBeforeStart?.() === true) {
      this.#claimMore();
      return;
    }
    this.#inFlight.add(delivery);
    const control = this.#s.control;
    // A delivery a cancel request names starts with its signal aborted; none asked for: nothing to check.
    if (control !== undefined && control.requested > 0) control.starting(delivery);
    this.#s.activity.touch();
    let running: Promise<void> | undefined;
    try {
      running = this.#run.handle(delivery);
    } catch (error) {
      this.#run.unexpected(delivery, error);
    }
    if (running === undefined) this.#finish(delivery);
    else
      running.then(
        () => this.#finish(delivery),
        (error: unknown) => {
          this.#run.unexpected(delivery, error);
          this.#finish(delivery);
        },
      );
  }

  /** A delivery's worker is free again. */
  #finish(delivery: ClaimedDelivery): void {
    this.#inFlight.delete(delivery);
    this.#s.activity.touch();
    // A cap held by this process's own deliveries: the one that ended frees room (absent without a cap).
    this.#roomFreed();
    // Claim first, while this worker counts as free; then hand it the next buffered row.
    this.#claimMore();
    this.#buffer.pump();
    this.#checkIdle();
  }

  /** Runs a batch handler on the rows of one claim; they count in work until every one settled. */
  #startBatch(batches: { readonly run: BatchRun; inWork: number }, deliveries: readonly ClaimedDelivery[]): void {
    batches.inWork++;
    for (const delivery of deliveries) this.#inFlight.add(delivery);
    this.#s.activity.touch();
    void this.#run
      .apart(deliverBatch(batches.run, deliveries))
      .catch((error: unknown) => this.#s.logger.error({ ...errorFields(error), ...batches.run.place }, "batch delivery failed unexpectedly; its rows return when their holds end"))
      .finally(() => {
        batches.inWork--;
        for (const delivery of deliveries) this.#inFlight.delete(delivery);
        this.#s.activity.touch();
        this.#roomFreed();
        this.#claimMore();
        this.#checkIdle();
      });
  }

  /**
   * A delivery's settlement was written (or failed): a stop under way counts it; a row released for
   * later wakes the subscription when it comes due. Ended apart from its worker (free already), a
   * claim may start now, or the subscription be idle; still in work (its worker waited for the
   * settlement, or its batch goes on), the end of that work does it.
   */
  #ended(report: DeliveryReport): void {
    const { delay } = report;
    if (report.written) {
      if (this.#stop !== undefined && report.handler !== "undecodable") this.#stop.finished++;
      // Two times: the delay counted from before the write (on time where the row holds this clock's time) and
      // from after it (never early, whichever clock wrote the row); where they differ the second costs one claim.
      if (delay !== undefined) {
        this.wakeAt(delay.from + delay.ms);
        this.wakeAt(this.#s.clock.now().getTime() + delay.ms);
      }
    }
    if (this.#inFlight.has(report.delivery)) return;
    // A lease cap counts a row until its settlement lands: room is freed now, not when the worker was.
    const capped = this.#s.strategy.atCap !== undefined;
    if (capped) this.#roomFreed();
    // Claims again where a settlement's end can change what the pacer answers: the room under a cap, the settlements
    // being written when they were at the most it allows, a shared claim's transaction (its last row ends it).
    // Anything else a delivery holds (its worker) was given back when the worker was freed, which claimed then.
    const pace = this.#pace;
    if (capped || pace.settling + 1 >= pace.maxSettling || pace.mode === "shared") this.#claimMore();
    this.#checkIdle();
  }

  /**
   * A delivery ended under a cap: room is freed. The gate wakes when the last claim was cut by the
   * cap, and also while a claim is in flight: it may have counted the ending delivery as in work,
   * and would otherwise come back short and wait out a whole poll interval.
   */
  #roomFreed(): void {
    const atCap = this.#s.strategy.atCap;
    if (atCap !== undefined && (this.#claims.size > 0 || atCap.call(this.#s.strategy))) this.#gate.wake();
  }

  #checkIdle(): void {
    if (this.#inFlight.size === 0 && this.#pace.settling === 0 && this.#idle.length > 0) for (const resolve of this.#idle.splice(0)) resolve();
  }
}
