import { describe, expect, test } from "vitest";
import { column, defineInbox, field, payloadOf, InboxSpec, type AdvisoryKeyPart } from "../src/internal.js";

interface Report {
  readonly title: string;
}

const seedByHand = () => InboxSpec.table("report_jobs", column("id").generated()).attempt(column("attempt").generated()).lease(column("locked_until")).payload(column("payload"));
const seedDeclared = () =>
  defineInbox({
    table: "report_jobs",
    columns: { id: field.id().generated(), attempt: field.attempt().generated(), locked_until: field.lease(), payload: field.payload() },
  });

describe("both forms give the same description", () => {
  test("the seed's table", () => {
    const description = seedByHand().description;
    expect(seedDeclared().description).toEqual(description);
    expect(description).toEqual({
      table: "report_jobs",
      form: "lease",
      id: { name: "id", key: "id", role: "id", generated: true },
      attempt: { name: "attempt", key: "attempt", role: "attempt", generated: true },
      lease: { name: "locked_until", key: "locked_until", role: "lease", generated: false },
      payload: { name: "payload", key: "payload", role: "payload", generated: false },
      columns: [
        { name: "id", key: "id", role: "id", generated: true },
        { name: "attempt", key: "attempt", role: "attempt", generated: true },
        { name: "locked_until", key: "locked_until", role: "lease", generated: false },
        { name: "payload", key: "payload", role: "payload", generated: false },
      ],
      fifo: false,
    });
  });

  test("with a payload type marker in both", () => {
    const byHand = InboxSpec.table("report_jobs", column("id").generated())
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .payload(column("payload"), payloadOf<Report>());
    const declared = defineInbox({
      table: "report_jobs",
      columns: { id: field.id().generated(), attempt: field.attempt().generated(), locked_until: field.lease(), payload: field.payload("payload", payloadOf<Report>()) },
    });
    expect(declared.description).toEqual(byHand.description);
    expect(byHand.description.payloadType).toEqual(payloadOf<Report>());
  });

  test("a renamed column differs only in its row key: the property key declaratively, the name by hand", () => {
    const declared = defineInbox({
      table: "report_jobs",
      columns: { id: field.id().generated(), attempt: field.attempt().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload() },
    });
    expect(declared.description.lease).toEqual({ name: "locked_until", key: "lockedUntil", role: "lease", generated: false });
    const withNameAsKey = {
      ...declared.description,
      lease: { ...declared.description.lease, key: "locked_until" },
      columns: declared.description.columns.map((c) => (c.role === "lease" ? { ...c, key: "locked_until" } : c)),
    };
    expect(withNameAsKey).toEqual(seedByHand().description);
  });

  test("a grouped fifo table and an advisory table", () => {
    expect(
      defineInbox({
        table: "jobs",
        columns: { id: field.id(), queue: field.group(), priority: field.priority(), run_at: field.retryAfter(), done_at: field.processedAt() },
        fifo: true,
      }).description,
    ).toEqual(
      InboxSpec.table("jobs", column("id")).group(column("queue")).priority(column("priority")).retryAfter(column("run_at")).processedAt(column("done_at")).fifo().description,
    );
    expect(defineInbox({ table: "jobs", columns: { id: field.id(), customer_id: field.data() }, advisoryLock: "r-{customer_id}" }).description).toEqual(
      InboxSpec.table("jobs", column("id")).data(column("customer_id")).advisoryLock("r-{customer_id}").description,
    );
  });

  test("form: rowLock by default, lease with a lease column, advisory with a key", () => {
    expect(InboxSpec.table("t", column("id")).form).toBe("rowLock");
    expect(seedByHand().form).toBe("lease");
    expect(seedDeclared().form).toBe("lease");
    expect(defineInbox({ table: "t", columns: { id: field.id() }, advisoryLock: "k-{id}" }).form).toBe("advisory");
  });
});

describe("descriptions and builders are immutable", () => {
  test("a setter returns a new spec and leaves the old one as it was", () => {
    const base = InboxSpec.table("report_jobs", column("id"));
    const before = structuredClone(base.description);
    const leased = base.lease(column("locked_until"));
    const keyed = base.data(column("customer_id")).advisoryLock("r-{customer_id}");
    const grouped = base.group(column("g"));
    const fifo = grouped.fifo();
    expect(leased).not.toBe(base);
    expect(base.description).toEqual(before);
    expect(base.form).toBe("rowLock");
    expect(leased.form).toBe("lease");
    expect(keyed.form).toBe("advisory");
    expect(grouped.description.fifo).toBe(false);
    expect(fifo.description.fifo).toBe(true);
  });

  test("specs, descriptions, columns and key parts are frozen", () => {
    const spec = InboxSpec.table("report_jobs", column("id")).attempt(column("attempt")).data(column("customer_id")).advisoryLock("r-{customer_id}");
    const declared = seedDeclared();
    for (const s of [spec, declared]) {
      expect(Object.isFrozen(s)).toBe(true);
      expect(Object.isFrozen(s.description)).toBe(true);
      expect(Object.isFrozen(s.description.id)).toBe(true);
      expect(Object.isFrozen(s.description.columns)).toBe(true);
      for (const c of s.description.columns) expect(Object.isFrozen(c)).toBe(true);
    }
    expect(Object.isFrozen(spec.description.attempt)).toBe(true);
    expect(Object.isFrozen(spec.description.advisoryKey)).toBe(true);
    expect(Object.isFrozen(spec.description.advisoryKey?.parts)).toBe(true);
    for (const p of spec.description.advisoryKey?.parts ?? []) expect(Object.isFrozen(p)).toBe(true);
    expect(() => {
      (spec.description.id as { name: string }).name = "other";
    }).toThrow(TypeError);
    expect(Object.isFrozen(column("id"))).toBe(true);
    expect(Object.isFrozen(field.id())).toBe(true);
    expect(Object.isFrozen(field)).toBe(true);
  });

  test("a role column is the same frozen object as its entry in columns, and specs share no mutable column", () => {
    const base = InboxSpec.table("t", column("id"));
    const next = base.attempt(column("attempt"));
    expect(next.description.id).toBe(next.description.columns[0]);
    expect(next.description.attempt).toBe(next.description.columns[1]);
    expect(Object.isFrozen(base.description.id)).toBe(true);
  });

  test("generated() returns a new column and leaves the old one as it was", () => {
    const id = column("id");
    const generated = id.generated();
    expect(id.isGenerated).toBe(false);
    expect(generated.isGenerated).toBe(true);
    const f = field.attempt();
    expect(f.generated().isGenerated).toBe(true);
    expect(f.isGenerated).toBe(false);
  });
});

describe("advisory keys", () => {
  const columnOf = (part: AdvisoryKeyPart | undefined) => (part !== undefined && "column" in part ? part.column.name : undefined);

  test("a key by id", () => {
    const key = InboxSpec.table("report_jobs", column("id")).advisoryLock("report-{id}").description.advisoryKey;
    expect(key?.template).toBe("report-{id}");
    expect(key?.parts).toEqual([{ text: "report-" }, { column: { name: "id", key: "id", role: "id", generated: false } }]);
  });

  test("a key by a non-id column, with text on both sides and two placeholders", () => {
    const spec = InboxSpec.table("report_jobs", column("id")).data(column("customer_id")).data(column("region")).advisoryLock("r:{customer_id}/{region}!");
    const parts = spec.description.advisoryKey?.parts ?? [];
    expect(parts.map((p) => ("text" in p ? p.text : `<${columnOf(p)}>`))).toEqual(["r:", "<customer_id>", "/", "<region>", "!"]);
    expect(columnOf(parts[1])).toBe("customer_id");
    expect(parts[1] !== undefined && "column" in parts[1] ? parts[1].column.role : undefined).toBe("data");
  });

  test("a key that is only a placeholder, and adjacent placeholders", () => {
    const spec = InboxSpec.table("t", column("id")).data(column("a")).data(column("b"));
    expect(spec.advisoryLock("{id}").description.advisoryKey?.parts.map(columnOf)).toEqual(["id"]);
    expect(spec.advisoryLock("{a}{b}").description.advisoryKey?.parts.map(columnOf)).toEqual(["a", "b"]);
  });

  test("declaratively, a placeholder may name the column or its property key; both resolve to the column", () => {
    const byKey = defineInbox({ table: "t", columns: { id: field.id(), customer: field.data("customer_id") }, advisoryLock: "r-{customer}" });
    const byName = defineInbox({ table: "t", columns: { id: field.id(), customer: field.data("customer_id") }, advisoryLock: "r-{customer_id}" });
    expect(columnOf(byKey.description.advisoryKey?.parts[1])).toBe("customer_id");
    expect(byKey.description.advisoryKey?.parts[1]).toEqual(byName.description.advisoryKey?.parts[1]);
  });
});

describe("result and progress columns", () => {
  test("both ways give the same description; a result without processedAt is refused at run time too", () => {
    const byHand = InboxSpec.table("jobs", column("id").generated()).processedAt(column("processed_at")).result(column("result")).progress(column("progress"));
    const declared = defineInbox({
      table: "jobs",
      columns: { id: field.id().generated(), processedAt: field.processedAt("processed_at"), result: field.result(), progress: field.progress() },
    });
    expect(declared.description.result).toEqual(byHand.description.result);
    expect(declared.description.progress).toEqual(byHand.description.progress);
    expect(byHand.description.result?.name).toBe("result");
    const forced = defineInbox as (d: unknown) => unknown;
    expect(() => forced({ table: "jobs", columns: { id: field.id(), result: field.result() } })).toThrow(/a result column needs a processedAt column/);
  });
});
