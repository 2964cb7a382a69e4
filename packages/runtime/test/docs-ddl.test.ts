/**
 * The DDL the docs show is the DDL sqlinbox generates. A block fenced as ```sql ddl <engine> <Name>
 * shows `inboxTableSql(Name, engine)`, where `Name` is a table description a ```ts block of the same
 * file declares (`const Name = …`). The test loads that block as a module and compares.
 * `SQLINBOX_WRITE_DOCS=1` rewrites the blocks from what the function gives instead.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import { inboxTableSql, type Engine } from "@sqlinbox/kysely-dialects";
import { afterAll, describe, expect, test } from "vitest";

const root = resolve(import.meta.dirname, "../../..");
const scratch = join(import.meta.dirname, ".docs-ddl");
const DOCS = ["docs/claim-forms.md", "docs/sql-enqueue.md", "packages/runtime/README.md"];
const writing = process.env["SQLINBOX_WRITE_DOCS"] === "1";

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface DdlBlock {
  /** The fence's indentation (a block inside a list item), given to every line written. */
  readonly indent: string;
  readonly engine: Engine;
  readonly name: string;
  /** Offsets of the block's body in the file. */
  readonly start: number;
  readonly end: number;
  readonly body: string;
}

function ddlBlocks(text: string): DdlBlock[] {
  return [...text.matchAll(/^([ \t]*)```sql ddl (postgres|mysql|sqlite) (\w+)\n([\s\S]*?)^[ \t]*```$/gm)].map((m) => {
    const start = (m.index ?? 0) + m[0].indexOf("\n") + 1;
    const body = m[4] as string;
    return { indent: m[1] as string, engine: m[2] as Engine, name: m[3] as string, start, end: start + body.length, body };
  });
}

/** The ```ts block of `text` that declares `const name`, loaded as a module; the description it declares. */
async function describedIn(file: string, text: string, name: string): Promise<AnyInboxSpec> {
  const block = [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string).find((code) => new RegExp(`\\bconst ${name}\\b`).test(code));
  if (block === undefined) throw new Error(`${file}: no ts block declares const ${name}`);
  mkdirSync(scratch, { recursive: true });
  const path = join(scratch, `${file.replace(/\W+/g, "-")}-${name}.ts`);
  // The block's own top-level awaits and side effects never run: only its declarations are kept up to the description.
  writeFileSync(path, `${declarationsOf(block)}\nexport { ${name} };\n`);
  return ((await import(path)) as Record<string, AnyInboxSpec>)[name] as AnyInboxSpec;
}

/** The block's imports, and its statements up to the first that is not a declaration (an `await`, a call). */
function declarationsOf(block: string): string {
  // A statement starts at a line that opens with a word or a comment; closing brackets continue the one before.
  const statements = block.split(/\n(?=[A-Za-z/])/);
  const kept: string[] = [];
  for (const s of statements) {
    if (/^(import|interface|type|declare|const|let|function|export|\/\/)/.test(s) && !/^(const|let) \w+ = await\b/.test(s)) kept.push(s);
    else break;
  }
  return kept.join("\n");
}

/** One statement per paragraph; a table's columns one per line, the storage settings after the closing parenthesis. */
export function formatDdl(statements: readonly string[]): string {
  return `${statements
    .map((s) => {
      // The columns, then what ends the statement (Postgres: the storage settings, `with (…)`) after the closing parenthesis.
      const m = /^(create table \S+) \((.*?)\)( with \([^()]*\))?$/.exec(s);
      if (m === null) return `${s};`;
      return `${m[1]} (\n  ${(m[2] as string).split(/, (?=["`])/).join(",\n  ")}\n)${m[3] ?? ""};`;
    })
    .join("\n")}\n`;
}

/** Whitespace as the generator writes it: single spaces, none inside parentheses. */
const normalized = (sql: string): string => sql.replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")").trim();

describe("the DDL in the docs is inboxTableSql's", () => {
  test.each(DOCS)("%s", async (file) => {
    const path = join(root, file);
    let text = readFileSync(path, "utf8");
    const blocks = ddlBlocks(text);
    expect(blocks.length, `${file} shows no generated DDL`).toBeGreaterThan(0);
    // Rewrite from the end so earlier offsets stay valid.
    for (const block of [...blocks].reverse()) {
      const generated = inboxTableSql(await describedIn(file, text, block.name), block.engine);
      if (writing)
        text =
          text.slice(0, block.start) +
          formatDdl(generated)
            .replace(/^/gm, block.indent)
            .replace(new RegExp(`${block.indent}$`), "") +
          text.slice(block.end);
      else expect(normalized(block.body), `${file}: the ${block.engine} DDL of ${block.name}`).toBe(normalized(generated.map((s) => `${s};`).join(" ")));
    }
    if (writing) writeFileSync(path, text);
  });
});
