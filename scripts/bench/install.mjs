// Installs the bench's own dependencies (graphile-worker, pg-boss) into scripts/bench/node_modules
// when they are missing or not at the pinned version. The root install never pulls them, so a
// Node 20 `npm install` prints no EBADENGINE; this runs before `npm test` and `npm run bench*`.
// Plain .mjs so it runs before anything else is built or installed.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const bench = fileURLToPath(new URL(".", import.meta.url));
const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));

function installedAsPinned() {
  const { dependencies } = readJson(join(bench, "package.json"));
  return Object.entries(dependencies).every(([name, version]) => {
    const manifest = join(bench, "node_modules", name, "package.json");
    return existsSync(manifest) && readJson(manifest).version === version;
  });
}

if (!installedAsPinned()) {
  console.error("bench: installing scripts/bench dependencies (npm ci) …");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: bench, stdio: "inherit" });
}
