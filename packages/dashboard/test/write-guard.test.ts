import { describe, expect, test } from "vitest";
import { refuseWrite } from "../src/write-guard.js";

const headers = (h: Record<string, string>) => ({ get: (name: string) => h[name] });

describe("who may write", () => {
  test.each([
    ["read-only, even with a token", null, { "x-sqlinbox-token": "tok-12345" }, 403],
    ["no token", { token: "tok-12345" }, {}, 401],
    ["empty token", { token: "tok-12345" }, { "x-sqlinbox-token": "" }, 401],
    ["wrong token", { token: "tok-12345" }, { "x-sqlinbox-token": "tok-12346" }, 403],
    ["a prefix of the token", { token: "tok-12345" }, { "x-sqlinbox-token": "tok-1234" }, 403],
    ["the token", { token: "tok-12345" }, { "x-sqlinbox-token": "tok-12345" }, null],
    ["the token as a bearer", { token: "tok-12345" }, { authorization: "Bearer tok-12345" }, null],
  ] as const)("%s", (_what, writes, given, status) => {
    expect(refuseWrite(writes, headers(given))?.status ?? null).toBe(status);
  });
});
