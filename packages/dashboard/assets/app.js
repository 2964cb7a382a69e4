// The dashboard page: polls /api/status, /api/samples and the dead letters, and renders them.
// Every value from the database is set as text, never as HTML.

const FORM = { lease: "lease", rowLock: "row lock", advisory: "advisory" };
const state = { config: null, charts: new Map(), selected: new Map(), flash: new Map(), inputs: new Map() };

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

const count = (n) => (n === null || n === undefined ? "—" : String(n));
/** A large table's count that reached its cap is a lower bound: `10,000+` (see `capped` in the status JSON). */
const countIn = (t, field) => (n) => (n !== null && n !== undefined && (t.capped?.atLeast ?? []).includes(field) ? `${n.toLocaleString("en-US")}+` : count(n));
const ageIn = (t) => (ms) => `${duration(ms)}${ms !== null && ms !== undefined && (t.capped?.atLeast ?? []).includes("oldestAgeMs") ? "+" : ""}`;
function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const hr = Math.floor(m / 60);
  return hr < 48 ? `${hr}h ${String(m % 60).padStart(2, "0")}m` : `${Math.floor(hr / 24)}d ${hr % 24}h`;
}
const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));

// Every time on the page is shown in one zone, the browser's, 24-hour, and the header names it
// ("times in Europe/Berlin"): the operator reads the clock on their wall.
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const pad = (n) => String(n).padStart(2, "0");
const clock = (d) => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
const day = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
/** `2026-12-03 12:02:05`: a time (ms or ISO-8601) in the browser's zone. */
const shownTime = (at) => {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? "—" : `${day(d)} ${clock(d)}`;
};
// A timestamp with its zone, as a database column reads in JSON (`…Z` or `…+02:00`).
const ZONED_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)$/;
const cellText = (v) => (typeof v === "string" && ZONED_TIME.test(v) ? shownTime(Date.parse(v.replace(" ", "T"))) : text(v));

async function getJson(path) {
  const res = await fetch(path, { cache: "no-store" });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${(await res.json().catch(() => ({}))).error ?? ""}`);
  return res.json();
}

function kpi(cls, label, value, id) {
  return h("div", { class: `kpi ${cls}` }, h("div", { class: "label" }, label), h("div", { class: "value", "data-testid": id }, value));
}

function histogram(buckets) {
  if (buckets.length === 0) return "—";
  const max = Math.max(...buckets.map((b) => b.rows));
  return h(
    "div",
    { class: "histogram", title: buckets.map((b) => `${b.rows} ${b.rows === 1 ? "row" : "rows"} with ${b.attempt} ${b.attempt === 1 ? "attempt" : "attempts"} made`).join("\n") },
    buckets.map((b) => h("div", { class: `bar ${b.attempt >= 5 ? "many" : b.attempt >= 2 ? "retry" : ""}`, style: `height:${Math.max(8, (b.rows / max) * 100)}%` })),
  );
}

function groupsTable(t) {
  const grouped = t.groups.some((g) => g.group !== null);
  // Only a fifo table has rows waiting behind their group's head.
  const fifo = t.totals.waiting !== null;
  const head = h(
    "tr",
    {},
    grouped ? h("th", {}, "Group") : null,
    ["Ready", ...(fifo ? ["Waiting"] : []), "In work", "Delayed", "Dead", "Done", "Oldest"].map((c) => h("th", { class: "num" }, c)),
    h("th", {}, "Attempts made"),
  );
  const rows = t.groups.map((g) =>
    h(
      "tr",
      { "data-testid": `group-${t.table}-${g.group ?? ""}` },
      grouped ? h("td", {}, g.group) : null,
      h("td", { class: "num" }, countIn(t, "ready")(g.ready)),
      fifo ? h("td", { class: "num", "data-testid": `waiting-${t.table}-${g.group ?? ""}` }, countIn(t, "waiting")(g.waiting)) : null,
      h("td", { class: "num" }, countIn(t, "inWork")(g.inWork)),
      h("td", { class: "num" }, countIn(t, "delayed")(g.delayed)),
      h("td", { class: "num" }, countIn(t, "dead")(g.dead)),
      h("td", { class: "num" }, countIn(t, "done")(g.done)),
      h("td", { class: "num" }, ageIn(t)(g.oldestAgeMs)),
      h("td", {}, histogram(g.attempts)),
    ),
  );
  if (rows.length === 0) return h("div", { class: "empty" }, "The table is empty.");
  return h("table", { class: "grid" }, h("thead", {}, head), h("tbody", {}, rows));
}

/** The cron schedules running apps recorded (`app.cron`): route, pattern, zone, last and next tick. */
function schedulesSection(schedules) {
  const body =
    schedules.length === 0
      ? h("div", { class: "empty", "data-testid": "no-schedules" }, "No schedule recorded: no running app declares app.cron.")
      : h(
          "table",
          { class: "grid" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ["Route", "Pattern", "Zone", "Last tick", "Next tick", "App"].map((c) => h("th", {}, c)),
            ),
          ),
          h(
            "tbody",
            {},
            schedules.map((s) =>
              h(
                "tr",
                { "data-testid": `schedule-${s.route}` },
                h("td", {}, s.route),
                h("td", {}, h("code", {}, s.pattern)),
                h("td", {}, s.timeZone),
                h("td", { "data-testid": `schedule-last-${s.route}` }, s.lastTick ? shownTime(s.lastTick) : "—"),
                h(
                  "td",
                  { "data-testid": `schedule-next-${s.route}`, class: s.overdue ? "overdue" : "" },
                  s.overdue ? `${shownTime(s.nextTick)} (overdue: no app runs it)` : shownTime(s.nextTick),
                ),
                h("td", {}, s.app),
              ),
            ),
          ),
        );
  return h("section", { class: "card", "data-testid": "schedules" }, h("h2", {}, "Schedules"), body);
}

/** The caps and rate limits the loaded module declares on this table's routes (only with --module). */
function limitsTable(t) {
  const limits = t.limits ?? [];
  if (limits.length === 0) return null;
  const head = h(
    "tr",
    {},
    h("th", {}, "Route"),
    ["In work", "Max in work", "Started in window", "Rate limit"].map((c) => h("th", { class: "num" }, c)),
  );
  const rows = limits.map((l) =>
    h(
      "tr",
      { "data-testid": `limits-${t.table}-${l.route}` },
      h("td", {}, l.route),
      h("td", { class: "num" }, count(l.inWork)),
      h("td", { class: "num" }, l.maxInWork === null ? "—" : count(l.maxInWork)),
      h("td", { class: "num" }, count(l.startedInWindow)),
      h("td", { class: "num" }, l.rateLimit === null ? "—" : `${count(l.rateLimit.max)} per ${duration(l.rateLimit.perMs)}`),
    ),
  );
  return h("table", { class: "grid" }, h("thead", {}, head), h("tbody", {}, rows));
}

function leasesTable(t) {
  if (t.form !== "lease") return null;
  const grouped = t.groups.some((g) => g.group !== null);
  const sampled = (t.capped?.atLeast ?? []).includes("expiringLeases") ? ` among the first ${count(t.capped.cap)} rows not done` : "";
  if (t.expiringLeases.length === 0) return h("div", { class: "empty" }, `No lease runs out in the next minute${sampled}.`);
  const shown = t.expiringLeases.slice(0, 6);
  const more = t.expiringLeases.length - shown.length;
  return h(
    "div",
    {},
    h(
      "table",
      { class: "grid" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", {}, "Id"),
          grouped ? h("th", {}, "Group") : null,
          h("th", { class: "num" }, "Attempt"),
          h("th", { class: "num" }, "Expires in"),
          h("th", {}, "Locked until"),
        ),
      ),
      h(
        "tbody",
        {},
        shown.map((l) =>
          h(
            "tr",
            {},
            h("td", {}, l.id),
            grouped ? h("td", {}, l.group ?? "—") : null,
            h("td", { class: "num" }, count(l.attempt)),
            h("td", { class: "num" }, duration(l.expiresInMs)),
            h("td", { "data-testid": `locked-until-${t.table}-${l.id}` }, shownTime(l.lockedUntil)),
          ),
        ),
      ),
    ),
    more > 0 ? h("div", { class: "empty" }, `and ${more} more (sqlinbox status lists them all)`) : null,
  );
}

function deadLetterSection(t, rows) {
  if (t.deadLetters.length === 0) return h("div", { class: "empty" }, "No dead-letter place is declared for this table.");
  const selected = state.selected.get(t.table) ?? new Set();
  state.selected.set(t.table, selected);
  // Rows moved away meanwhile (by another operator, or the CLI) leave the selection.
  const shown = new Set(rows.map((r) => r.id));
  for (const id of selected) if (!shown.has(id)) selected.delete(id);
  const writes = state.config?.writes === true;
  const flash = state.flash.get(t.table);
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r.columns)))].filter((c) => c !== "id");
  // A write that moves more than one row asks first: "Retry all" moves every dead letter, not only those shown.
  const retry = async (body, many) => {
    if (many !== null && !window.confirm(many)) return;
    const res = await fetch(`/api/dead-letters/${encodeURIComponent(t.table)}/retry`, {
      method: "POST",
      headers: { "content-type": "application/json", [state.config.tokenHeader]: document.getElementById("token").value },
      body: JSON.stringify(body),
    });
    const answer = await res.json().catch(() => ({}));
    if (res.ok) {
      state.flash.set(t.table, { ok: true, text: `Moved ${answer.moved} back to ${t.table}.` });
      selected.clear();
    } else {
      // A refused write keeps the selection: type the token and press the button again.
      const why = res.status === 401 ? "a write needs the token: type it in the Token box at the top of the page." : (answer.error ?? "");
      state.flash.set(t.table, { ok: false, text: `Refused (${res.status}): ${why}` });
    }
    await refresh();
  };
  return h(
    "div",
    {},
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        {
          class: "primary",
          "data-testid": `retry-selected-${t.table}`,
          disabled: !writes || selected.size === 0 ? true : undefined,
          onclick: () => retry({ ids: [...selected] }, selected.size > 1 ? `Move the ${selected.size} selected dead letters back into ${t.table}?` : null),
        },
        `Retry selected (${selected.size})`,
      ),
      h(
        "button",
        {
          "data-testid": `retry-all-${t.table}`,
          disabled: !writes || rows.length === 0 ? true : undefined,
          onclick: () => retry({ all: true }, `Move all ${t.totals.dead ?? rows.length} dead letter${(t.totals.dead ?? rows.length) === 1 ? "" : "s"} back into ${t.table}?`),
        },
        "Retry all",
      ),
      writes ? null : h("span", { class: "muted" }, "Read-only: start with --allow-writes --token to retry from here."),
      flash ? h("span", { class: `flash ${flash.ok ? "ok" : "bad"}`, "data-testid": `flash-${t.table}` }, flash.text) : null,
    ),
    rows.length === 0
      ? h("div", { class: "empty", "data-testid": `no-dead-${t.table}` }, "No dead letters.")
      : h(
          "table",
          { class: "grid", "data-testid": `dead-${t.table}` },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", {}, ""),
              h("th", {}, "Id"),
              columns.map((c) => h("th", {}, c)),
              h("th", {}, "Payload"),
            ),
          ),
          h(
            "tbody",
            {},
            rows.map((r) =>
              h(
                "tr",
                { "data-testid": `dead-row-${t.table}-${r.id}` },
                h(
                  "td",
                  {},
                  h("input", {
                    type: "checkbox",
                    "data-testid": `select-${t.table}-${r.id}`,
                    checked: selected.has(r.id) ? true : undefined,
                    disabled: writes ? undefined : true,
                    title: writes ? undefined : "read-only: start with --allow-writes --token to retry from here",
                    onchange: (e) => {
                      e.target.checked ? selected.add(r.id) : selected.delete(r.id);
                      void refresh();
                    },
                  }),
                ),
                h("td", {}, r.id),
                columns.map((c) => h("td", { class: c === "last_error" ? "error-text" : "" }, r.columns[c] === null || r.columns[c] === undefined ? "—" : cellText(r.columns[c]))),
                h("td", { class: "payload", title: text(r.payload) }, text(r.payload)),
              ),
            ),
          ),
        ),
    // The list shows the oldest rows only: say how many more there are, and where to see them.
    (t.totals.dead ?? 0) > rows.length
      ? h(
          "div",
          { class: "empty", "data-testid": `dead-more-${t.table}` },
          `and ${t.totals.dead - rows.length} more (the oldest ${rows.length} are shown; "Retry all" moves them all; sqlinbox peek --state dead --limit ${t.totals.dead} lists them)`,
        )
      : null,
    // The Jobs view pages through every dead letter, 50 at a time.
    rows.length > 0 && window.browseJobs && state.config?.jobs
      ? h("button", { "data-testid": `dead-browse-${t.table}`, onclick: () => window.browseJobs(t.table, "deadLettered") }, "Browse all dead letters")
      : null,
  );
}

/** A write of the flow controls (pause, resume, cancel): asks first, sends the token, flashes the answer under `flashKey`. */
async function flowWrite(path, body, question, flashKey, said) {
  if (!window.confirm(question)) return;
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", [state.config.tokenHeader]: document.getElementById("token").value },
    body: JSON.stringify(body),
  });
  const answer = await res.json().catch(() => ({}));
  if (res.ok) state.flash.set(flashKey, { ok: true, text: said(answer) });
  else {
    const why = res.status === 401 ? "a write needs the token: type it in the Token box at the top of the page." : (answer.error ?? "");
    state.flash.set(flashKey, { ok: false, text: `Refused (${res.status}): ${why}` });
  }
  await refresh();
}

/** A text box whose value outlives the page's refresh (it is rebuilt every few seconds). */
function keptInput(key, attrs) {
  return h("input", { ...attrs, value: state.inputs.get(key) ?? "", oninput: (e) => state.inputs.set(key, e.target.value) });
}

function flashOf(key, testId) {
  const flash = state.flash.get(key);
  return flash ? h("span", { class: `flash ${flash.ok ? "ok" : "bad"}`, "data-testid": testId }, flash.text) : null;
}

/** Paused routes with their Resume buttons, and a box to pause one: what every app's subscriptions of a route obey. */
function flowSection(paused) {
  const writes = state.config?.writes === true;
  const readOnly = writes
    ? null
    : h("span", { class: "muted" }, "This page is read-only: pausing, resuming and cancelling need a dashboard started with --allow-writes and a token.");
  if (paused === null) {
    return h(
      "section",
      { class: "card", "data-testid": "flow" },
      h("h2", {}, "Flow control"),
      h("div", { class: "empty", "data-testid": "no-control-table" }, "No control table: pausing and cancelling need it (sqlinbox ddl --control)."),
    );
  }
  const pause = (e) => {
    const route = (e.target.parentElement.querySelector("input")?.value ?? state.inputs.get("pause-route") ?? "").trim();
    if (route.length === 0) return;
    void flowWrite(
      "/api/pause",
      { route },
      `Pause route ${route} in every process? Rows in work finish; nothing new starts until it is resumed.`,
      "flow",
      () => `Paused ${route}.`,
    );
  };
  return h(
    "section",
    { class: "card", "data-testid": "flow" },
    h("h2", {}, "Flow control"),
    paused.length === 0
      ? h("div", { class: "empty", "data-testid": "no-paused" }, "No route is paused.")
      : h(
          "ul",
          { class: "paused", "data-testid": "paused" },
          paused.map((route) =>
            h(
              "li",
              { "data-testid": `paused-${route}` },
              h("span", { class: "badge paused" }, "paused"),
              " ",
              route,
              " ",
              h(
                "button",
                {
                  "data-testid": `resume-${route}`,
                  disabled: writes ? undefined : true,
                  onclick: () => void flowWrite("/api/resume", { route }, `Resume route ${route}? Its subscriptions claim again.`, "flow", () => `Resumed ${route}.`),
                },
                "Resume",
              ),
            ),
          ),
        ),
    h(
      "div",
      { class: "actions" },
      keptInput("pause-route", { type: "text", placeholder: "route", "data-testid": "pause-route", disabled: writes ? undefined : true }),
      h("button", { class: "primary", "data-testid": "pause", disabled: writes ? undefined : true, onclick: pause }, "Pause"),
      readOnly,
      flashOf("flow", "flash-flow"),
    ),
  );
}

/** A box to cancel one row of the table by id: removed if not in work, else its handler is told to stop. */
function cancelSection(t) {
  const writes = state.config?.writes === true;
  const key = `cancel-${t.table}`;
  const cancel = (e) => {
    // The box beside the button: what the operator sees is what is sent.
    const id = (e.target.parentElement.querySelector("input")?.value ?? state.inputs.get(key) ?? "").trim();
    if (id.length === 0) return;
    void flowWrite(
      `/api/tables/${encodeURIComponent(t.table)}/cancel`,
      { id },
      `Cancel row ${id} of ${t.table}? Not in work: it is removed and never starts. In work: its handler's signal is aborted.`,
      key,
      (answer) =>
        answer.result === "removed"
          ? `Row ${id} removed: it will never start.`
          : answer.result === "signalled"
            ? `Row ${id} is in work: its handler is told to stop (ctx.signal aborts with Cancelled).`
            : `No row ${id} (or it is done).`,
    );
  };
  return h(
    "div",
    { class: "actions" },
    keptInput(key, { type: "text", placeholder: "row id", "data-testid": `cancel-id-${t.table}`, disabled: writes ? undefined : true }),
    h("button", { "data-testid": `cancel-${t.table}`, disabled: writes ? undefined : true, onclick: cancel }, "Cancel job"),
    flashOf(key, `flash-cancel-${t.table}`),
  );
}

function chartCell(table, kind, title) {
  const box = h("div", { class: "chart", "data-testid": `chart-${kind}-${table}` }, h("div", { class: "title" }, title));
  return box;
}

// Series shown only where they apply: `fifo` ones only on a fifo table.
const SERIES = {
  depth: [
    ["Ready", "#2f7cf6", (s) => s.ready],
    ["Waiting (fifo)", "#74c0fc", (s) => s.waiting, "fifo"],
    ["In work", "#f59f00", (s) => s.inWork],
    ["Delayed", "#8e67e6", (s) => s.delayed],
  ],
  throughput: [["Settled / s", "#2b9348", (s) => s.finishedPerSecond]],
  failures: [
    ["Dead letters / s", "#e03131", (s) => s.failedPerSecond],
    ["Delayed (retrying)", "#8e67e6", (s) => s.delayed],
  ],
};

function drawCharts(t, samples, boxes) {
  const table = t.table;
  const fifo = t.totals.waiting !== null;
  for (const [kind, box] of Object.entries(boxes)) {
    // A throughput box that says "unknown" (nothing counts it, or a capped backlog hides it) gets no chart.
    if (kind === "throughput" && box.querySelector(`[data-testid="throughput-unknown-${table}"]`) !== null) continue;
    const defs = SERIES[kind].filter(([, , , only]) => only !== "fifo" || fifo);
    const xs = samples.map((s) => s.at / 1000);
    const data = [xs, ...defs.map(([, , pick]) => samples.map((s) => (s.tables[table] ? pick(s.tables[table]) : null)))];
    const key = `${table}/${kind}`;
    let chart = state.charts.get(key);
    if (chart && chart.root.parentElement !== box) {
      box.append(chart.root);
    }
    if (!chart) {
      chart = new uPlot(
        {
          width: Math.max(260, box.clientWidth - 20),
          height: 150,
          legend: { show: true },
          cursor: { show: true },
          scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] } },
          // Times in the page's zone, one line (the date is in the header): no label hangs off the canvas.
          padding: [8, 28, 0, 0],
          axes: [
            { stroke: "#6b7686", grid: { stroke: "#eef0f3" }, values: (_u, splits) => splits.map((s) => clock(new Date(s * 1000))) },
            { stroke: "#6b7686", grid: { stroke: "#eef0f3" }, size: 44 },
          ],
          series: [
            { label: "Time", value: (_u, v) => (v === null || v === undefined ? "—" : clock(new Date(v * 1000))) },
            ...defs.map(([label, color]) => ({ label, stroke: color, width: 2, fill: `${color}18`, points: { show: false } })),
          ],
        },
        data,
        box,
      );
      state.charts.set(key, chart);
    } else chart.setData(data);
  }
}

async function refresh() {
  const errorBox = document.getElementById("error");
  try {
    state.config ??= await getJson("/api/config");
    const [status, samples] = await Promise.all([getJson("/api/status"), getJson("/api/samples")]);
    const dead = await Promise.all(status.tables.map((t) => (t.deadLetters.length === 0 ? [] : getJson(`/api/dead-letters/${encodeURIComponent(t.table)}?limit=50`))));
    // The mysql dialect runs MariaDB too: name the server the operator runs (as the CLI's engineLabel does).
    const engine = document.getElementById("engine");
    engine.textContent = /^MariaDB\b/i.test(status.server ?? "") ? "mariadb" : status.engine;
    engine.title = status.server ?? "";
    const mode = document.getElementById("mode");
    mode.textContent = state.config.writes ? "writes allowed" : "read-only";
    mode.className = `badge ${state.config.writes ? "writes" : "read-only"}`;
    document.getElementById("token-box").hidden = !state.config.writes;
    document.getElementById("updated").textContent = `updated ${shownTime(status.at)}`;
    document.getElementById("zone").textContent = `times in ${ZONE}`;
    const main = document.getElementById("tables");
    const chartBoxes = [];
    main.replaceChildren(
      ...(status.paused === undefined ? [] : [flowSection(status.paused)]),
      ...(status.schedules === undefined ? [] : [schedulesSection(status.schedules)]),
      ...status.tables.map((t, i) => {
        const totals = t.totals;
        // A large table's backlog counted up to its cap: the depth plots lower bounds, and a delete-ack table's throughput (read from the backlog's growth) is unknown.
        const backlogCapped = (t.capped?.atLeast ?? []).some((f) => ["ready", "waiting", "inWork", "delayed", "dead"].includes(f));
        const unknownThroughput =
          t.settled.kind === "unknown"
            ? t.settled.reason
            : t.settled.kind === "idHighWater" && backlogCapped
              ? `its backlog is counted up to ${count(t.capped.cap)} rows, so the rows finished cannot be told from its growth`
              : null;
        const boxes = {
          depth: chartCell(t.table, "depth", backlogCapped ? `Depth (at least: counts stop at ${t.capped.cap.toLocaleString("en-US")})` : "Depth"),
          // A table where nothing counts the settled rows says so instead of charting a wrong number.
          throughput:
            unknownThroughput !== null
              ? h(
                  "div",
                  { class: "chart", "data-testid": `chart-throughput-${t.table}` },
                  h("div", { class: "title" }, "Throughput"),
                  h("p", { class: "muted", "data-testid": `throughput-unknown-${t.table}` }, `unknown: ${unknownThroughput}`),
                )
              : chartCell(t.table, "throughput", "Throughput"),
          failures: chartCell(t.table, "failures", "Failures"),
        };
        chartBoxes.push([t, boxes]);
        const target = t.deadLetters.map((d) => (d.kind === "table" ? `table ${d.table}` : `group ${d.deadGroup}`)).join(", ");
        return h(
          "section",
          { class: "card", "data-testid": `table-${t.table}` },
          h("h2", {}, t.table, h("span", { class: "badge form" }, FORM[t.form] ?? t.form)),
          h("div", { class: "subtitle" }, target ? `Dead letters go to ${target}.` : "No dead-letter place declared."),
          h(
            "div",
            { class: "kpis" },
            kpi("ready", "Ready", countIn(t, "ready")(totals.ready), `ready-${t.table}`),
            totals.waiting === null ? null : kpi("waiting", "Waiting (fifo)", countIn(t, "waiting")(totals.waiting), `waiting-${t.table}`),
            kpi("work", "In work", countIn(t, "inWork")(totals.inWork), `in-work-${t.table}`),
            kpi("delayed", "Delayed", countIn(t, "delayed")(totals.delayed), `delayed-${t.table}`),
            kpi("dead", "Dead letters", countIn(t, "dead")(totals.dead), `dead-count-${t.table}`),
            kpi("done", "Done", countIn(t, "done")(totals.done), `done-${t.table}`),
            kpi("oldest", "Oldest", ageIn(t)(totals.oldestAgeMs), `oldest-${t.table}`),
          ),
          h("h3", {}, "Live, sampled while this page's server runs"),
          h("div", { class: "charts" }, Object.values(boxes)),
          h("h3", {}, "Groups"),
          groupsTable(t),
          t.limits?.length ? h("h3", {}, "Caps and rate limits, across every process") : null,
          limitsTable(t),
          t.form === "lease" ? h("h3", {}, "Leases running out soon") : null,
          leasesTable(t),
          h("h3", {}, "Dead letters"),
          deadLetterSection(t, dead[i]),
          status.paused === undefined || status.paused === null ? null : h("h3", {}, "Cancel a job"),
          status.paused === undefined || status.paused === null ? null : cancelSection(t),
          t.notes.length
            ? h(
                "ul",
                { class: "notes" },
                t.notes.map((n) => h("li", {}, n)),
              )
            : null,
        );
      }),
    );
    for (const [t, boxes] of chartBoxes) drawCharts(t, samples, boxes);
    errorBox.hidden = true;
  } catch (error) {
    errorBox.hidden = false;
    errorBox.textContent = `Cannot read the status: ${error.message}`;
  }
}

document.getElementById("zone").textContent = `times in ${ZONE}`;
const tokenInput = document.getElementById("token");
tokenInput.value = sessionStorage.getItem("sqlinbox-token") ?? "";
tokenInput.addEventListener("input", () => sessionStorage.setItem("sqlinbox-token", tokenInput.value));

async function loop() {
  await refresh();
  setTimeout(loop, state.config?.sampleEveryMs ?? 2000);
}
void loop();
