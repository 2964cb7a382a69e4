import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, test } from "vitest";

// Every ```ts block in the READMEs and docs/ is a module that must type-check, so a documented
// example cannot rot. Blocks are written under test/.docs-examples/ (gitignored) so `@sqlinbox/*`
// resolve through the workspace, on sources (the `@sqlinbox/source` condition), as the tests do.
// Every block is a whole module: its imports and the user's own declarations are part of it.
const root = resolve(import.meta.dirname, "..");
const out = join(root, "test/.docs-examples");

/**
 * Blocks that fail because of a library bug, not the docs: the docs show what a user should write.
 * Found by file and a line of the block, so edits elsewhere in the file do not move them.
 */

interface DocBlock {
  /** `README.md:20`: the file and the line of the opening fence. */
  readonly name: string;
  readonly code: string;
  /**
   * The module's file name when the fence gives one (```` ```ts db.ts ````): the other named blocks of the
   * same markdown file are written beside it (the first of each name), so `import { db } from "./db.js"` resolves.
   */
  readonly file?: string;
}

function markdownFiles(): string[] {
  const inside = (dir: string, nested: boolean) =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
      nested ? (e.isDirectory() ? [`${dir}/${e.name}/README.md`] : []) : e.name.endsWith(".md") ? [`${dir}/${e.name}`] : [],
    );
  const candidates = ["README.md", ...inside("docs", false), ...inside("packages", true), ...inside("examples", true)];
  return candidates.filter((file) => existsSync(join(root, file)));
}

function tsBlocks(file: string): DocBlock[] {
  const lines = readFileSync(join(root, file), "utf8").split("\n");
  const blocks: DocBlock[] = [];
  let open: { line: number; ts: boolean; file: string | undefined; body: string[] } | undefined;
  lines.forEach((text, i) => {
    const fence = /^\s*```(.*)$/.exec(text);
    if (open) {
      if (fence && fence[1]?.trim() === "") {
        if (open.ts) blocks.push({ name: `${file}:${open.line}`, code: `${open.body.join("\n")}\n`, ...(open.file ? { file: open.file } : {}) });
        open = undefined;
      } else {
        open.body.push(text);
      }
    } else if (fence) {
      const info = fence[1]?.trim().split(/\s+/) ?? [];
      const ts = info[0] === "ts" || info[0] === "typescript";
      open = { line: i + 1, ts, file: info.slice(1).find((word) => word.endsWith(".ts")), body: [] };
    }
  });
  return blocks;
}

function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(join(root, "tsconfig.json"), ts.sys.readFile);
  const { options } = ts.convertCompilerOptionsFromJson(config.config.compilerOptions, root);
  return {
    ...options,
    noEmit: true,
    composite: false,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    incremental: false,
    customConditions: ["@sqlinbox/source"],
  };
}

const slug = (name: string) => name.replace(/[/:.]/g, "-");
const blocks = markdownFiles().flatMap(tsBlocks);
const blockByName = new Map(blocks.map((b) => [b.name, b]));
// A named block gets a folder of its own, holding it and its file's other named blocks under their names.
const fileOf = (name: string) => {
  const file = blockByName.get(name)?.file;
  return file === undefined ? join(out, `${slug(name)}.ts`) : join(out, slug(name), file);
};

// One program for every block: one type-check, then one test per block reads its own diagnostics.
const modules = blocks;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const b of modules) {
  if (b.file !== undefined) {
    mkdirSync(join(out, slug(b.name)));
    const markdown = b.name.split(":")[0];
    const beside = new Map<string, DocBlock>();
    for (const other of blocks) {
      if (other.file === undefined || other.file === b.file || other.name.split(":")[0] !== markdown) continue;
      if (!beside.has(other.file)) beside.set(other.file, other);
    }
    for (const [file, other] of beside) writeFileSync(join(out, slug(b.name), file), `// ${other.name}\n${other.code}`);
  }
  writeFileSync(fileOf(b.name), `// ${b.name}\n${b.code}`);
}
const program = ts.createProgram(
  modules.map((b) => fileOf(b.name)),
  compilerOptions(),
);

function diagnosticsOf(name: string): string[] {
  const source = program.getSourceFile(fileOf(name));
  if (!source) return [`${name}: not in the program`];
  return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (!d.file || d.start === undefined) return text;
    // Line numbers in the markdown file: the module has one header line before the block's first line.
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    const [file, fence] = name.split(":");
    return `${file}:${Number(fence) + line}:${character + 1} TS${d.code}: ${text}`;
  });
}

describe("every ts block in the docs compiles", () => {
  test("the docs have ts blocks to check", () => {
    expect(modules.length).toBeGreaterThan(5);
    expect(relative(root, out)).toBe("test/.docs-examples");
  });
  for (const b of blocks) {
    test(b.name, () => expect(diagnosticsOf(b.name).join("\n")).toBe(""));
  }
});
