// `npm run pack`: the six packages' tarballs, built from dist/, in one folder (packs/), and the one
// command that installs them into an app; the four broker packages' tarballs in packs/brokers/, each
// installed only by an app that uses that broker (with its client). Until the packages are on the registry, this is how an app
// outside this repository gets them. Plain .mjs: it runs right after `npm run build`.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
// `--out <dir>`: another folder than packs/ (the install test packs into a folder of its own).
const { values } = parseArgs({ options: { out: { type: "string" } } });
const out = values.out === undefined ? join(root, "packs") : resolve(values.out);
const packages = ["core", "kysely-dialects", "database", "runtime", "dashboard", "cli"];
const brokers = ["nats", "amqp", "redis", "mqtt"];
const brokersOut = join(out, "brokers");

// Earlier tarballs go first, so `packs/*.tgz` never picks up one of an older version.
for (const [dir, names] of [
  [out, packages],
  [brokersOut, brokers],
]) {
  mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(dir)) if (/^sqlinbox-.*\.tgz$/.test(file)) rmSync(join(dir, file));
  for (const name of names) {
    execFileSync("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: join(root, "packages", name), stdio: ["ignore", "ignore", "inherit"] });
  }
  const found = readdirSync(dir).filter((file) => /^sqlinbox-.*\.tgz$/.test(file));
  if (found.length !== names.length) throw new Error(`expected ${names.length} tarballs in ${dir}, found: ${found.join(", ")}`);
}
const tarballs = readdirSync(out).filter((file) => /^sqlinbox-.*\.tgz$/.test(file));
console.log(`${tarballs.length} tarballs in ${out}:`);
for (const file of tarballs.sort()) console.log(`  ${file}`);
console.log("\nInstall all six into your app, with Kysely, your database's driver (pg, mysql2 or better-sqlite3@12) and tsx:");
console.log(`  npm install ${join(out, "*.tgz")} kysely pg tsx`);
console.log(`\nThe broker packages are in ${brokersOut}: install the one you use with its client, for example`);
console.log(`  npm install ${join(brokersOut, "sqlinbox-nats-*.tgz")} @nats-io/jetstream @nats-io/transport-node`);
