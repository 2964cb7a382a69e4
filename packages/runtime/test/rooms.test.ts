/**
 * The runtime's rooms, checked on its sources: what an outcome does is decided in one module,
 * what a claim form does by its strategy (inside `claim/`), and what an engine does by the
 * dialect's capabilities. Each rule's patterns are tested on samples first, so a pattern that
 * stopped matching fails here instead of passing every file.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const src = join(dirname(fileURLToPath(import.meta.url)), "../src");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith(".ts") ? [path] : [];
  });
}

/** The code without its comments (a comment may quote a name; code may not compare it). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

const OUTCOME_KINDS = "ack|retry|drop|retryAfter|deadLetter";
const FORMS = "rowLock|lease|advisory";
const ENGINES = "postgres|postgresql|mysql|mariadb|sqlite";

interface Rule {
  readonly name: string;
  readonly patterns: readonly RegExp[];
  /** Files (relative to src/) where the rule does not apply. */
  readonly allowed: (file: string) => boolean;
  /** Lines the patterns must find, and lines they must not. */
  readonly finds: readonly string[];
  readonly passes: readonly string[];
}

const rules: readonly Rule[] = [
  {
    name: "an outcome's kind is compared only in the settlement module",
    patterns: [
      new RegExp(`\\.kind\\s*[!=]==?\\s*["'\`](?:${OUTCOME_KINDS})["'\`]`),
      new RegExp(`["'\`](?:${OUTCOME_KINDS})["'\`]\\s*[!=]==?\\s*[\\w.]*\\.kind\\b`),
      new RegExp(`case\\s+["'\`](?:${OUTCOME_KINDS})["'\`]\\s*:`),
    ],
    allowed: (file) => file === "claim/settlement.ts",
    finds: ['if (outcome.kind === "ack") return', 'if (o.kind !== "retryAfter" || x)', 'case "deadLetter":', 'if ("drop" === outcome.kind)'],
    passes: ['if (subscriber.kind === "batch")', "logger.error({ outcome: outcome.kind })", 'const s = "ack";'],
  },
  {
    name: "no file outside claim/ names a claim form",
    // The engine capability `rowLock` shares the form's name: naming the capability is not naming the form.
    patterns: [new RegExp(`(?<!EngineSupports<\\s*\\w+\\s*,\\s*)["'\`](?:${FORMS})["'\`]`)],
    allowed: (file) => file.startsWith("claim/"),
    finds: ['if (spec.form === "rowLock")', 'FormOf<R> extends "advisory" ? 1 : 2', "const f = 'lease';"],
    passes: [
      '"its row returns when its lease expires"',
      "const form = profile.form;",
      "HasLeaseColumn<R> extends true",
      'type A<E> = [EngineSupports<E, "rowLock">] extends [false] ? 1 : 2;',
    ],
  },
  {
    name: "no file compares an engine's name",
    patterns: [
      new RegExp(`[!=]==?\\s*["'\`](?:${ENGINES})["'\`]`),
      new RegExp(`["'\`](?:${ENGINES})["'\`]\\s*[!=]==?`),
      new RegExp(`case\\s+["'\`](?:${ENGINES})["'\`]\\s*:`),
      new RegExp(`extends\\s*\\[?\\s*["'\`](?:${ENGINES})["'\`]`),
      new RegExp(`Extract<\\s*\\w+\\s*,\\s*["'\`](?:${ENGINES})["'\`]`),
      /instanceof\s+(?:Postgres|Mysql|Sqlite)(?:Adapter|Dialect)\b/,
    ],
    allowed: () => false,
    finds: [
      'if (engine !== "postgres")',
      'readsTimeAsDate = capabilities.engine === "postgres";',
      'case "mysql":',
      'type A<E> = [E] extends ["sqlite"] ? 1 : 2;',
      'type B<E> = [Extract<E, "postgres">] extends [never] ? 1 : 2;',
      "if (adapter instanceof PostgresAdapter) return x;",
    ],
    passes: ['return { engine: "postgres", poolMax: max };', 'const DRIVERS = { postgres: openPostgres, "postgresql": openPostgres };', "if (capabilities.listenNotify) listen();"],
  },
];

const files = sources(src).map((path) => ({ file: relative(src, path).replaceAll("\\", "/"), text: code(readFileSync(path, "utf8")) }));

describe.each(rules)("$name", (rule) => {
  const matches = (line: string): boolean => rule.patterns.some((p) => p.test(line));

  test("its patterns find what they must and pass what they may", () => {
    for (const line of rule.finds) expect(matches(code(line)), line).toBe(true);
    for (const line of rule.passes) expect(matches(code(line)), line).toBe(false);
  });

  test("holds in runtime/src", () => {
    const found = files
      .filter(({ file }) => !rule.allowed(file))
      .flatMap(({ file, text }) =>
        text
          .split("\n")
          .map((line, i) => ({ line: line.trim(), at: `${file}:${i + 1}` }))
          .filter(({ line }) => matches(line))
          .map(({ line, at }) => `${at}: ${line}`),
      );
    expect(found).toEqual([]);
  });
});

describe("rooms a reader can name", () => {
  test("runtime/src has at most 12 files at its top level", () => {
    const top = readdirSync(src).filter((name) => statSync(join(src, name)).isFile());
    expect(top.length, top.join(", ")).toBeLessThanOrEqual(12);
  });

  test("Subscription keeps at most 10 private fields: the loop (pace, claim, hand out), not its helpers' state", () => {
    const text = code(readFileSync(join(src, "consume/subscription.ts"), "utf8"));
    const body = text.slice(text.indexOf("export class Subscription"));
    // A private field is `#name` declared at the class body's indentation and not followed by `(` (a method).
    const fields = [...body.matchAll(/^ {2}(?:static\s+)?(?:readonly\s+)?#(\w+)\s*[:=;]/gm)].map((m) => m[1]);
    expect(fields.length).toBeGreaterThan(3); // the pattern still finds fields
    expect(fields.length, fields.join(", ")).toBeLessThanOrEqual(10);
  });
});
