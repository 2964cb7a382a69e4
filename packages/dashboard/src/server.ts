import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { ASSETS, readAsset } from "./assets.js";
import { bulkRequestOf, type BulkJobBody } from "./job-bulk.js";
import { listJobs } from "./job-list.js";
import { readJob } from "./job-page.js";
import { BadRequest, type JobTables } from "./job-tables.js";
import { Sampler } from "./sampler.js";
import type { DashboardSource } from "./source.js";
import { refuseWrite, TOKEN_HEADER } from "./write-guard.js";

export interface DashboardOptions {
  readonly source: DashboardSource;
  /** 0 picks a free port. */
  readonly port: number;
  readonly host?: string;
  /** `null`: read-only. Otherwise writes need this token in the `x-sqlinbox-token` header. */
  readonly writes: { readonly token: string } | null;
  /** Milliseconds between samples of the charts (default 2000). */
  readonly sampleEveryMs?: number;
  /** The database and tables the job browser pages through; absent: the page has no Jobs view. */
  readonly jobs?: JobTables;
}

export interface RunningDashboard {
  readonly url: string;
  close(): Promise<void>;
}

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The dashboard's routes: the page and its assets, the status and samples, dead letters, the job browser; retry, pause, resume, cancel and bulk actions on jobs (writes). */
export function dashboardApp(options: DashboardOptions, sampler: Sampler): Hono {
  const app = new Hono();
  const { source, writes } = options;

  for (const [path, asset] of Object.entries(ASSETS)) {
    app.get(path, async (c) => c.body(new Uint8Array(await readAsset(asset)), 200, { "content-type": asset.type, "cache-control": "no-cache" }));
  }
  app.get("/api/config", (c) =>
    c.json({
      writes: writes !== null,
      tokenHeader: TOKEN_HEADER,
      sampleEveryMs: options.sampleEveryMs ?? 2000,
      jobs: options.jobs?.tables.map((t) => jobTableConfig(t.spec)) ?? null,
      bulk: source.bulkJobs !== undefined,
    }),
  );
  const browse = () => {
    if (options.jobs === undefined) throw new BadRequest("this dashboard's source has no job browser");
    return options.jobs;
  };
  app.get("/api/jobs", async (c) => c.json(await listJobs(browse(), c.req.query())));
  app.get("/api/job", async (c) => {
    const job = await readJob(browse(), c.req.query("table"), c.req.query("id"), c.req.query("dead") === "1");
    return job === null ? c.json({ error: `no job ${c.req.query("id")} in ${c.req.query("table")}${c.req.query("dead") === "1" ? "'s dead letters" : ""}` }, 404) : c.json(job);
  });
  // A bulk action of the job browser (a write, dry run included: counting a filter reads every row it takes).
  app.post("/api/jobs/bulk", async (c) => {
    const refusal = refuseWrite(writes, c.req.raw.headers);
    if (refusal !== null) return c.json({ error: refusal.message }, refusal.status);
    if (source.bulkJobs === undefined) return c.json({ error: "this dashboard's source has no bulk actions" }, 501);
    const body = (await c.req.json().catch(() => null)) as BulkJobBody | null;
    if (body === null || typeof body !== "object") return c.json({ error: 'send a JSON object: { "table", "action", "state", "ids" or a filter, "dryRun" }' }, 400);
    const request = bulkRequestOf(browse(), body);
    const run = () => source.bulkJobs!(request);
    // Dead letters moved back are inserted anew: the sampler counts them apart from the rows published.
    const movesBack = request.state === "deadLettered" && request.action === "retry" && !request.dryRun;
    const report = movesBack
      ? await sampler
          .moveBack(request.table, async () => {
            const got = await run();
            return { got, moved: "counts" in got ? (got.counts?.touched ?? 0) : 0 };
          })
          .then((r) => r.got)
      : await run();
    if ("refused" in report) return c.json({ error: report.refused }, 409);
    if (report.counts === undefined) return c.json({ action: request.action, dryRun: true, matched: report.matched });
    await sampler.sampleNow();
    return c.json({ action: request.action, dryRun: false, matched: report.matched, ...report.counts });
  });
  app.get("/api/status", async (c) => {
    await sampler.sampleNow();
    return c.json(await sampler.latest());
  });
  app.get("/api/samples", (c) => c.json(sampler.samples));
  app.get("/api/dead-letters/:table", async (c) => {
    const limit = Math.min(500, Math.max(1, Number(c.req.query("limit") ?? 50) || 50));
    return c.json(await source.deadLetters(c.req.param("table"), limit));
  });
  app.post("/api/dead-letters/:table/retry", async (c) => {
    const refusal = refuseWrite(writes, c.req.raw.headers);
    if (refusal !== null) return c.json({ error: refusal.message }, refusal.status);
    const body = (await c.req.json().catch(() => ({}))) as { ids?: unknown; all?: unknown };
    const ids = body.all === true ? "all" : Array.isArray(body.ids) && body.ids.every((id) => typeof id === "string" || typeof id === "number") ? body.ids.map(String) : null;
    if (ids === null || ids.length === 0) return c.json({ error: 'send { "ids": ["…"] } or { "all": true }' }, 400);
    const table = c.req.param("table");
    const result = await sampler.moveBack(table, () => source.retryDeadLetters(table, ids));
    await sampler.sampleNow();
    return c.json(result);
  });
  // Flow control (writes): pause and resume a route, cancel a row. A source without them answers 501.
  const flow = async <T>(c: Context, run: (body: Record<string, unknown>) => Promise<T> | undefined) => {
    const refusal = refuseWrite(writes, c.req.raw.headers);
    if (refusal !== null) return c.json({ error: refusal.message }, refusal.status);
    const body = (await c.req.json().catch(() => ({}))) as Record<string, unknown>;
    const running = run(body);
    if (running === undefined) return c.json({ error: "this dashboard's source cannot pause, resume or cancel" }, 501);
    const result = await running;
    await sampler.sampleNow();
    return c.json(result ?? {});
  };
  const text = (value: unknown): string | null => (typeof value === "string" && value.length > 0 ? value : typeof value === "number" ? String(value) : null);
  app.post("/api/pause", (c) =>
    flow(c, (body) => {
      const route = text(body["route"]);
      if (route === null) return Promise.reject(new BadRequest('send { "route": "…" }'));
      return source.pause?.(route).then(() => ({ route, paused: true }));
    }),
  );
  app.post("/api/resume", (c) =>
    flow(c, (body) => {
      const route = text(body["route"]);
      if (route === null) return Promise.reject(new BadRequest('send { "route": "…" }'));
      return source.resume?.(route).then((resumed) => ({ route, resumed }));
    }),
  );
  app.post("/api/tables/:table/cancel", (c) =>
    flow(c, (body) => {
      const id = text(body["id"]);
      if (id === null) return Promise.reject(new BadRequest('send { "id": "…" }'));
      return source.cancel?.(c.req.param("table"), id).then((result) => ({ id, result }));
    }),
  );
  app.onError((error, c) => (error instanceof BadRequest ? c.json({ error: error.message }, 400) : c.json({ error: message(error) }, 500)));
  return app;
}

/** What the page's job browser offers for a table: the states it can hold and the columns it filters on. */
function jobTableConfig(spec: JobTables["tables"][number]["spec"]) {
  return {
    table: spec.table,
    form: spec.form,
    group: spec.group?.name ?? null,
    key: (spec.key ?? spec.orderKey)?.name ?? null,
    data: spec.columns.filter((c) => c.role === "data").map((c) => c.name),
    runAt: spec.retryAfter !== undefined,
    payload: spec.payload !== undefined,
    done: spec.processedAt !== undefined,
  };
}

/**
 * Serves the dashboard and starts sampling.
 *
 * @example
 * const dashboard = await startDashboard({ source, port: 4300, writes: null });
 * console.log(dashboard.url); // http://127.0.0.1:4300/
 */
export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const sampler = new Sampler(options.source, options.sampleEveryMs ?? 2000);
  const app = dashboardApp(options, sampler);
  const host = options.host ?? "127.0.0.1";
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: options.port, hostname: host }, () => resolve(s));
    s.once("error", reject);
  });
  sampler.start();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}/`,
    async close() {
      await sampler.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
