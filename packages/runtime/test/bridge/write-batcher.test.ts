/**
 * The inbox bridges' batching (NATS, RabbitMQ): the first message to an idle batcher is written at once and
 * alone; what arrives during a write goes together in the next, at most `max` per write, in the order added;
 * a reader that awaits `add` is held once `max` wait; `idle` waits for every write; a write that rejects is
 * reported and the batches after it still go.
 */
import { describe, expect, test } from "vitest";
import { WriteBatcher } from "../../src/bridge/write-batcher.js";

/** A write that holds each batch until the test lets it go. */
function heldWrites() {
  const batches: number[][] = [];
  const releases: Array<() => void> = [];
  const write = (items: number[]) => {
    batches.push(items);
    return new Promise<void>((resolve) => releases.push(resolve));
  };
  const release = async () => {
    releases.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { batches, write, release };
}

describe("WriteBatcher", () => {
  test("a trickle is written one item at a time, with no wait", async () => {
    const written: number[][] = [];
    const batcher = new WriteBatcher<number>(
      8,
      async (items) => void written.push(items),
      () => {},
    );
    for (let i = 0; i < 3; i++) {
      await batcher.add(i);
      await batcher.idle();
    }
    expect(written).toEqual([[0], [1], [2]]);
  });

  test("items added during a write go together in the next, at most max per write, in order", async () => {
    const { batches, write, release } = heldWrites();
    const batcher = new WriteBatcher<number>(4, write, () => {});
    void batcher.add(0);
    // The first is in its write already; 1–9 wait behind it.
    for (let i = 1; i < 10; i++) void batcher.add(i);
    expect(batches).toEqual([[0]]);
    await release();
    expect(batches).toEqual([[0], [1, 2, 3, 4]]);
    await release();
    await release();
    expect(batches).toEqual([[0], [1, 2, 3, 4], [5, 6, 7, 8], [9]]);
    const idle = batcher.idle();
    await release();
    await idle;
  });

  test("add holds its caller once max items wait, until a write takes them", async () => {
    const { batches, write, release } = heldWrites();
    const batcher = new WriteBatcher<number>(2, write, () => {});
    await batcher.add(0); // written at once
    await batcher.add(1); // one waits: room left
    let held = true;
    const second = batcher.add(2).then(() => (held = false)); // two wait: the caller is held
    await new Promise((resolve) => setImmediate(resolve));
    expect(held).toBe(true);
    await release();
    await second;
    expect(held).toBe(false);
    expect(batches).toEqual([[0], [1, 2]]);
    await release();
    await batcher.idle();
  });

  test("a write that rejects is reported with its items, and the next batches still go", async () => {
    const failures: Array<[string, readonly number[]]> = [];
    const written: number[][] = [];
    let gate!: () => void;
    const first = new Promise<void>((resolve) => (gate = resolve));
    const batcher = new WriteBatcher<number>(
      8,
      async (items) => {
        if (items[0] === 0) {
          await first;
          throw new Error("refused");
        }
        written.push(items);
      },
      (error, items) => failures.push([(error as Error).message, items]),
    );
    void batcher.add(0);
    void batcher.add(1);
    void batcher.add(2);
    gate();
    await batcher.idle();
    expect(failures).toEqual([["refused", [0]]]);
    expect(written).toEqual([[1, 2]]);
  });

  test.each([0, -1, 1.5, Number.NaN])("refuses max = %s", (max) => {
    expect(
      () =>
        new WriteBatcher<number>(
          max,
          async () => {},
          () => {},
        ),
    ).toThrow(`a write batch holds 1 item or more, got ${max}`);
  });
});
