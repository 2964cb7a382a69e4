import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/** A file the page loads, served from this package (no CDN: the page works offline). */
export interface Asset {
  readonly type: string;
  readonly path: string;
}

const own = (name: string) => fileURLToPath(new URL(`../assets/${name}`, import.meta.url));
const uplot = (name: string) => createRequire(import.meta.url).resolve(`uplot/dist/${name}`);

/** Every file the page needs, by the path it is served under. */
export const ASSETS: Readonly<Record<string, Asset>> = Object.freeze({
  "/": { type: "text/html; charset=utf-8", path: own("index.html") },
  "/assets/app.js": { type: "text/javascript; charset=utf-8", path: own("app.js") },
  "/assets/jobs.js": { type: "text/javascript; charset=utf-8", path: own("jobs.js") },
  "/assets/jobs-bulk.js": { type: "text/javascript; charset=utf-8", path: own("jobs-bulk.js") },
  "/assets/style.css": { type: "text/css; charset=utf-8", path: own("style.css") },
  "/assets/uPlot.iife.min.js": { type: "text/javascript; charset=utf-8", path: uplot("uPlot.iife.min.js") },
  "/assets/uPlot.min.css": { type: "text/css; charset=utf-8", path: uplot("uPlot.min.css") },
});

const cache = new Map<string, Buffer>();

export async function readAsset(asset: Asset): Promise<Buffer> {
  let body = cache.get(asset.path);
  if (body === undefined) {
    body = await readFile(asset.path);
    cache.set(asset.path, body);
  }
  return body;
}
