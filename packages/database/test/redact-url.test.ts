/** `redactUrl`: what a URL shows in a message or a log line, table-tested without a database. */
import { describe, expect, test } from "vitest";
import { redactUrl, SECRET_PARAMETER } from "../src/index.js";

describe("redactUrl", () => {
  test.each([
    ["postgres://app:s3cret@db:5432/app", "postgres://app:***@db:5432/app"],
    ["postgres://:s3cret@db/app", "postgres://:***@db/app"],
    ["mysql://root:p%40ss@127.0.0.1:3306/jobs", "mysql://root:***@127.0.0.1:3306/jobs"],
    ["postgres://app@db/app?password=s3cret", "postgres://app@db/app?password=***"],
    ["postgres://app@db/app?sslmode=require&sslpassword=s3cret&sslkey=%2Fkeys%2Fclient.key", "postgres://app@db/app?sslmode=require&sslpassword=***&sslkey=***"],
    ["mysql://root@db/app?PWD=s3cret&pass=s3cret&passwd=s3cret", "mysql://root@db/app?PWD=***&pass=***&passwd=***"],
    [
      "mariadb://u:s3cret@db/app?access_token=s3cret&client_secret=s3cret&apikey=s3cret&credentials=s3cret",
      "mariadb://u:***@db/app?access_token=***&client_secret=***&apikey=***&credentials=***",
    ],
    ["postgres://app@db/app?password=one&password=two", "postgres://app@db/app?password=***"],
  ])("%s → %s", (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
    expect(redactUrl(url)).not.toMatch(/s3cret|one|two|client\.key/);
  });

  test("a URL with nothing to hide comes back as it was, to the byte", () => {
    for (const url of ["postgres://app@db:5432/app?sslmode=require&application_name=reports", "sqlite:data/app.db", "sqlite::memory:", "mysql://root@127.0.0.1/test"]) {
      expect(redactUrl(url)).toBe(url);
    }
  });

  test("what URL cannot parse is still redacted by shape", () => {
    expect(redactUrl("postgres://app:s3cret@[bad/app?password=s3cret&sslmode=require")).toBe("postgres://app:***@[bad/app?password=***&sslmode=require");
  });

  test("the secret parameters, by name", () => {
    for (const name of ["password", "sslpassword", "pass", "passwd", "pwd", "secret", "token", "sslkey", "apikey", "credentials"])
      expect(SECRET_PARAMETER.test(name), name).toBe(true);
    for (const name of ["sslmode", "sslcert", "sslrootcert", "user", "host", "application_name", "connect_timeout", "charset"])
      expect(SECRET_PARAMETER.test(name), name).toBe(false);
  });
});
