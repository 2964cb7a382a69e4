// The job browser: a table's jobs in one state, filtered and keyset paged through /api/jobs, and one
// job's page from /api/job, and bulk actions on the rows picked or on the whole filter through
// /api/jobs/bulk. Uses h, shownTime, ZONE and getJson of app.js. Every value is set as text, never as HTML.

const STATE_LABEL = { scheduled: "Scheduled", waiting: "Waiting", running: "Running", done: "Done", deadLettered: "Dead letters" };
// `cursors` holds the `after` of every page up to the one shown: Previous goes back one, Next adds one.
// `selected` holds the ids picked on the list (kept across its pages, cleared when the filter changes);
// `scope` whether the bulk bar acts on them or on the filter; `bulk` the open bulk dialog's state.
const jobs = { tables: [], query: null, cursors: [], page: null, job: null, error: null, config: null, selected: new Set(), scope: "filter", bulk: null };

// One job's state, in the singular.
const stateOf = (s) => (s === "deadLettered" ? "Dead letter" : (STATE_LABEL[s] ?? s));
const when = (iso) => (iso === null || iso === undefined ? "—" : shownTime(iso));

function jobsUrl(query, after) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== "" && v !== undefined && v !== null) params.set(k, v);
  if (after) params.set("after", after);
  return `/api/jobs?${params}`;
}

// Each load is numbered: an answer that comes back after a later request was sent is dropped, so a
// slow page never replaces the one asked for since.
let loads = 0;
async function loadPage() {
  const load = ++loads;
  try {
    const page = await getJson(jobsUrl(jobs.query, jobs.cursors.at(-1)));
    if (load !== loads) return;
    jobs.page = page;
    jobs.error = null;
  } catch (error) {
    if (load !== loads) return;
    jobs.page = null;
    jobs.error = error.message;
  }
  jobs.job = null;
  renderJobs();
}

async function openJob(table, id, dead) {
  // A list still loading is dropped: the job stays open.
  loads++;
  try {
    jobs.job = await getJson(`/api/job?${new URLSearchParams({ table, id, ...(dead ? { dead: "1" } : {}) })}`);
    jobs.error = null;
  } catch (error) {
    jobs.error = error.message;
  }
  renderJobs();
}

/** Opens the Jobs view on a table's state (the dead-letter section's "Browse all" calls it). */
window.browseJobs = (table, state) => {
  location.hash = "#jobs";
  jobs.query = { table, state, route: "", key: "", where: "", search: "", sort: "id", limit: "50" };
  jobs.cursors = [];
  jobs.selected.clear();
  showView();
  void loadPage();
};

function filterForm() {
  const q = jobs.query;
  const t = jobs.tables.find((x) => x.table === q.table) ?? jobs.tables[0];
  const read = () => {
    const v = (id) => document.getElementById(id)?.value ?? "";
    const column = v("jobs-where-column");
    const value = v("jobs-where-value");
    const state = v("jobs-state");
    // Run-at order is for scheduled jobs only: another state goes back to id order.
    const search = v("jobs-search");
    // A search lists by id: run-at order is for scheduled jobs without one.
    const sort = state === "scheduled" && v("jobs-table") === q.table && search === "" ? v("jobs-sort") : "id";
    return {
      table: v("jobs-table"),
      state,
      route: v("jobs-route"),
      key: v("jobs-key"),
      where: column && value !== "" ? `${column}:${value}` : "",
      search,
      sort,
      limit: "50",
    };
  };
  const apply = (e) => {
    e?.preventDefault();
    jobs.query = read();
    jobs.cursors = [];
    jobs.selected.clear();
    // Drawn at once from the query just read: the form stays the same node while its list loads, so what is
    // typed meanwhile is kept (drawn when the list came back, it was replaced by the query's older values),
    // and no page of the former filter is left under the new one, for a bulk action to take.
    jobs.page = null;
    jobs.job = null;
    renderJobs();
    void loadPage();
  };
  const [whereColumn, whereValue] = q.where ? [q.where.slice(0, q.where.indexOf(":")), q.where.slice(q.where.indexOf(":") + 1)] : [t?.data[0] ?? "", ""];
  const option = (value, label, selected) => h("option", { value, selected: selected ? true : undefined }, label);
  const states = ["scheduled", "waiting", "running", ...(t?.done ? ["done"] : []), "deadLettered"];
  return h(
    "form",
    { class: "filters", "data-testid": "jobs-filters", onsubmit: apply },
    h(
      "label",
      {},
      "Table ",
      h(
        "select",
        { id: "jobs-table", "data-testid": "jobs-table", onchange: apply },
        jobs.tables.map((x) => option(x.table, x.table, x.table === q.table)),
      ),
    ),
    h(
      "label",
      {},
      "State ",
      h(
        "select",
        { id: "jobs-state", "data-testid": "jobs-state", onchange: apply },
        states.map((s) => option(s, STATE_LABEL[s], s === q.state)),
      ),
    ),
    t?.group ? h("label", {}, "Route ", h("input", { id: "jobs-route", "data-testid": "jobs-route", value: q.route, placeholder: t.group, size: 12 })) : null,
    t?.key ? h("label", {}, "Key ", h("input", { id: "jobs-key", "data-testid": "jobs-key", value: q.key, placeholder: t.key, size: 14 })) : null,
    t?.data.length
      ? h(
          "label",
          {},
          "Where ",
          h(
            "select",
            { id: "jobs-where-column", "data-testid": "jobs-where-column" },
            t.data.map((c) => option(c, c, c === whereColumn)),
          ),
          " = ",
          h("input", { id: "jobs-where-value", "data-testid": "jobs-where-value", value: whereValue, size: 12 }),
        )
      : null,
    t?.payload
      ? h(
          "label",
          { title: "text the payload holds, as the database prints it (case-insensitive); a page reads at most 10,000 rows" },
          "Payload has ",
          h("input", { id: "jobs-search", "data-testid": "jobs-search", value: q.search ?? "", placeholder: "text", size: 14 }),
        )
      : null,
    h(
      "label",
      {},
      "Sort ",
      h(
        "select",
        { id: "jobs-sort", "data-testid": "jobs-sort", onchange: apply },
        option("id", "by id", q.sort !== "runAt"),
        t?.runAt && q.state === "scheduled" ? option("runAt", "by run-at", q.sort === "runAt") : null,
      ),
    ),
    h("button", { class: "primary", type: "submit", "data-testid": "jobs-apply" }, "Show"),
  );
}

function jobsTable(page) {
  const none = page.state === "deadLettered" ? "No dead letters" : `No ${STATE_LABEL[page.state].toLowerCase()} jobs`;
  if (page.jobs.length === 0) return h("div", { class: "empty", "data-testid": "jobs-empty" }, `${none} on this page.`);
  const picking = bulkAllowed(page);
  const onPage = page.jobs.map((j) => j.id);
  const all = picking && onPage.every((id) => jobs.selected.has(id));
  const pick = (ids, on) => {
    for (const id of ids) on ? jobs.selected.add(id) : jobs.selected.delete(id);
    // Picking rows means acting on them; the bar can still be set to the whole filter.
    if (on) jobs.scope = "selected";
    renderJobs();
  };
  return h(
    "table",
    { class: "grid", "data-testid": "jobs-list" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        picking
          ? h(
              "th",
              { class: "pick" },
              h("input", {
                type: "checkbox",
                "data-testid": "jobs-select-page",
                title: "pick every job of this page",
                checked: all ? true : undefined,
                onchange: (e) => pick(onPage, e.target.checked),
              }),
            )
          : null,
        ["Id", "State", "Attempt", "Run at", "Lease until", "Key", "Last error", "Payload"].map((c) => h("th", {}, c)),
      ),
    ),
    h(
      "tbody",
      {},
      page.jobs.map((j) =>
        h(
          "tr",
          { "data-testid": `job-row-${j.id}`, class: jobs.selected.has(j.id) ? "picked" : undefined },
          picking
            ? h(
                "td",
                { class: "pick" },
                h("input", {
                  type: "checkbox",
                  "data-testid": `job-select-${j.id}`,
                  checked: jobs.selected.has(j.id) ? true : undefined,
                  onchange: (e) => pick([j.id], e.target.checked),
                }),
              )
            : null,
          h("td", {}, h("a", { href: "#jobs", "data-testid": `job-open-${j.id}`, onclick: (e) => openFromList(e, page.table, j) }, j.id)),
          h("td", {}, stateOf(j.state)),
          h("td", { class: "num" }, j.attempt ?? "—"),
          h("td", { class: "nowrap" }, when(j.runAt)),
          h("td", { class: "nowrap" }, when(j.leaseUntil)),
          h("td", { class: "nowrap" }, j.key ?? "—"),
          h("td", { class: j.lastError ? "error-text" : "" }, j.lastError ?? "—"),
          h("td", { class: "payload", title: j.preview ?? "" }, j.preview ?? "—"),
        ),
      ),
    ),
  );
}

function openFromList(event, table, job) {
  event.preventDefault();
  void openJob(table, job.id, job.deadLetterTable !== undefined);
}

/** Next pushes the page's `next` cursor, Previous pops the last one: keyset pages both ways, no offset. */
function turn(step, next) {
  if (step > 0) jobs.cursors.push(next);
  else jobs.cursors.pop();
  void loadPage();
}

function pager(page) {
  const n = jobs.cursors.length + 1;
  return h(
    "div",
    { class: "actions" },
    h("button", { "data-testid": "jobs-prev", disabled: n === 1 ? true : undefined, onclick: () => turn(-1, null) }, "← Previous"),
    h("span", { "data-testid": "jobs-page" }, `Page ${n} · ${page.jobs.length} job${page.jobs.length === 1 ? "" : "s"}`),
    h("button", { "data-testid": "jobs-next", disabled: page.next === null ? true : undefined, onclick: () => turn(1, page.next) }, "Next →"),
  );
}

function shown(label, value, testId) {
  if (value === null) return null;
  return h(
    "div",
    { class: "field" },
    h("h3", {}, label),
    value.cut ? h("div", { class: "flash bad", "data-testid": `${testId}-cut` }, `Cut: the first 64 KiB of ${value.bytes.toLocaleString("en-US")} bytes are shown.`) : null,
    h("pre", { class: "text-box", "data-testid": testId }, value.text),
  );
}

/** A span of milliseconds in words: 1500 → "1.5 s", 90000 → "1.5 min". */
function span(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${+(ms / 60_000).toFixed(1)} min`;
  if (ms < 86_400_000) return `${+(ms / 3_600_000).toFixed(1)} h`;
  return `${+(ms / 86_400_000).toFixed(1)} d`;
}

/** What the route that runs the job declares: attempts, dead letter, timeout, lease, limits, retention. */
function policyOf(job) {
  const box = (...body) => h("div", { class: "field", "data-testid": "job-policy" }, h("h3", {}, "Route policy"), ...body);
  if (job.policies.length === 0) {
    return box(
      h("p", { class: "muted" }, "Not known here: start the dashboard with --module, a module that exports the queues, to see each route's attempts, timeout and limits."),
    );
  }
  return box(
    job.policies.map((p) => {
      const row = (label, value, testId) => [h("dt", {}, label), h("dd", { "data-testid": `${testId}-${p.route}` }, value)];
      return h(
        "dl",
        { class: "facts" },
        row("Route", p.route, "policy-route"),
        row("Max attempts", p.maxAttempts === undefined ? "no limit: a throw is retried for ever" : String(p.maxAttempts), "policy-max-attempts"),
        row("Dead letters", p.deadLetter ?? "none declared", "policy-dead-letter"),
        row("Timeout", p.timeout === undefined ? "none: a delivery runs as long as it takes" : `${span(p.timeout.ms)}, then ${span(p.timeout.graceMs)} grace`, "policy-timeout"),
        row("On a throw", p.onError === "default backoff" ? "retried after a backoff: 1 s doubling to 1 h, jittered" : "the queue's own onError decides", "policy-on-error"),
        p.leaseMs === undefined ? null : row("Lease", span(p.leaseMs), "policy-lease"),
        row("Workers × batch", `${p.workers} × ${p.batch}, polling every ${span(p.pollIntervalMs)}`, "policy-workers"),
        p.maxInWork === undefined ? null : row("Max in work", String(p.maxInWork), "policy-max-in-work"),
        p.maxInWorkPerKey === undefined ? null : row("Max in work per key", String(p.maxInWorkPerKey), "policy-max-per-key"),
        p.rateLimit === undefined ? null : row("Rate limit", `${p.rateLimit.max} per ${span(p.rateLimit.perMs)}`, "policy-rate-limit"),
        p.retain === undefined
          ? null
          : row(
              "Kept",
              [
                p.retain.doneMs === undefined ? null : `handled ${span(p.retain.doneMs)}`,
                p.retain.deadLetteredMs === undefined ? null : `dead letters ${span(p.retain.deadLetteredMs)}`,
              ]
                .filter(Boolean)
                .join(", "),
              "policy-retain",
            ),
      );
    }),
  );
}

/** The workflow run the job is a step of: the run, and every step with its state and the job it published. */
function workflowOf(job) {
  const run = job.workflow;
  if (!run) return null;
  const served = (table) => jobs.tables.some((t) => t.table === table);
  const name = (s) => (s.item === null ? s.step : `${s.step} [${s.item}]`);
  return h(
    "div",
    { class: "field", "data-testid": "job-workflow" },
    h("h3", {}, "Workflow run"),
    h("p", { "data-testid": "job-workflow-run" }, `${run.name} ${run.id}: ${run.state}. This job is step ${name(run)}.`),
    h(
      "table",
      { class: "grid", "data-testid": "job-workflow-steps" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Step", "State", "Job"].map((c) => h("th", {}, c)),
        ),
      ),
      h(
        "tbody",
        {},
        run.steps.map((s) =>
          h(
            "tr",
            { "data-testid": `workflow-step-${s.step}${s.item === null ? "" : `-${s.item}`}`, class: s.step === run.step && s.item === run.item ? "picked" : undefined },
            h("td", {}, name(s)),
            h("td", {}, s.state),
            h(
              "td",
              {},
              s.jobId === null
                ? "—"
                : served(s.jobTable)
                  ? h(
                      "a",
                      {
                        href: "#jobs",
                        onclick: (e) => {
                          e.preventDefault();
                          void openJob(s.jobTable, s.jobId, false);
                        },
                      },
                      `${s.jobTable} #${s.jobId}`,
                    )
                  : `${s.jobTable} #${s.jobId}`,
            ),
          ),
        ),
      ),
    ),
  );
}

function closeJob() {
  jobs.job = null;
  renderJobs();
}

function jobDetail(job) {
  const row = (label, value, testId) => [h("dt", {}, label), h("dd", { "data-testid": testId }, value ?? "—")];
  return h(
    "div",
    { class: "job", "data-testid": "job-detail" },
    h("div", { class: "actions" }, h("button", { "data-testid": "job-back", onclick: closeJob }, "← Back to the list")),
    h("h2", {}, `Job ${job.id}`, h("span", { class: "badge form" }, job.deadLetterTable ? `dead letter in ${job.deadLetterTable}` : job.table)),
    h(
      "dl",
      { class: "facts" },
      row("State", stateOf(job.state), "job-state"),
      row("Attempt", job.attempt === null ? null : String(job.attempt), "job-attempt"),
      row("Run at", when(job.runAt), "job-run-at"),
      row("Lease until", when(job.leaseUntil), "job-lease"),
      row("Held by", job.holder === null ? null : job.state === "running" && job.leaseUntil ? `${job.holder}, until ${when(job.leaseUntil)}` : job.holder, "job-holder"),
      Object.entries(job.columns).flatMap(([k, v]) =>
        row(k, v === null ? null : typeof v === "string" && /^\d{4}-\d{2}-\d{2}T\d\d:/.test(v) ? when(v) : typeof v === "string" ? v : JSON.stringify(v), `job-column-${k}`),
      ),
    ),
    policyOf(job),
    workflowOf(job),
    shown("Last error", job.lastError, "job-last-error"),
    shown("Payload", job.payload, "job-payload"),
    shown("Headers", job.headers, "job-headers"),
    shown("Result", job.result, "job-result"),
    shown("Progress", job.progress, "job-progress"),
  );
}

// The filter form stays the same node while the query it shows is the same: a page that loads while
// someone types in it (a slow Next, a job closed) keeps what they typed and where the cursor was.
let kept = { query: null, tables: null, form: null };
function keptFilterForm() {
  if (kept.form !== null && kept.query === jobs.query && kept.tables === jobs.tables) return kept.form;
  kept = { query: jobs.query, tables: jobs.tables, form: filterForm() };
  return kept.form;
}

function renderJobs() {
  const box = document.getElementById("jobs");
  if (jobs.query === null) return;
  const page = jobs.page;
  // Moving the kept form drops the focus: give it back to the field that had it.
  const focused = document.activeElement;
  const caret = focused && "selectionStart" in focused ? [focused.selectionStart, focused.selectionEnd] : null;
  box.replaceChildren(
    h(
      "section",
      { class: "card", "data-testid": "jobs-view" },
      h("h2", {}, "Jobs"),
      h(
        "div",
        { class: "subtitle", "data-testid": "jobs-zone" },
        `Times are in ${ZONE} (this browser's time zone), as everywhere on this page. Pages hold 50 jobs, walked by id (or run-at) from a cursor.`,
      ),
      keptFilterForm(),
      jobs.error ? h("div", { class: "error", "data-testid": "jobs-error" }, jobs.error) : null,
      jobs.job
        ? jobDetail(jobs.job)
        : page
          ? [
              window.bulkBar(page),
              pager(page),
              jobsTable(page),
              page.notes.length
                ? h(
                    "ul",
                    { class: "notes" },
                    page.notes.map((n) => h("li", {}, n)),
                  )
                : null,
            ]
          : null,
    ),
  );
  if (focused instanceof HTMLElement && focused !== document.activeElement && kept.form?.contains(focused)) {
    focused.focus();
    if (caret !== null) focused.setSelectionRange(caret[0], caret[1]);
  }
}

function showView() {
  const onJobs = location.hash.startsWith("#jobs");
  document.getElementById("tables").hidden = onJobs;
  document.getElementById("jobs").hidden = !onJobs;
  for (const a of document.querySelectorAll(".views a")) a.classList.toggle("current", a.getAttribute("href") === (onJobs ? "#jobs" : "#overview"));
}

async function startJobs() {
  const config = await getJson("/api/config");
  jobs.config = config;
  jobs.tables = config.jobs ?? [];
  document.getElementById("jobs-tab").hidden = jobs.tables.length === 0;
  if (jobs.tables.length === 0) return;
  jobs.query ??= { table: jobs.tables[0].table, state: "waiting", route: "", key: "", where: "", search: "", sort: "id", limit: "50" };
  window.addEventListener("hashchange", showView);
  showView();
  if (jobs.page === null) await loadPage();
}
void startJobs();
