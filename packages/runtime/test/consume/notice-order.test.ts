/**
 * What an observer is told of one row stays in order when a row is claimed again while its last
 * settlement is still being written (a retry at once, taken by another worker before the write's
 * reply is read): the later delivery's notices wait for that settlement's.
 */
import { describe, expect, test } from "vitest";
import { NoticeOrder } from "../../src/consume/notice-order.js";

describe("NoticeOrder", () => {
  test("a later delivery's notices of the same id wait for the settlement being written, then go out in order", () => {
    const order = new NoticeOrder();
    const told: string[] = [];
    const first = { id: 7 };
    const second = { id: 7 };
    order.writing(first);
    order.notify(second, () => told.push("second started"));
    order.writing(second); // its own settlement, written before the first's reply was read
    order.notify(second, () => told.push("second settled"));
    expect(told).toEqual([]);
    order.notify(first, () => told.push("first settled")); // the writer's own notice is never held
    order.told(first, () => {});
    expect(told).toEqual(["first settled", "second started", "second settled"]);
    // Nothing is held any more: the next notice of the id goes out at once.
    order.notify(second, () => told.push("third"));
    expect(told.at(-1)).toBe("third");
  });

  test("other ids are never held, and a binary id compares by its bytes", () => {
    const order = new NoticeOrder();
    const told: string[] = [];
    order.writing({ id: Buffer.from("ab") });
    order.notify({ id: 8 }, () => told.push("other id"));
    order.notify({ id: Buffer.from("ab") }, () => told.push("same bytes"));
    expect(told).toEqual(["other id"]);
  });

  test("a notice that throws is reported and the rest still go out", () => {
    const order = new NoticeOrder();
    const told: string[] = [];
    const errors: unknown[] = [];
    const writer = { id: "x" };
    order.writing(writer);
    order.notify({ id: "x" }, () => {
      throw new Error("listener broke");
    });
    order.notify({ id: "x" }, () => told.push("after"));
    order.told(writer, (error) => errors.push(error));
    expect(told).toEqual(["after"]);
    expect(errors).toHaveLength(1);
  });
});
