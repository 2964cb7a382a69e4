import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, extname, join, normalize, resolve } from "node:path";
import { promisify } from "node:util";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

// The API reference (`npm run docs`, TypeDoc over each package's public entry point) builds without a
// warning: typedoc.json turns on the checks for broken `{@link …}` targets and for public types that refer
// to a type the reference does not document, and treats every warning as an error. A type referred to but
// deliberately left out of the root exports is listed in its package's typedoc.json.
// Its landing page says what sqlinbox is and links the guides, which are pages of the reference (TypeDoc
// project documents), not raw markdown; it works opened from disk and served by a static host, as Debian's
// Chromium shows (`apt-get install -y chromium`).
// Runs after `npm run build` (TypeDoc reads the sibling packages' declarations through project references).
const root = resolve(import.meta.dirname, "..");
const out = mkdtempSync(join(tmpdir(), "sqlinbox-api-"));
const CHROMIUM = process.env.SQLINBOX_CHROMIUM ?? "/usr/bin/chromium";
const GUIDES = ["handlers", "publishing", "claim-forms", "failures", "testing", "sql-enqueue", "operating", "scaling", "benchmarks"];

let built = "";
beforeAll(async () => {
  const result = await promisify(execFile)(join(root, "node_modules/.bin/typedoc"), ["--out", out], { cwd: root, maxBuffer: 16 * 1024 * 1024 }).catch(
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? "", stderr: `${error.stderr ?? ""}\nexit ${error.code}` }),
  );
  built = `${result.stdout}\n${result.stderr}`;
}, 300_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Every file under `dir`, relative to it. */
const files = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => statSync(join(dir, f)).isFile());

test("npm run docs builds the API reference without warnings", () => {
  expect(built.split("\n").filter((line) => /warning|error/i.test(line) && !/Found 0 errors and 0 warnings/.test(line))).toEqual([]);
  for (const page of ["index.html", "modules/_sqlinbox_core.html", "modules/_sqlinbox_runtime.html", "classes/_sqlinbox_runtime.SqlBroker.html"]) {
    expect(existsSync(join(out, page)), page).toBe(true);
  }
});

describe("the reference as a site", () => {
  test("the landing page says what sqlinbox is and links every guide and package as a page of the reference", () => {
    const index = readFileSync(join(out, "index.html"), "utf8");
    expect(index).toContain("turns a table in your application");
    for (const guide of GUIDES) expect(index, guide).toContain(`href="documents/docs_${guide}.html"`);
    for (const name of ["core", "runtime", "kysely-dialects", "cli", "dashboard"]) expect(index, name).toContain(`href="modules/_sqlinbox_${name}.html"`);
  });

  test("no page is raw markdown, every page declares its charset, and every local link and asset resolves", () => {
    const all = files(out);
    expect(all.filter((f) => f.endsWith(".md"))).toEqual([]);
    const pages = all.filter((f) => f.endsWith(".html"));
    expect(pages.length).toBeGreaterThan(100);
    const broken: string[] = [];
    for (const page of pages) {
      const html = readFileSync(join(out, page), "utf8");
      if (!/<meta charset="utf-8"\s*\/?>/i.test(html)) broken.push(`${page}: no <meta charset="utf-8">`);
      for (const [, ref] of html.matchAll(/(?:href|src)="([^"]+)"/g)) {
        if (ref === undefined || /^(?:[a-z]+:|#|\/\/)/i.test(ref)) continue;
        const target = normalize(join(dirname(join(out, page)), decodeURIComponent(ref.replace(/[#?].*$/, ""))));
        if (!existsSync(target)) broken.push(`${page}: ${ref}`);
      }
      // Opened from disk, a <use> of another file is refused: every icon refers to the sprite in the page.
      if (/<use href="[^"#]+#/.test(html)) broken.push(`${page}: an icon refers to another file`);
    }
    expect(broken).toEqual([]);
  });

  describe("in Chromium", () => {
    let browser: Browser;
    let server: Server;
    let host = "";
    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
      // A static host that sends no charset: the pages must say theirs.
      const types: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png" };
      server = createServer((request, response) => {
        const file = normalize(join(out, decodeURIComponent(new URL(request.url ?? "/", "http://x").pathname)));
        if (!file.startsWith(out) || !existsSync(file) || extname(file) === "") {
          response.writeHead(404).end();
          return;
        }
        response.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" }).end(readFileSync(file));
      });
      await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
      const address = server.address();
      host = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await new Promise((done) => server?.close(done));
    });

    test.each([
      ["from file://", () => `file://${out}/index.html`],
      ["from a static host", () => `${host}/index.html`],
    ])(
      "%s: the landing page, a guide and a class page load with no error, their icons drawn and their text intact",
      async (_, url) => {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const problems: string[] = [];
        // A resource that fails is counted by its response (a browser asks any host for /favicon.ico, which the reference has none of).
        page.on("console", (message) => {
          const failedResource = message.text().startsWith("Failed to load resource");
          if ((message.type() === "error" || message.type() === "warning") && !failedResource) problems.push(`${page.url()}: ${message.text()}`);
        });
        page.on("response", (response) => {
          if (response.status() >= 400 && !response.url().endsWith("/favicon.ico")) problems.push(`${response.url()}: ${response.status()}`);
        });
        page.on("requestfailed", (request) => problems.push(`${request.url()}: ${request.failure()?.errorText}`));
        page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`));
        try {
          await page.goto(url(), { waitUntil: "load" });
          await page.screenshot({ path: join(out, `landing-${url().startsWith("file:") ? "file" : "http"}.png`) });
          // A guide, reached by its link on the landing page: a rendered page, its em dashes intact.
          await Promise.all([page.waitForURL(/documents\/docs_operating\.html$/), page.click("text=Operating")]);
          expect(await page.title()).toContain("operating");
          const text = (await page.evaluate(() => document.querySelector(".col-content")?.textContent)) ?? "";
          expect(text).toContain("how deep is each queue");
          expect(text).toContain("—");
          expect(text).not.toContain("â€");
          await page.goto(new URL("../classes/_sqlinbox_runtime.SqlBroker.html", page.url()).href, { waitUntil: "load" });
          // Icons: the sprite is in the page and a member's kind icon has a size.
          await page.waitForSelector("svg symbol[id^='icon-']", { state: "attached" });
          const drawn = await page.evaluate(() =>
            [...document.querySelectorAll("svg.tsd-kind-icon use")].slice(0, 20).map((use) => {
              const box = (use as SVGGraphicsElement).getBBox();
              return box.width > 0 && box.height > 0;
            }),
          );
          expect(drawn.length).toBeGreaterThan(5);
          expect(drawn.every(Boolean)).toBe(true);
        } finally {
          await page.close();
        }
        expect(problems).toEqual([]);
      },
      120_000,
    );
  });
});
