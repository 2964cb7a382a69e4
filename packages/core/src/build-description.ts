import type { AdvisoryKey, AdvisoryKeyPart, ColumnDescription, InboxDescription } from "./description.js";
import { SqlInboxError } from "./errors.js";
import { validateIdentifier } from "./identifier.js";
import { validatePortableType } from "./portable-type.js";
import type { ClaimForm, ColumnRole } from "./roles.js";

type RoleColumns = Omit<InboxDescription, "table" | "schema" | "form" | "columns" | "advisoryKey" | "fifo">;

const COLUMN_ROLES: ReadonlySet<ColumnRole> = new Set<ColumnRole>([
  "id",
  "attempt",
  "lease",
  "payload",
  "retryAfter",
  "processedAt",
  "group",
  "priority",
  "orderKey",
  "headers",
  "lastError",
  "failedAttempts",
  "key",
  "result",
  "progress",
  "data",
]);
/** The roles whose column type a description may give: every other role's type is fixed by the role. */
const TYPED_ROLES: ReadonlySet<ColumnRole> = new Set<ColumnRole>(["id", "orderKey", "data"]);

/** Refusals shared with the type-level rules (`spec.ts`, `define.ts`): the same sentence at compile time and at run time. */
const ORDER_KEY_WITH_GROUP = "an order key and a group exclude each other: keep the order key, or the group (and fifo), not both";
const RESULT_NEEDS_PROCESSED_AT =
  "a result column needs a processedAt column: this table's ack deletes the row, and the result with it; describe .processedAt(column(…)) before .result(…)";
const ORDER_KEY_WITH_ADVISORY = "an order key and an advisory key exclude each other: name its column in the key template and drop the order key";

/** What both ways of describing a table hand over, before the rules are checked. */
export interface DescriptionParts {
  readonly table: string;
  /** A Postgres schema or MySQL/MariaDB database; validated like any identifier. */
  readonly schema?: string | undefined;
  readonly columns: readonly ColumnDescription[];
  readonly advisoryLock?: string | undefined;
  readonly fifo?: boolean | undefined;
  /** A Standard Schema or a `payloadOf` marker given with the payload column. */
  readonly payloadType?: unknown;
}

/**
 * Checks every rule the types check, again at run time (a description may come from
 * JavaScript or be forced past the types), and builds the frozen description.
 */
export function buildDescription(parts: DescriptionParts): InboxDescription {
  const table = validateIdentifier(parts.table, "table");
  const schema = parts.schema === undefined ? undefined : validateIdentifier(parts.schema, `schema of table "${table}"`);
  const fail = (message: string, column?: string): never => {
    throw new SqlInboxError("Declaration", message, column === undefined ? { table } : { table, column });
  };

  // Frozen copies: the role entries, the column list and the key's parts all point at these,
  // and no two specs share a mutable column.
  const columns = Object.freeze(parts.columns.map((c) => Object.freeze({ ...c })));
  const byRole = new Map<ColumnRole, ColumnDescription>();
  const names = new Set<string>();
  const keys = new Set<string>();
  for (const col of columns) {
    validateIdentifier(col.name, `column (${col.role})`);
    if (!COLUMN_ROLES.has(col.role)) fail(`column "${col.name}" has no known role "${String(col.role)}": use one of ${[...COLUMN_ROLES].join(", ")}`, col.name);
    if (col.type !== undefined) {
      if (!TYPED_ROLES.has(col.role))
        fail(`the ${col.role} column "${col.name}" has a type, but its type is fixed by its role: drop .type(…) (only id, order key and data columns take a type)`, col.name);
      validatePortableType(col.type, col.name);
    }
    if (names.has(col.name)) fail(`column "${col.name}" is described twice: describe each column once`, col.name);
    if (keys.has(col.key)) fail(`the row key "${col.key}" is used by two columns: give each column its own key`, col.name);
    names.add(col.name);
    keys.add(col.key);
    if (col.role === "data") continue;
    const held = byRole.get(col.role);
    if (held !== undefined) {
      fail(`the ${col.role} role is played by both "${held.name}" and "${col.name}": a table has at most one ${col.role} column, so describe the others as data`, col.name);
    }
    byRole.set(col.role, col);
  }

  const id = byRole.get("id") ?? fail("no id column is described: every table needs one, given by field.id() or as the second argument of InboxSpec.table");
  const lease = byRole.get("lease");
  const group = byRole.get("group");
  const fifo = parts.fifo === true;

  let advisoryKey: AdvisoryKey | undefined;
  if (parts.advisoryLock !== undefined) {
    if (lease !== undefined) {
      fail(`a lease column ("${lease.name}") and an advisory key ("${parts.advisoryLock}") exclude each other: keep the lease column or the advisory key, not both`, lease.name);
    }
    advisoryKey = parseAdvisoryKey(parts.advisoryLock, columns, fail);
  }
  if (fifo && group === undefined) fail("fifo needs a group column: describe one with the group role, or drop fifo");
  if (fifo && advisoryKey !== undefined) {
    fail(`fifo and an advisory key ("${advisoryKey.template}") exclude each other: an advisory key already keeps rows that share it apart, so drop one of them`);
  }

  const result = byRole.get("result");
  if (result !== undefined && byRole.get("processedAt") === undefined) fail(RESULT_NEEDS_PROCESSED_AT, result.name);

  const orderKey = byRole.get("orderKey");
  if (orderKey !== undefined && group !== undefined) fail(ORDER_KEY_WITH_GROUP, orderKey.name);
  if (orderKey !== undefined && advisoryKey !== undefined) fail(ORDER_KEY_WITH_ADVISORY, orderKey.name);

  const form: ClaimForm = lease !== undefined ? "lease" : advisoryKey !== undefined ? "advisory" : "rowLock";
  const roles: { -readonly [K in keyof RoleColumns]?: ColumnDescription } = { id };
  for (const [role, col] of byRole) {
    if (role !== "id" && role !== "data") roles[role] = col;
  }
  return Object.freeze({
    table,
    ...(schema !== undefined ? { schema } : {}),
    form,
    ...(roles as RoleColumns),
    columns,
    ...(advisoryKey !== undefined ? { advisoryKey } : {}),
    fifo,
    ...(parts.payloadType !== undefined ? { payloadType: parts.payloadType } : {}),
  });
}

function parseAdvisoryKey(template: string, columns: readonly ColumnDescription[], fail: (message: string, column?: string) => never): AdvisoryKey {
  if (typeof template !== "string" || template.length === 0) {
    fail('the advisory key template is empty: give one that names a column, such as "report-{customer_id}"');
  }
  const parts: AdvisoryKeyPart[] = [];
  const pattern = /\{([^{}]*)\}/g;
  let last = 0;
  for (const match of template.matchAll(pattern)) {
    const name = match[1] ?? "";
    if (match.index > last) parts.push(Object.freeze({ text: template.slice(last, match.index) }));
    const col = columns.find((c) => c.name === name) ?? columns.find((c) => c.key === name);
    if (col === undefined) {
      fail(`the advisory key "${template}" names {${name}}, which is not a described column: describe it, as data if it plays no role`, name);
    }
    parts.push(Object.freeze({ column: col }));
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push(Object.freeze({ text: template.slice(last) }));
  if (/[{}]/.test(parts.map((p) => ("text" in p ? p.text : "")).join(""))) {
    fail(`the advisory key "${template}" has an unmatched brace: write each placeholder as {column}`);
  }
  if (!parts.some((p) => "column" in p)) {
    fail(`the advisory key "${template}" names no column: every row would share one key; name at least one, such as {id}`);
  }
  return Object.freeze({ template, parts: Object.freeze(parts) });
}
