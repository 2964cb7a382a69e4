/**
 * Compiles TypeScript snippets in memory, with the TypeScript compiler, for tests that pin where a
 * type-level rule's error lands and what it says (`rule-errors.test.ts` here, and the runtime's
 * `delay-rule-errors.test.ts`). `MARK` in a snippet marks where an error must start.
 */
import ts from "typescript";

export const MARK = "/*@*/";

export interface Place {
  readonly line: number;
  readonly column: number;
}

export interface Found extends Place {
  /** Every line of the diagnostic's message chain. */
  readonly text: string;
}

/** Compiles every file in one program (in memory, at the paths given) and returns each file's diagnostics; `extra` adds to or overrides the strict defaults. */
export function compileSnippets(files: ReadonlyMap<string, string>, extra: ts.CompilerOptions = {}): Map<string, Found[]> {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ["lib.es2023.d.ts"],
    ...extra,
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (file) => files.get(file) ?? readFile(file);
  host.fileExists = (file) => files.has(file) || ts.sys.fileExists(file);
  host.getSourceFile = (file, version, onError, create) => {
    const text = files.get(file);
    return text !== undefined ? ts.createSourceFile(file, text, version, true) : getSourceFile(file, version, onError, create);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const out = new Map<string, Found[]>();
  for (const file of files.keys()) {
    const source = program.getSourceFile(file);
    if (source === undefined) throw new Error(`${file} was not compiled`);
    out.set(
      file,
      [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
        const { line, character } = source.getLineAndCharacterOfPosition(d.start ?? 0);
        return { line: line + 1, column: character + 1, text: ts.flattenDiagnosticMessageText(d.messageText, "\n") };
      }),
    );
  }
  return out;
}

/** The line and column (1-based) of each MARK in `text`, as they are once the marks are removed. */
export function marks(text: string): { readonly code: string; readonly places: Place[] } {
  const places: Place[] = [];
  let code = "";
  let rest = text;
  for (let at = rest.indexOf(MARK); at >= 0; at = rest.indexOf(MARK)) {
    code += rest.slice(0, at);
    rest = rest.slice(at + MARK.length);
    const lines = code.split("\n");
    places.push({ line: lines.length, column: (lines.at(-1) ?? "").length + 1 });
  }
  return { code: code + rest, places };
}
