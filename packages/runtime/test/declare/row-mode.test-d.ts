import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, defineInbox, field } from "@sqlinbox/core";
import { HandlerOutcome, InboxQueue, SqlBroker, subscriber, type Handler, type InboxContext, type Outputs } from "../../src/index.js";

// A table without a payload column: its handlers receive the row, typed from the described columns.
const Exports = defineInbox({
  table: "exports",
  columns: {
    id: field.id<number>().generated(),
    attempt: field.attempt().generated(),
    lockedUntil: field.lease("locked_until"),
    customer_id: field.data<string>(),
    amount: field.data("amount_cents").holds<number>(),
  },
});
const ExportsByHand = InboxSpec.table("exports", column("id").generated().holds<number>())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .data(column("customer_id").holds<string>());

interface ExportRow {
  readonly id: number;
  readonly attempt: number;
  readonly lockedUntil: Date | string | null;
  readonly customer_id: string;
  readonly amount: number;
}

describe("row-mode handlers receive the row", () => {
  test("the function form, declaratively: each column typed by its role or by field.data<T>()", () => {
    subscriber(InboxQueue.of(Exports, "exports"), async (row) => {
      expectTypeOf(row).toEqualTypeOf<ExportRow>();
      expectTypeOf(row).not.toBeUnknown();
      // @ts-expect-error a column that is not described is not on the row
      void row.region;
      return HandlerOutcome.ack();
    });
  });

  test("the function form, by hand: data columns typed by .holds<T>()", () => {
    subscriber(InboxQueue.of(ExportsByHand, "exports"), async (row) => {
      expectTypeOf(row).toEqualTypeOf<{
        readonly id: number;
        readonly attempt: number;
        readonly locked_until: Date | string | null;
        readonly customer_id: string;
      }>();
    });
  });

  test("the class form takes the same row", () => {
    class Export implements Handler<typeof Exports> {
      async handle(row: ExportRow, _outs: Outputs, _ctx: InboxContext) {
        expectTypeOf(row.customer_id).toEqualTypeOf<string>();
      }
    }
    subscriber(InboxQueue.of(Exports, "exports"), new Export());
  });

  test("a publish writes some of the row's columns, typed as described", () => {
    const broker = SqlBroker.fromUrl("sqlite::memory:").route(Exports, "exports");
    void broker.publish("exports", { customer_id: "c-1", amount: 120 });
    // @ts-expect-error amount holds a number
    void broker.publish("exports", { customer_id: "c-1", amount: "120" });
  });
});
