import type { AdvisoryKey, AdvisoryKeyPart, ColumnDescription, InboxDescription } from "./description.js";
import { SqlInboxError } from "./errors.js";
import { validateIdentifier } from "./identifier.js";
import type { ClaimForm, ColumnRole } from "./roles.js";

type RoleColumns = Omit<InboxDescription, "table" | "form" | "columns" | "advisoryKey" | "fifo">;

/** What both ways of describing a table hand over, before the rules are checked. */
export interface DescriptionParts {
  readonly table: string;
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
  const fail = (message: string, column?: string): never => {
    throw new SqlInboxError("Declaration", message, column === undefined ? { table } : { table, column });
  };

  const byRole = new Map<ColumnRole, ColumnDescription>();
  const names = new Set<string>();
  const keys = new Set<string>();
  for (const col of parts.columns) {
    validateIdentifier(col.name, `column (${col.role})`);
    if (names.has(col.name)) fail(`column "${col.name}" is described twice: describe each column once`, col.name);
    if (keys.has(col.key)) fail(`the row key "${col.key}" is used twice`, col.name);
    names.add(col.name);
    keys.add(col.key);
    if (col.role === "data") continue;
    const held = byRole.get(col.role);
    if (held !== undefined) {
      fail(`the ${col.role} role is played by both "${held.name}" and "${col.name}": a table has at most one ${col.role} column`, col.name);
    }
    byRole.set(col.role, col);
  }

  const id = byRole.get("id") ?? fail("no id column is described: every table needs one (field.id() or the second argument of InboxSpec.table)");
  const lease = byRole.get("lease");
  const group = byRole.get("group");
  const fifo = parts.fifo === true;

  let advisoryKey: AdvisoryKey | undefined;
  if (parts.advisoryLock !== undefined) {
    if (lease !== undefined) {
      fail(`a lease column ("${lease.name}") and an advisory key ("${parts.advisoryLock}") exclude each other: choose one claim form`);
    }
    advisoryKey = parseAdvisoryKey(parts.advisoryLock, parts.columns, fail);
  }
  if (fifo && group === undefined) fail("fifo needs a group column: describe one with the group role");
  if (fifo && advisoryKey !== undefined) fail("fifo and an advisory key exclude each other: an advisory key already orders rows that share it");

  const form: ClaimForm = lease !== undefined ? "lease" : advisoryKey !== undefined ? "advisory" : "rowLock";
  const roles: { -readonly [K in keyof RoleColumns]?: ColumnDescription } = { id };
  for (const [role, col] of byRole) {
    if (role !== "id" && role !== "data") roles[role] = col;
  }
  return Object.freeze({
    table,
    form,
    ...(roles as RoleColumns),
    columns: Object.freeze([...parts.columns.map((c) => Object.freeze({ ...c }))]),
    ...(advisoryKey !== undefined ? { advisoryKey } : {}),
    fifo,
    ...(parts.payloadType !== undefined ? { payloadType: parts.payloadType } : {}),
  });
}

function parseAdvisoryKey(
  template: string,
  columns: readonly ColumnDescription[],
  fail: (message: string, column?: string) => never,
): AdvisoryKey {
  if (typeof template !== "string" || template.length === 0) fail("the advisory key template is empty");
  const parts: AdvisoryKeyPart[] = [];
  const pattern = /\{([^{}]*)\}/g;
  let last = 0;
  for (const match of template.matchAll(pattern)) {
    const name = match[1] ?? "";
    if (match.index > last) parts.push(Object.freeze({ text: template.slice(last, match.index) }));
    const col = columns.find((c) => c.name === name) ?? columns.find((c) => c.key === name);
    if (col === undefined) {
      fail(`the advisory key "${template}" names {${name}}, which is not a described column: describe it (as data if it plays no role)`, name);
    }
    parts.push(Object.freeze({ column: col }));
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push(Object.freeze({ text: template.slice(last) }));
  if (/[{}]/.test(parts.map((p) => ("text" in p ? p.text : "")).join(""))) {
    fail(`the advisory key "${template}" has an unmatched brace`);
  }
  if (!parts.some((p) => "column" in p)) {
    fail(`the advisory key "${template}" names no column: every row would share one key; name at least one, such as {id}`);
  }
  return Object.freeze({ template, parts: Object.freeze(parts) });
}
