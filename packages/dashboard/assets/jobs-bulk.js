// Bulk actions of the job browser: on the jobs picked in the list, or on every job the list's filter
// matches. Each runs in two steps through POST /api/jobs/bulk: a dry run that counts the jobs it
// would take, then, once confirmed, the action, whose counts the dialog shows (done, running left
// alone, gone). Uses h, shownTime, ZONE and the jobs state of app.js and jobs.js.

/** What each action is called, says it does, and calls the rows it changed. */
const BULK = {
  retry: { button: "Retry now", title: "Retry jobs now", does: "Their run-at is set to now, so a worker takes them at once. Jobs in work are left alone.", done: "made due now" },
  reschedule: { button: "Reschedule…", title: "Reschedule jobs", does: "They run at the time below. Jobs in work are left alone.", done: "rescheduled" },
  cancel: {
    button: "Cancel",
    title: "Cancel jobs",
    does: "Jobs not in work are removed and never start. Jobs in work have their handler told to stop (ctx.signal aborts with Cancelled).",
    done: "removed",
  },
  delete: { button: "Delete", title: "Delete jobs", does: "Jobs not in work are deleted. Jobs in work are left alone.", done: "deleted" },
};
const BULK_DEAD = {
  retry: { button: "Move back", title: "Move dead letters back", does: "They go back into the table as new jobs, to run again.", done: "moved back" },
  delete: { button: "Delete", title: "Delete dead letters", does: "They are deleted for good.", done: "deleted" },
};

/** Whether the list offers bulk actions: a dashboard that allows writes, and a state that takes them (not done). */
function bulkAllowed(page) {
  return jobs.config?.writes === true && jobs.config?.bulk === true && page.state !== "done";
}

/** The actions a table's jobs in a state take: dead letters are moved back or deleted; retry and reschedule need a run-at column. */
function bulkActions(page) {
  if (page.state === "deadLettered") return Object.entries(BULK_DEAD);
  const runAt = jobs.tables.find((t) => t.table === page.table)?.runAt === true;
  return Object.entries(BULK).filter(([action]) => runAt || (action !== "retry" && action !== "reschedule"));
}

/** The bar above the list (jobs.js draws it): what the actions apply to, and one button per action. */
window.bulkBar = (page) => {
  if (page.state === "done") return null;
  if (!bulkAllowed(page)) {
    return h(
      "div",
      { class: "bulk-bar muted", "data-testid": "bulk-read-only" },
      "Bulk actions (retry, reschedule, cancel, delete) need a dashboard started with --allow-writes and a token.",
    );
  }
  const picked = jobs.selected.size;
  // A search's matches are known a page at a time: a bulk action takes them as picked rows, never as a filter.
  const searched = (jobs.query?.search ?? "") !== "";
  if (picked === 0 || searched) jobs.scope = picked === 0 && !searched ? "filter" : "selected";
  const one = page.state === "deadLettered" ? "dead letter" : `${STATE_LABEL[page.state].toLowerCase()} job`;
  return h(
    "div",
    { class: "bulk-bar", "data-testid": "bulk-bar" },
    h(
      "label",
      {},
      "Act on ",
      h(
        "select",
        { "data-testid": "bulk-scope", onchange: (e) => (jobs.scope = e.target.value) },
        h("option", { value: "selected", disabled: picked === 0 ? true : undefined, selected: jobs.scope === "selected" ? true : undefined }, `the ${picked} picked`),
        h(
          "option",
          { value: "filter", disabled: searched ? true : undefined, selected: jobs.scope === "filter" ? true : undefined },
          searched ? `every ${one} the filter matches (not with a payload search: pick them)` : `every ${one} the filter matches`,
        ),
      ),
    ),
    bulkActions(page).map(([action, said]) =>
      h(
        "button",
        {
          class: action === "cancel" || action === "delete" ? "danger" : "",
          "data-testid": `bulk-${action}`,
          disabled: searched && picked === 0 ? true : undefined,
          title: searched && picked === 0 ? "pick the jobs the search listed" : undefined,
          onclick: () => openBulk(page, action),
        },
        said.button,
      ),
    ),
    picked > 0
      ? h(
          "button",
          {
            class: "link",
            "data-testid": "bulk-clear",
            onclick: () => {
              jobs.selected.clear();
              renderJobs();
            },
          },
          "Clear the pick",
        )
      : null,
  );
};

/** The next whole hour, written as the page writes times (the browser's zone). */
function inAnHour() {
  const d = new Date(Date.now() + 3_600_000);
  d.setMinutes(0, 0, 0);
  return `${day(d)} ${clock(d)}`;
}

/**
 * A time typed as the page shows times, `2026-12-07 09:00` or `2026-12-07 09:00:00`, read in the
 * browser's zone; `null` when it is not one. A text box, not the browser's date picker, whose
 * format follows the system's locale (12/07 reads as December or July depending on it).
 */
function typedTime(text) {
  const m = /^\s*(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?\s*$/.exec(text ?? "");
  if (m === null) return null;
  const [y, mo, d, hh, mi, ss] = m.slice(1).map((v) => Number(v ?? 0));
  const at = new Date(y, mo - 1, d, hh, mi, ss);
  // A day or hour that does not exist (2026-02-30, 25:00) rolls over: refuse it instead.
  return at.getFullYear() === y && at.getMonth() === mo - 1 && at.getDate() === d && at.getMinutes() === mi ? at : null;
}

/** Opens the dialog of `action` on the list's filter, or on the jobs picked; it counts first (reschedule: once a time is chosen). */
function openBulk(page, action) {
  const scope = jobs.scope === "selected" && jobs.selected.size > 0 ? "selected" : "filter";
  const q = jobs.query;
  const target =
    scope === "selected"
      ? { table: page.table, state: page.state, ids: [...jobs.selected] }
      : // A search is sent so that the server refuses it: its matches are acted on as picked rows only.
        { table: page.table, state: page.state, route: q.route || undefined, key: q.key || undefined, where: q.where || undefined, search: q.search || undefined };
  jobs.bulk = {
    action,
    scope,
    target,
    dead: page.state === "deadLettered",
    phase: "counting",
    runAt: action === "reschedule" ? inAnHour() : null,
    matched: null,
    result: null,
    error: null,
  };
  drawBulk();
  bulkDialog().showModal();
  void countBulk();
}

function bulkDialog() {
  let dialog = document.getElementById("bulk-dialog");
  if (dialog === null) {
    dialog = h("dialog", { id: "bulk-dialog", class: "bulk-dialog", "data-testid": "bulk-dialog" });
    dialog.addEventListener("close", closeBulk);
    document.body.append(dialog);
  }
  return dialog;
}

/** Sends the bulk request with the token; the answer's JSON, or an error that says why it was refused. */
async function postBulk(dryRun) {
  const b = jobs.bulk;
  const runAt = b.action === "reschedule" ? typedTime(b.runAt) : null;
  if (b.action === "reschedule" && runAt === null) throw new Error(`Write the time as ${inAnHour()} (${ZONE}), not "${b.runAt}".`);
  const res = await fetch("/api/jobs/bulk", {
    method: "POST",
    headers: { "content-type": "application/json", [jobs.config.tokenHeader]: document.getElementById("token").value },
    body: JSON.stringify({ ...b.target, action: b.action, dryRun, ...(runAt === null ? {} : { runAt: runAt.toISOString() }) }),
  });
  const answer = await res.json().catch(() => ({}));
  if (res.ok) return answer;
  const why = res.status === 401 ? "a write needs the token: type it in the Token box at the top of the page." : (answer.error ?? "");
  throw new Error(`Refused (${res.status}): ${why}`);
}

async function countBulk() {
  const b = jobs.bulk;
  try {
    const answer = await postBulk(true);
    if (jobs.bulk !== b) return;
    b.matched = answer.matched;
    b.phase = "confirm";
  } catch (error) {
    if (jobs.bulk !== b) return;
    b.error = error.message;
    b.phase = "failed";
  }
  drawBulk();
}

async function runBulk() {
  const b = jobs.bulk;
  // A time that does not read stays in the dialog, said why, to be fixed and confirmed again.
  if (b.action === "reschedule" && typedTime(b.runAt) === null) {
    b.error = `Write the time as ${inAnHour()} (${ZONE}), not "${b.runAt}".`;
    drawBulk();
    return;
  }
  b.error = null;
  b.phase = "running";
  drawBulk();
  try {
    b.result = await postBulk(false);
    b.phase = "done";
  } catch (error) {
    b.error = error.message;
    b.phase = "failed";
  }
  if (jobs.bulk === b) drawBulk();
}

/** Closing the dialog after a run shows the list again as it is now. */
function closeBulk() {
  const ran = jobs.bulk?.phase === "done";
  jobs.bulk = null;
  const dialog = document.getElementById("bulk-dialog");
  if (dialog?.open) dialog.close();
  if (ran) {
    jobs.selected.clear();
    void loadPage();
  }
}

function drawBulk() {
  const b = jobs.bulk;
  if (b === null) return;
  const said = (b.dead ? BULK_DEAD : BULK)[b.action];
  const state = STATE_LABEL[b.target.state].toLowerCase();
  const what = b.dead ? "dead letters" : `${state} jobs`;
  const filter = [b.target.route && `route ${b.target.route}`, b.target.key && `key ${b.target.key}`, b.target.where?.replace(":", " = ")].filter(Boolean);
  const scope =
    b.scope === "selected"
      ? `The ${b.target.ids.length} ${b.dead ? "dead letters" : "jobs"} picked in ${b.target.table}.`
      : `Every ${b.dead ? "dead letter" : `${state} job`} of ${b.target.table}${filter.length ? ` with ${filter.join(", ")}` : ""}.`;
  const counts =
    b.result === null
      ? null
      : h(
          "table",
          { class: "grid counts", "data-testid": "bulk-counts" },
          h(
            "tbody",
            {},
            [
              ["done", `Done (${said.done})`, b.result.touched],
              ...(b.action === "cancel" && !b.dead ? [["signalled", "Running: told to stop", b.result.signalled]] : []),
              ...(b.dead ? [] : [["in-work", "Skipped: running (left alone)", b.result.inWork]]),
              ["gone", "Gone meanwhile (or done)", b.result.notFound],
            ].map(([key, label, n]) =>
              h("tr", { class: n > 0 && key !== "done" ? "notable" : "" }, h("td", {}, label), h("td", { class: "num", "data-testid": `bulk-${key}` }, String(n))),
            ),
          ),
        );
  const busy = b.phase === "counting" || b.phase === "running";
  // Through h: the parts left out (null) are skipped, never shown as text.
  const body = h(
    "div",
    {},
    h("h2", {}, said.title),
    h("p", { "data-testid": "bulk-scope-text" }, scope),
    h("p", { class: "muted" }, said.does),
    b.action === "reschedule"
      ? h(
          "label",
          { class: "run-at" },
          `Run at (${ZONE}) `,
          h("input", {
            type: "text",
            size: 20,
            placeholder: inAnHour(),
            value: b.runAt,
            "data-testid": "bulk-run-at",
            disabled: b.phase === "done" || busy ? true : undefined,
            oninput: (e) => (b.runAt = e.target.value),
          }),
        )
      : null,
    b.phase === "counting" ? h("p", { class: "muted", "data-testid": "bulk-counting" }, "Counting the jobs it would take…") : null,
    b.matched !== null && b.phase !== "done"
      ? h(
          "p",
          { class: "dry-run", "data-testid": "bulk-matched" },
          b.matched === 0
            ? `Dry run: no ${what} match; nothing would change.`
            : `Dry run: this takes ${b.matched} ${b.matched === 1 ? what.replace(/s$/, "") : what}. Nothing has changed yet.`,
        )
      : null,
    b.phase === "running" ? h("p", { class: "muted" }, `Working on ${b.matched} ${what}…`) : null,
    b.phase === "done" ? h("p", { class: "flash ok", "data-testid": "bulk-result" }, `Finished: ${b.result.matched} ${what} taken.`) : null,
    counts,
    b.error ? h("p", { class: "flash bad", "data-testid": "bulk-error" }, b.error) : null,
    h(
      "div",
      { class: "actions end" },
      h("button", { "data-testid": "bulk-close", onclick: closeBulk }, b.phase === "done" ? "Close" : "Back"),
      b.phase === "confirm" && b.matched > 0
        ? h(
            "button",
            { class: b.action === "cancel" || b.action === "delete" ? "danger solid" : "primary", "data-testid": "bulk-confirm", onclick: () => void runBulk() },
            `${said.button.replace("…", "")}: ${b.matched} ${b.matched === 1 ? what.replace(/s$/, "") : what}`,
          )
        : null,
    ),
  );
  bulkDialog().replaceChildren(...body.childNodes);
}
