/**
 * `runtime/src` holds no SQL text: every statement is built in @sqlinbox/kysely-dialects.
 * Comments may show SQL (they explain what a form runs); code may not.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const srcDir = join(import.meta.dirname, "..", "src");

const SQL_TEXT: ReadonlyArray<readonly [string, RegExp]> = [
  ["sql`…` template", /\bsql\s*`/],
  ["sql.raw(", /\bsql\.raw\s*\(/],
  ["CompiledQuery.raw(", /\bCompiledQuery\.raw\s*\(/],
  ["pg_notify", /\bpg_notify\b/i],
  // The keyword in capitals anywhere, or any case at the start of a string; `const unlisten =` is a name, not SQL.
  ["UNLISTEN", /\bUNLISTEN\b|["'`]\s*[Uu][Nn][Ll][Ii][Ss][Tt][Ee][Nn]\b/],
  ["LISTEN statement", /\bLISTEN\s+["`$]|`\s*LISTEN\b|["']\s*LISTEN\s/i],
  ["a string literal opening with a SQL keyword", /["'`]\s*(SELECT|UPDATE|DELETE\s+FROM|INSERT\s+INTO)\s/i],
  // Transaction control in a string (`"commit"`, `'ROLLBACK TO …'`) or a pattern that matches it (`/(?:commit|rollback)/`).
  ["a transaction-control statement", /["'`]\s*(COMMIT|ROLLBACK|BEGIN|SAVEPOINT)\b|\b(commit|rollback)\|(commit|rollback)\b/i],
];

/** Blanks out comments, keeping string literals and line numbers. */
function withoutComments(source: string): string {
  let out = "";
  let quote: string | undefined;
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string;
    if (quote !== undefined) {
      out += c;
      if (c === "\\") out += source[++i] ?? "";
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      quote = c;
      out += c;
    } else if (c === "/" && source[i + 1] === "/") {
      while (i < source.length && source[i] !== "\n") i++;
      out += "\n";
    } else if (c === "/" && source[i + 1] === "*") {
      const end = source.indexOf("*/", i + 2);
      const comment = source.slice(i, end === -1 ? source.length : end + 2);
      out += comment.replace(/[^\n]/g, " ");
      i += comment.length - 1;
    } else {
      out += c;
    }
  }
  return out;
}

/** `file:line: what` for every SQL text in `source`. */
function sqlTextIn(file: string, source: string): string[] {
  const found: string[] = [];
  withoutComments(source)
    .split("\n")
    .forEach((line, index) => {
      for (const [what, pattern] of SQL_TEXT) if (pattern.test(line)) found.push(`${file}:${index + 1}: ${what}`);
    });
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe("no SQL text in runtime/src", () => {
  it("reads every source file", () => {
    const files = sourceFiles(srcDir).map((f) => relative(srcDir, f));
    expect(files).toContain(join("consume", "subscription.ts"));
    expect(files).toContain(join("claim", "held", "row-lock-claim.ts"));
  });

  it("no file under src holds SQL text", () => {
    const found = sourceFiles(srcDir).flatMap((file) => sqlTextIn(relative(srcDir, file), readFileSync(file, "utf8")));
    expect(found).toEqual([]);
  });

  it.each([
    ["const q = sql`select 1`;", "sql`…` template"],
    ["db.execute(sql.raw(text));", "sql.raw("],
    ['CompiledQuery.raw("select 1", [])', "CompiledQuery.raw("],
    ["run('SELECT pg_notify($1, \\'\\')')", "pg_notify"],
    ['await client.query("UNLISTEN *");', "UNLISTEN"],
    ["await client.query('unlisten *');", "UNLISTEN"],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a sample of source text the check must catch
    ["await client.query(`LISTEN ${channel}`);", "LISTEN statement"],
    ["await client.query('LISTEN \"ch\"');", "LISTEN statement"],
    ['const q = "DELETE FROM jobs WHERE id = $1";', "a string literal opening with a SQL keyword"],
    ["const q = `update jobs set a = 1`;", "a string literal opening with a SQL keyword"],
    ["const q = 'INSERT INTO jobs VALUES (1)';", "a string literal opening with a SQL keyword"],
  ])("catches %s", (line, what) => {
    expect(sqlTextIn("x.ts", line)).toContain(`x.ts:1: ${what}`);
  });

  it.each([
    ["/** Runs `SELECT … FOR UPDATE SKIP LOCKED` and `select pg_notify(…)` */"],
    ['// UNLISTEN * at stop, then LISTEN "ch"'],
    ['const url = "postgres://db"; // SELECT 1'],
    ["throw new Error(`listenNotify() needs Postgres (LISTEN/NOTIFY)`);"],
    ['logger.info({}, "selected candidates; update the lease later");'],
    ["const unlisten = postgresDialect.notify.unlistenAll();"],
  ])("passes %s", (line) => {
    expect(sqlTextIn("x.ts", line)).toEqual([]);
  });
});
