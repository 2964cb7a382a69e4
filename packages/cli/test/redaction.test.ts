/**
 * A database URL's secrets never reach the bin's output: the password of its userinfo and every secret
 * query parameter (`password`, `sslpassword`, `sslkey`, `pwd`, `token`…) show as `***` in every message
 * that names the URL, on every exit path that names it.
 */
import { describe, expect, test } from "vitest";
import { ExitCode } from "../src/exit-codes.js";
import { sqlinbox } from "./support/run-bin.js";

const SECRET = "hunter2";

describe("the URL in sqlinbox's messages", () => {
  test("a ?password= (and the userinfo's password) on a server that cannot be reached: exit 2, the URL shown redacted", async () => {
    const url = `postgres://postgres:${SECRET}@127.0.0.1:1/nowhere?sslmode=disable&password=${SECRET}&sslkey=${SECRET}.key`;
    const down = await sqlinbox(["status", "--url", url, "--table", "jobs"]);
    expect(down.code).toBe(ExitCode.cannotConnect);
    expect(down.stderr).toContain("cannot connect to postgres://postgres:***@127.0.0.1:1/nowhere?sslmode=disable&password=***&sslkey=***");
    expect(down.stdout + down.stderr).not.toContain(SECRET);
  });

  test("the same through SQLINBOX_URL, on MySQL's scheme, with pwd= and sslpassword=", async () => {
    const url = `mysql://root@127.0.0.1:1/nowhere?pwd=${SECRET}&sslpassword=${SECRET}`;
    const down = await sqlinbox(["status", "--table", "jobs"], { env: { SQLINBOX_URL: url } });
    expect(down.code).toBe(ExitCode.cannotConnect);
    expect(down.stderr).toContain("mysql://root@127.0.0.1:1/nowhere?pwd=***&sslpassword=***");
    expect(down.stdout + down.stderr).not.toContain(SECRET);
  });

  test("a scheme of no engine is a usage error that does not repeat the URL at all", async () => {
    const wrong = await sqlinbox(["status", "--url", `redis://u:${SECRET}@cache/0?password=${SECRET}`, "--table", "jobs"]);
    expect([wrong.code, wrong.stderr]).toEqual([
      ExitCode.usage,
      'sqlinbox: unsupported database URL scheme "redis": use postgres://, mysql://, mariadb://, sqlite::memory: or sqlite:path\n',
    ]);
  });
});
