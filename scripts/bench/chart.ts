import { fmt } from "./stats.js";
import type { DrainResult } from "./workloads/drain.js";

const COLORS: Record<string, string> = { sqlinbox: "#2b6cb0", "raw-sql": "#a0aec0", "graphile-worker": "#dd6b20", "pg-boss": "#38a169" };
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * W1 as a horizontal bar chart, written by hand: one bar per case (median jobs/s), a whisker
 * from the slowest to the fastest round, a log scale so pg-boss and SQLite fit beside Postgres.
 */
export function drainChart(results: readonly DrainResult[], title: string): string {
  const rows = results.filter((r) => r.jobsPerSec && Number.isFinite(r.jobsPerSec.median));
  const labelW = 300;
  const plotW = 560;
  const rowH = 18;
  const top = 48;
  const height = top + rows.length * rowH + 40;
  const width = labelW + plotW + 90;
  const maxV = Math.max(10, ...rows.map((r) => r.jobsPerSec!.max));
  const lo = 1; // 10 jobs/s at the left edge
  const hi = Math.ceil(Math.log10(maxV));
  const x = (v: number) => labelW + ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * plotW;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="11">`);
  out.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  out.push(`<text x="8" y="18" font-size="14" font-weight="bold">${esc(title)}</text>`);
  out.push(`<text x="8" y="34" fill="#555">jobs per second, log scale; bar = median of rounds, whisker = min–max</text>`);
  for (let d = lo; d <= hi; d++) {
    const gx = x(10 ** d);
    out.push(`<line x1="${gx}" y1="${top - 4}" x2="${gx}" y2="${top + rows.length * rowH}" stroke="#e2e8f0"/>`);
    out.push(`<text x="${gx}" y="${top + rows.length * rowH + 14}" text-anchor="middle" fill="#555">${fmt(10 ** d)}</text>`);
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    const s = r.jobsPerSec!;
    const color = COLORS[r.system] ?? "#718096";
    out.push(`<text x="${labelW - 6}" y="${y + 12}" text-anchor="end">${esc(r.id)}</text>`);
    out.push(`<rect x="${labelW}" y="${y + 3}" width="${Math.max(1, x(s.median) - labelW)}" height="${rowH - 6}" fill="${color}"/>`);
    out.push(`<line x1="${x(s.min)}" y1="${y + rowH / 2}" x2="${x(s.max)}" y2="${y + rowH / 2}" stroke="#1a202c"/>`);
    out.push(`<line x1="${x(s.min)}" y1="${y + 5}" x2="${x(s.min)}" y2="${y + rowH - 5}" stroke="#1a202c"/>`);
    out.push(`<line x1="${x(s.max)}" y1="${y + 5}" x2="${x(s.max)}" y2="${y + rowH - 5}" stroke="#1a202c"/>`);
    out.push(`<text x="${x(s.max) + 4}" y="${y + 12}" fill="#333">${fmt(s.median)}</text>`);
  });
  let lx = labelW;
  for (const [name, color] of Object.entries(COLORS)) {
    out.push(`<rect x="${lx}" y="${height - 16}" width="10" height="10" fill="${color}"/><text x="${lx + 14}" y="${height - 7}">${name}</text>`);
    lx += 120;
  }
  out.push(`</svg>`);
  return out.join("\n");
}
