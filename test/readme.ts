import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

// The README's blocks, read the way a user copies them: the quick-start and install tests run what these return.
export const root = resolve(import.meta.dirname, "..");
const readme = () => readFileSync(join(root, "README.md"), "utf8");

/** The body of the README's fenced block whose info string is exactly `info` (```` ```ts app.ts ````). */
export function readmeBlock(info: string): string {
  const lines = readme().split("\n");
  const start = lines.indexOf(`\`\`\`${info}`);
  if (start < 0) throw new Error(`README.md has no \`\`\`${info} block`);
  const end = lines.findIndex((line, i) => i > start && line === "```");
  return `${lines.slice(start + 1, end).join("\n")}\n`;
}

/** Every line of the README's `sh` blocks, comments (`# …`) cut off, that starts with `npm install`. */
export function readmeInstallLines(): string[] {
  const lines = readme().split("\n");
  const out: string[] = [];
  let inSh = false;
  for (const line of lines) {
    if (/^```/.test(line)) inSh = !inSh && line.trim() === "```sh";
    else if (inSh && line.startsWith("npm install")) out.push(line.replace(/\s+#.*$/, "").trim());
  }
  return out;
}
