import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, test } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));

test("npm start: the failure caused on purpose is not called a lost attempt, and the last line counts every report rendered", async () => {
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--conditions=@sqlinbox/source", "src/main.ts"], {
    cwd: root,
    timeout: 90_000,
  });
  const out = `${stdout}${stderr}`;
  expect(out).not.toContain("lost attempt");
  expect(out.match(/INFO {2}rendering again after the first attempt failed on purpose {2}title="Churn by region" attempt=2/g)).toHaveLength(2);
  expect(stdout).toMatch(/^declarative form: 3 of 3 reports rendered; the stop waited for \d+ deliver(y|ies) still settling$/m);
  expect(stdout).toMatch(/^by hand form: 3 of 3 reports rendered; the stop waited for \d+ deliver(y|ies) still settling$/m);
  expect(stdout.trimEnd().split("\n").at(-1)).toBe("rendered 6 reports (3 in each of 2 forms), 2 of them on a second attempt after the failure caused on purpose; bye");
});
