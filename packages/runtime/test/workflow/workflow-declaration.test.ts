/**
 * What a broker refuses of a workflow, naming the step and the route: a step's route it does not
 * declare, a route to another table, a workflow name taken, a start of a workflow it does not run, a
 * first payload that cannot be built; and an app whose steps' acks would write a workflow table that
 * does not exist fails its start (SQLite: the servers' test databases share one workflow table).
 */
import { column, InboxSpec, payloadOf, workflow } from "@sqlinbox/core";
import { afterAll, describe, expect, test } from "vitest";
import { App, createInboxTable, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { engineNamed } from "../support/engines.js";

const Charges = InboxSpec.table("charge_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<{ orderId: string }>());
const Ships = InboxSpec.table("ship_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<{ orderId: string }>());
const Order = workflow("order", payloadOf<{ orderId: string }>())
  .step("charge", Charges, (input) => input)
  .step("ship", Ships, { after: ["charge"] }, (input) => input);

describe("workflow declarations", () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("a step's route must be declared, and go to the step's table", () => {
    expect(() => SqlBroker.fromUrl("sqlite::memory:").route(Charges, "charge").workflow(Order)).toThrow(
      'Declaration: workflow "order", step "ship": its jobs go to route "ship", which this broker does not declare: declare it with .route(…, "ship") before .workflow(…)',
    );
    expect(() => SqlBroker.fromUrl("sqlite::memory:").route(Charges, "charge").route(Charges, "ship").workflow(Order)).toThrow(
      'workflow "order", step "ship": route "ship" goes to table "charge_jobs", not to the step\'s table "ship_jobs"',
    );
    const other = workflow("order", payloadOf<{ orderId: string }>()).step("charge", Charges, (input) => input);
    const broker = SqlBroker.fromUrl("sqlite::memory:").route(Charges, "charge").route(Ships, "ship").workflow(Order);
    expect(() => broker.workflow(other)).toThrow('workflow "order" is registered already, with other steps');
    expect(() => broker.workflow(Order)).not.toThrow();
  });

  test("a start of a workflow the broker does not run, or whose first payload cannot be built, writes nothing", async () => {
    const broker = SqlBroker.fromUrl("sqlite::memory:").route(Charges, "charge").route(Ships, "ship");
    closers.push(() => broker.close());
    await expect(broker.startWorkflow(Order, { orderId: "o1" })).rejects.toThrow('workflow "order" is not registered on this broker');
    const Broken = workflow("broken", payloadOf<{ orderId: string }>()).step("charge", Charges, () => {
      throw new Error("no order id");
    });
    await expect(broker.workflow(Broken).startWorkflow(Broken, { orderId: "o1" })).rejects.toThrow(
      'workflow "broken" cannot start, nothing was written: the payload builder of step "charge" threw: no order id',
    );
  });

  test("an app that runs a step fails its start without the workflow table", async () => {
    const engine = engineNamed("sqlite");
    const url = engine.url();
    const db = await engine.connect(url);
    closers.push(() => db.destroy());
    await createInboxTable(db, Charges);
    await createInboxTable(db, Ships);
    const broker = SqlBroker.fromUrl(url).route(Charges, "charge").route(Ships, "ship").workflow(Order);
    closers.push(() => broker.close());
    const app = new App({ name: "wf-no-table", version: "0", logger: silentLogger }).withBroker(broker, (b) =>
      b.include(subscriber(InboxQueue.of(Charges, "charge"), async () => {})),
    );
    await expect(app.start()).rejects.toThrow(
      "Schema: the workflow table sqlinbox_workflows does not exist: the acks of workflow steps write to it; create it with createWorkflowTable(db), workflowTableSql(engine) or sqlinbox ddl --workflows",
    );
  });
});
