import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { InboxDescription } from "@sqlinbox/core/internal";
import { CliError, ExitCode } from "./exit-codes.js";

/** A dead-letter declaration a module exports: a destination table, or a dead group of the same table. */
export type DeclaredDeadLetter =
  | { readonly source: InboxDescription; readonly destination: InboxDescription }
  | { readonly source: InboxDescription; readonly group: string; readonly deadGroup: string };

/** A subscription's flow control a module exports (an `InboxQueue`, or a subscriber of one), with a cap or a rate limit. */
export interface DeclaredLimits {
  readonly table: string;
  readonly route: string;
  readonly maxInWork?: number;
  readonly rateLimit?: { readonly max: number; readonly perMs: number };
}

export interface LoadedModule {
  /** Every exported table description, by export name. */
  readonly tables: ReadonlyMap<string, InboxDescription>;
  readonly deadLetters: readonly DeclaredDeadLetter[];
  /** The caps and rate limits of exported queues and subscribers. */
  readonly limits: readonly DeclaredLimits[];
}

/**
 * The caps and rate limits of a queue (`InboxQueue`) or a subscriber (its `queue`), read
 * structurally like a description; `undefined` for anything else, or a queue with neither.
 */
export function limitsOf(value: unknown): DeclaredLimits | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const queue = "queue" in value && typeof (value as { queue: unknown }).queue === "object" ? (value as { queue: unknown }).queue : value;
  if (typeof queue !== "object" || queue === null || !("spec" in queue) || !("name" in queue) || !("options" in queue)) return undefined;
  const q = queue as { spec: unknown; name: unknown; options: unknown };
  const description = descriptionOf(q.spec);
  if (description === undefined || typeof q.name !== "string" || typeof q.options !== "object" || q.options === null) return undefined;
  const { maxInWork, rateLimit } = q.options as { maxInWork?: unknown; rateLimit?: { max?: unknown; perMs?: unknown } };
  const cap = typeof maxInWork === "number" ? { maxInWork } : {};
  const rate = typeof rateLimit?.max === "number" && typeof rateLimit.perMs === "number" ? { rateLimit: { max: rateLimit.max, perMs: rateLimit.perMs } } : {};
  if (!("maxInWork" in cap) && !("rateLimit" in rate)) return undefined;
  return { table: description.table, route: q.name, ...cap, ...rate };
}

/**
 * A table description read structurally: a module may import its own copy of `@sqlinbox/core`,
 * so `instanceof InboxSpec` would miss it.
 */
export function descriptionOf(value: unknown): InboxDescription | undefined {
  if (typeof value !== "object" || value === null || !("description" in value)) return undefined;
  const d = (value as { description: unknown }).description;
  if (typeof d !== "object" || d === null) return undefined;
  const r = d as Record<string, unknown>;
  return typeof r.table === "string" && typeof r.form === "string" && typeof r.id === "object" && Array.isArray(r.columns) ? (d as InboxDescription) : undefined;
}

/**
 * Imports the user's module (TypeScript through tsx, loaded only for `.ts`/`.mts`/`.cts`) and
 * collects every export that is a table description, and `deadLetters` when exported.
 */
export async function loadModule(path: string): Promise<LoadedModule> {
  const url = pathToFileURL(resolve(path)).href;
  let exports: Record<string, unknown>;
  try {
    if (/\.[mc]?ts$/.test(path)) {
      const { tsImport } = await import("tsx/esm/api");
      exports = (await tsImport(url, import.meta.url)) as Record<string, unknown>;
    } else {
      exports = (await import(url)) as Record<string, unknown>;
    }
  } catch (error) {
    throw new CliError(ExitCode.usage, `cannot load the module ${path}: ${(error as Error).message}`, { cause: error });
  }
  const tables = new Map<string, InboxDescription>();
  const limits = new Map<string, DeclaredLimits>();
  for (const [name, value] of Object.entries(exports)) {
    if (name === "deadLetters") continue;
    const description = descriptionOf(value);
    if (description !== undefined) tables.set(name, description);
    const declared = limitsOf(value);
    // A queue and its subscriber are the same subscription: one entry per table and route.
    if (declared !== undefined) limits.set(`${declared.table}\u0000${declared.route}`, declared);
  }
  if (tables.size === 0) {
    throw new CliError(ExitCode.usage, `the module ${path} exports no table description (an InboxSpec or a defineInbox value)`);
  }
  return { tables, deadLetters: readDeadLetters(exports.deadLetters, path), limits: [...limits.values()] };
}

function readDeadLetters(value: unknown, path: string): DeclaredDeadLetter[] {
  if (value === undefined) return [];
  const bad = (why: string): never => {
    throw new CliError(ExitCode.usage, `the module ${path} exports deadLetters, but ${why}: export [{ source, destination }] or [{ source, group, deadGroup }]`);
  };
  if (!Array.isArray(value)) bad("it is not an array");
  return (value as unknown[]).map((entry, i) => {
    const e = (entry ?? {}) as Record<string, unknown>;
    const source = descriptionOf(e.source) ?? bad(`entry ${i} has no source table description`);
    if (e.destination !== undefined) {
      return { source, destination: descriptionOf(e.destination) ?? bad(`entry ${i}'s destination is not a table description`) };
    }
    if (typeof e.group === "string" && typeof e.deadGroup === "string") return { source, group: e.group, deadGroup: e.deadGroup };
    return bad(`entry ${i} names neither a destination nor a group and deadGroup`);
  });
}
