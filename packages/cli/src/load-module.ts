import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { RoutePolicy } from "@sqlinbox/dashboard";
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
  /** The routes (subscription names) of exported queues and subscribers, sorted. */
  readonly routes: readonly string[];
  /** Each exported queue's or subscriber's route with its table's description, one per route, sorted by route. */
  readonly subscriptions: readonly { readonly route: string; readonly description: InboxDescription }[];
  /** Each exported queue's or subscriber's policy (attempts, timeout, …), one per table and route. */
  readonly policies: readonly (RoutePolicy & { readonly table: string })[];
}

/** A queue (`InboxQueue`) or a subscriber's (its `queue`), read structurally like a description; `undefined` for anything else. */
function queueOf(value: unknown): { readonly table: string; readonly name: string; readonly options: object; readonly description: InboxDescription } | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const queue = "queue" in value && typeof (value as { queue: unknown }).queue === "object" ? (value as { queue: unknown }).queue : value;
  if (typeof queue !== "object" || queue === null || !("spec" in queue) || !("name" in queue) || !("options" in queue)) return undefined;
  const q = queue as { spec: unknown; name: unknown; options: unknown };
  const description = descriptionOf(q.spec);
  if (description === undefined || typeof q.name !== "string" || typeof q.options !== "object" || q.options === null) return undefined;
  return { table: description.table, name: q.name, options: q.options, description };
}

/** The caps and rate limits of a queue or a subscriber; `undefined` for anything else, or a queue with neither. */
function limitsOf(value: unknown): DeclaredLimits | undefined {
  const q = queueOf(value);
  if (q === undefined) return undefined;
  const { maxInWork, rateLimit } = q.options as { maxInWork?: unknown; rateLimit?: { max?: unknown; perMs?: unknown } };
  const cap = typeof maxInWork === "number" ? { maxInWork } : {};
  const rate = typeof rateLimit?.max === "number" && typeof rateLimit.perMs === "number" ? { rateLimit: { max: rateLimit.max, perMs: rateLimit.perMs } } : {};
  if (!("maxInWork" in cap) && !("rateLimit" in rate)) return undefined;
  return { table: q.table, route: q.name, ...cap, ...rate };
}

const num = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

/** What a queue or a subscriber declares about how its jobs run and fail; `undefined` for anything else. */
function policyOf(value: unknown): (RoutePolicy & { readonly table: string }) | undefined {
  const q = queueOf(value);
  if (q === undefined) return undefined;
  const o = q.options as Record<string, unknown>;
  const dead = o.deadLetter as { target?: { table?: { table?: unknown }; group?: unknown }; maxAttempts?: unknown } | undefined;
  const deadTable = dead?.target?.table?.table;
  const deadLetter = typeof deadTable === "string" ? `table ${deadTable}` : typeof dead?.target?.group === "string" ? `group ${dead.target.group}` : undefined;
  const timeout = o.timeout as { ms?: unknown; graceMs?: unknown } | undefined;
  const rate = o.rateLimit as { max?: unknown; perMs?: unknown } | undefined;
  const retain = o.retain as { done?: unknown; deadLettered?: unknown } | undefined;
  const maxAttempts = num(dead?.maxAttempts);
  const [ms, graceMs, max, perMs] = [num(timeout?.ms), num(timeout?.graceMs), num(rate?.max), num(rate?.perMs)];
  const [leaseMs, maxInWork, maxInWorkPerKey] = [num(o.lease), num(o.maxInWork), num(o.maxInWorkPerKey)];
  const [doneMs, deadLetteredMs] = [num(retain?.done), num(retain?.deadLettered)];
  return {
    table: q.table,
    route: q.name,
    ...(maxAttempts === undefined ? {} : { maxAttempts }),
    ...(deadLetter === undefined ? {} : { deadLetter }),
    ...(ms === undefined ? {} : { timeout: { ms, graceMs: graceMs ?? 0 } }),
    ...(leaseMs === undefined ? {} : { leaseMs }),
    onError: typeof o.onError === "function" ? "the queue's own policy" : "default backoff",
    workers: num(o.workers) ?? 1,
    batch: num(o.batch) ?? 1,
    pollIntervalMs: num(o.pollInterval) ?? 0,
    ...(maxInWork === undefined ? {} : { maxInWork }),
    ...(maxInWorkPerKey === undefined ? {} : { maxInWorkPerKey }),
    ...(max === undefined || perMs === undefined ? {} : { rateLimit: { max, perMs } }),
    ...(doneMs === undefined && deadLetteredMs === undefined
      ? {}
      : { retain: { ...(doneMs === undefined ? {} : { doneMs }), ...(deadLetteredMs === undefined ? {} : { deadLetteredMs }) } }),
  };
}

/**
 * A table description read structurally: a module may import its own copy of `@sqlinbox/core`,
 * so `instanceof InboxSpec` would miss it.
 */
function descriptionOf(value: unknown): InboxDescription | undefined {
  if (typeof value !== "object" || value === null || !("description" in value)) return undefined;
  const d = (value as { description: unknown }).description;
  if (typeof d !== "object" || d === null) return undefined;
  const r = d as Record<string, unknown>;
  return typeof r.table === "string" && typeof r.form === "string" && typeof r.id === "object" && Array.isArray(r.columns) ? (d as InboxDescription) : undefined;
}

/** A module the command imported, and what its import opened and left running, counted by kind (`2 Timeout`). */
export interface ImportedModule {
  readonly path: string;
  readonly startedOnImport: readonly string[];
}
const imported: ImportedModule[] = [];

/**
 * The modules this process imported (`--module`). A module that starts an app or opens a pool on
 * import, where a module that only describes tables was meant, keeps the process alive after the
 * command is done: `bin` reads this to end it, naming the module.
 */
export function importedModules(): readonly ImportedModule[] {
  return imported;
}

/**
 * What keeps the process alive now (`process.getActiveResourcesInfo()`), with the standard streams opened
 * first so that they are part of every snapshot, never of a difference between two.
 */
export function activeResources(): string[] {
  void process.stdout;
  void process.stderr;
  return process.getActiveResourcesInfo().filter((kind) => !TRANSIENT.has(kind));
}

/**
 * File-system requests in flight: the loader's own reads of the module's files (an `import` of a `.js` module can
 * return while the loader still closes the file it read), which end by themselves; nothing a module starts and keeps.
 */
const TRANSIENT = new Set(["CloseReq", "FSReqCallback", "FSReqPromise", "FileHandleCloseReq"]);

/** `after` less `before`, as counts by kind (`1 TCPServerWrap, 2 Timeout`): what was opened in between and is still open. */
export function opened(before: readonly string[], after: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const kind of after) left.set(kind, (left.get(kind) ?? 0) + 1);
  for (const kind of before) if ((left.get(kind) ?? 0) > 0) left.set(kind, (left.get(kind) ?? 0) - 1);
  return [...left].filter(([, n]) => n > 0).map(([kind, n]) => `${n} ${kind}`);
}

/**
 * Imports the user's module (TypeScript through tsx, loaded only for `.ts`/`.mts`/`.cts`) and
 * collects every export that is a table description, and `deadLetters` when exported.
 * An import that leaves connections or timers running is reported on stderr: the module does more
 * than describe tables (it starts an app, opens a pool), and it keeps doing so while the command runs.
 */
export async function loadModule(path: string): Promise<LoadedModule> {
  const url = pathToFileURL(resolve(path)).href;
  let exports: Record<string, unknown>;
  let before: string[] = [];
  try {
    if (/\.[mc]?ts$/.test(path)) {
      const { tsImport } = await import("tsx/esm/api");
      before = activeResources();
      exports = (await tsImport(url, import.meta.url)) as Record<string, unknown>;
    } else {
      before = activeResources();
      exports = (await import(url)) as Record<string, unknown>;
    }
  } catch (error) {
    // What it started before it threw may still run: `bin` ends the process all the same.
    imported.push({ path, startedOnImport: opened(before, activeResources()) });
    throw new CliError(ExitCode.usage, `cannot load the module ${path}: ${(error as Error).message}`, { cause: error });
  }
  const resources = opened(before, activeResources());
  imported.push({ path, startedOnImport: resources });
  const started =
    resources.length === 0 ? "" : ` Importing it started something that is still running (${resources.join(", ")}): it looks like an app, not a module of table descriptions.`;
  const tables = new Map<string, InboxDescription>();
  const limits = new Map<string, DeclaredLimits>();
  const routes = new Map<string, InboxDescription>();
  const policies = new Map<string, RoutePolicy & { readonly table: string }>();
  for (const [name, value] of Object.entries(exports)) {
    if (name === "deadLetters") continue;
    const description = descriptionOf(value);
    if (description !== undefined) tables.set(name, description);
    const queue = queueOf(value);
    if (queue !== undefined) routes.set(queue.name, queue.description);
    const declared = limitsOf(value);
    // A queue and its subscriber are the same subscription: one entry per table and route.
    if (declared !== undefined) limits.set(`${declared.table}\u0000${declared.route}`, declared);
    const policy = policyOf(value);
    if (policy !== undefined) policies.set(`${policy.table}\u0000${policy.route}`, policy);
  }
  if (tables.size === 0) {
    throw new CliError(ExitCode.usage, `the module ${path} exports no table description (an InboxSpec or a defineInbox value).${started}`);
  }
  if (resources.length > 0) {
    process.stderr.write(
      `sqlinbox: warning: importing ${path} started something that is still running (${resources.join(", ")}): a connection, an app or a timer. ` +
        "Give --module a module that only describes the tables (export them there and import them into the app), so that reading it starts nothing.\n",
    );
  }
  const names = [...routes.keys()].sort();
  return {
    tables,
    deadLetters: readDeadLetters(exports.deadLetters, path),
    limits: [...limits.values()],
    routes: names,
    subscriptions: names.map((route) => ({ route, description: routes.get(route) as InboxDescription })),
    policies: [...policies.values()].sort((a, b) => (a.route < b.route ? -1 : a.route > b.route ? 1 : 0)),
  };
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
