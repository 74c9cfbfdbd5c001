// The panel's controller: sign-in, memories (list, search, delete with undo), review queue.

import { api, ApiProblem, forgetKey, storedKey, storeKey } from "./api.js";
import { draftCard, el, historyList, memoryCard, memoryEditor } from "./render.js";
import { PendingDelete } from "./undo.js";

const $ = (id) => document.getElementById(id);
const DEFAULT_UNDO_MS = 5000;

const view = {
  memoriesCursor: null,
  draftsCursor: null,
  query: "",
  memoriesStale: false,
  toastTimer: null,
};

/** The undo window: 5 s unless ?undo_ms= (or data-undo-ms on <body>) asks otherwise (tests). */
function undoWindow() {
  const raw = new URLSearchParams(location.search).get("undo_ms") ?? document.body.dataset.undoMs;
  const ms = Number.parseInt(raw ?? "", 10);
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 50), 60000) : DEFAULT_UNDO_MS;
}

const pending = new PendingDelete(undoWindow(), (id, keepalive) => api.deleteMemory(id, keepalive));

// ---- status lines, toast -------------------------------------------------------------------

function setStatus(node, text, { error = false, retry = null } = {}) {
  node.classList.toggle("error", error);
  node.replaceChildren(text);
  if (retry) {
    const again = el("button", { cls: "quiet", text: "Retry", attrs: { type: "button" } });
    again.addEventListener("click", retry);
    node.append(" ", again);
  }
}

function toast(text, { undo = false, ms = 4000 } = {}) {
  clearTimeout(view.toastTimer);
  $("toast-text").textContent = text;
  $("toast-undo").hidden = !undo;
  $("toast").hidden = false;
  if (!undo) view.toastTimer = setTimeout(() => { $("toast").hidden = true; }, ms);
}

function hideToast() {
  clearTimeout(view.toastTimer);
  $("toast").hidden = true;
}

/** Show a failed request: sign out on 401, else say what happened where it happened. */
function report(problem, node, retry) {
  if (!(problem instanceof ApiProblem)) throw problem;
  if (problem.status === 401) {
    signOut("Your key is no longer accepted (revoked or expired). Sign in again.");
    return;
  }
  setStatus(node, problem.detail, { error: true, retry });
}

// ---- signed-in / signed-out ----------------------------------------------------------------

function show(state) {
  document.body.dataset.state = state;
  $("boot").hidden = true;
  const signedIn = state !== "signed-out";
  $("signin").hidden = signedIn;
  $("tabs").hidden = !signedIn;
  $("account").hidden = !signedIn;
  $("memories").hidden = state !== "memories";
  $("review").hidden = state !== "review";
  for (const [tab, name] of [["tab-memories", "memories"], ["tab-review", "review"]]) {
    if (state === name) $(tab).setAttribute("aria-current", "page");
    else $(tab).removeAttribute("aria-current");
  }
}

function signOut(message = "") {
  pending.flush();
  forgetKey();
  hideToast();
  $("memory-list").replaceChildren();
  $("draft-list").replaceChildren();
  $("review-count").hidden = true;
  $("signin-error").textContent = message;
  $("key-input").value = "";
  show("signed-out");
  $("key-input").focus();
}

async function signInWithKey(event) {
  event.preventDefault();
  const key = $("key-input").value.trim();
  if (!key.startsWith("mb_")) {
    $("signin-error").textContent = "That does not look like a memory-bank key (they start with mb_).";
    return;
  }
  storeKey(key);
  $("signin-error").textContent = "";
  try {
    await api.listMemories(null);
  } catch (problem) {
    forgetKey();
    $("signin-error").textContent =
      problem.status === 401 ? "That key was not accepted (unknown, revoked or expired)." : problem.detail;
    return;
  }
  $("key-input").value = "";
  enter();
}

/** Trade the one-time code from the link (#signin=...) for a key, and drop it from the URL. */
async function signInWithLink(code) {
  history.replaceState(null, "", location.pathname + location.search);
  try {
    const session = await api.signIn(code);
    storeKey(session.key);
  } catch (problem) {
    signOut(problem.detail);
    return;
  }
  enter();
}

function enter() {
  openMemories(true);
  refreshReviewCount();
}

// ---- memories ------------------------------------------------------------------------------

async function openMemories(reload = false) {
  show("memories");
  if (reload || view.memoriesStale) await loadMemories(true);
}

async function loadMemories(reset) {
  const list = $("memory-list");
  const status = $("memories-status");
  if (reset) {
    view.memoriesCursor = null;
    view.query = "";
    $("search-clear").hidden = true;
  }
  view.memoriesStale = false;
  list.setAttribute("aria-busy", "true");
  setStatus(status, reset ? "Loading memories…" : "Loading more…");
  // A fresh list must not show a memory whose delete is still waiting: send it first.
  if (reset) await pending.flush();
  try {
    const filters = narrowFilter();
    const page = await api.listMemories(reset ? null : view.memoriesCursor, scopeFilter(), filters);
    if (reset) list.replaceChildren();
    for (const memory of page.memories) list.append(cardFor(memory));
    view.memoriesCursor = page.next_cursor;
    $("more").hidden = !page.next_cursor;
    const empty = narrowed(filters)
      ? "No memory matches these filters."
      : "No memories yet. What your agents save shows up here.";
    setStatus(status, `${list.children.length ? "" : empty}${orgMissing(page)}`.trim());
  } catch (problem) {
    if (reset) list.replaceChildren();
    report(problem, status, () => loadMemories(reset));
  } finally {
    list.removeAttribute("aria-busy");
  }
}

/** The tag and date filters as the API takes them: every tag named (comma-separated), and
 * whole UTC days, "until" included (so created_before is the next day's 00:00 UTC). */
function narrowFilter() {
  const tags = $("filter-tags").value.split(",").map((t) => t.trim()).filter(Boolean);
  const from = $("filter-from").value;
  const until = $("filter-until").value;
  let createdBefore = "";
  if (until) {
    const next = new Date(`${until}T00:00:00Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    createdBefore = next.toISOString().slice(0, 10);
  }
  return { tags, createdAfter: from, createdBefore };
}

function narrowed(filters) {
  return filters.tags.length > 0 || Boolean(filters.createdAfter || filters.createdBefore);
}

/** A note when an answer left the org's memories out (their database backend is down; only
 * the org's can be missing: without the caller's own the answer is a 503). */
function orgMissing(answer) {
  return (answer.unavailable ?? []).includes("org")
    ? " Your organisation's memories could not be read just now."
    : "";
}

/** How the server ranked a search, in words (the answer's `mode`). */
const RANKED_BY = {
  hybrid: "Ranked by meaning and words (hybrid).",
  semantic: "Ranked by meaning (semantic).",
  lexical: "Ranked by words only (lexical).",
};

/** Whose memories to show: "all", "user" (Personal) or "org" (Organisation). */
function scopeFilter() {
  return document.querySelector('#scope-filter input[name="scope"]:checked')?.value || "all";
}

async function search(event, { weaker = false } = {}) {
  event.preventDefault();
  const q = $("search-input").value.trim();
  if (!q) {
    loadMemories(true);
    return;
  }
  await pending.flush();
  const list = $("memory-list");
  const status = $("memories-status");
  view.query = q;
  $("more").hidden = true;
  $("search-clear").hidden = false;
  list.setAttribute("aria-busy", "true");
  setStatus(status, "Searching…");
  try {
    const filters = narrowFilter();
    const { results, mode, unavailable } = await api.search(
      q, scopeFilter(), filters, weaker ? 0 : null);
    list.replaceChildren(...results.map((m) => cardFor(m, m.score)));
    const count = results.length === 1 ? "1 memory matches" : `${results.length} memories match`;
    const among = narrowed(filters) ? " among the filtered ones" : "";
    const nearest = results.length === 1 ? "match" : `${results.length} matches`;
    // A search by meaning answers only what clears the relevance floor: an empty answer means
    // nothing relevant, and the weaker matches are a click away (min_score=0).
    const floored = !results.length && !weaker && mode !== "lexical";
    let found = `No memory matches “${q}”${among}.`;
    if (floored) found = `Nothing relevant to “${q}”${among}.`;
    else if (weaker && results.length) {
      found = `Nothing relevant to “${q}”${among}; the nearest ${nearest}, however weak, best first.`;
    } else if (results.length) found = `${count} “${q}”${among}, best first.`;
    setStatus(status, `${found} ${RANKED_BY[mode] ?? ""}${orgMissing({ unavailable })}`.trim());
    if (floored) {
      const more = el("button", {
        cls: "quiet", text: "Show weaker matches", attrs: { type: "button", id: "search-weaker" },
      });
      more.addEventListener("click", (again) => search(again, { weaker: true }));
      status.append(" ", more);
    }
  } catch (problem) {
    list.replaceChildren(); // stale cards under an error would read as results
    report(problem, status, () => search(event, { weaker }));
  } finally {
    list.removeAttribute("aria-busy");
  }
}

/** A memory's card with its actions wired (a search result keeps its score). */
function cardFor(memory, score) {
  const shown = typeof score === "number" ? { ...memory, score } : memory;
  return memoryCard(shown, { onDelete: deleteMemory, onEdit: editMemory, onHistory: showHistory });
}

/** Swap a card for the memory's new state (after an edit or a restore). */
function replaceCard(item, memory, score) {
  const fresh = cardFor(memory, score);
  item.replaceWith(fresh);
  return fresh;
}

function editMemory(memory, item) {
  if (item.querySelector(".editor")) return;
  const editor = memoryEditor(memory);
  const actions = item.querySelector(".card-actions");
  actions.hidden = true;
  item.insertBefore(editor.form, actions);
  editor.content.focus();
  editor.cancel.addEventListener("click", () => {
    editor.form.remove();
    actions.hidden = false;
  });
  editor.save.addEventListener("click", async () => {
    const changes = editor.changes();
    if (!Object.keys(changes).length) {
      editor.form.remove();
      actions.hidden = false;
      return;
    }
    editor.save.disabled = true;
    editor.error.textContent = "";
    try {
      const answer = await api.patchMemory(memory.id, changes, memory.revision);
      if (answer.draft) {
        editor.form.remove();
        actions.hidden = false;
        toast("Edit saved for review: the memory changes once it is confirmed.");
        return;
      }
      replaceCard(item, answer.memory, memory.score).querySelector("button")?.focus();
      toast("Memory updated.");
    } catch (problem) {
      editor.save.disabled = false;
      if (problem instanceof ApiProblem && problem.code === "revision_conflict") {
        editor.error.textContent =
          `This memory changed since you opened it (it is at revision ${problem.revision} now). ` +
          "Reload the list to see what it says, then edit again.";
        return;
      }
      if (problem instanceof ApiProblem && problem.status === 401) report(problem, editor.error);
      else editor.error.textContent = problem.detail || String(problem);
    }
  });
}

async function showHistory(memory, item) {
  const open = item.querySelector(".history");
  if (open) {
    open.remove();
    return;
  }
  const status = el("p", { cls: "status", text: "Loading history…", attrs: { role: "status" } });
  item.append(status);
  try {
    const { revisions } = await api.revisions(memory.id);
    status.replaceWith(historyList(memory, revisions, {
      onRestore: async (rev) => {
        try {
          const { memory: restored } = await api.restoreRevision(memory.id, rev.revision, memory.revision);
          const fresh = replaceCard(item, restored, memory.score);
          toast(`Revision ${rev.revision} restored.`);
          showHistory(restored, fresh);
        } catch (problem) {
          const note = item.querySelector(".history") || item;
          const error = el("p", { cls: "error", attrs: { role: "alert" } });
          error.textContent = problem instanceof ApiProblem && problem.code === "revision_conflict"
            ? "This memory changed since you opened its history. Reload the list, then try again."
            : problem.detail || String(problem);
          note.append(error);
        }
      },
    }));
  } catch (problem) {
    status.className = "error";
    status.setAttribute("role", "alert");
    status.textContent = problem.detail || String(problem);
  }
}

function deleteMemory(memory, item) {
  item.hidden = true;
  pending.start(memory.id, ({ undone, problem }) => {
    if (undone) {
      item.hidden = false;
      toast("Restored.");
      item.querySelector("button.danger")?.focus();
      return;
    }
    if (problem && problem.status !== 404) {
      item.hidden = false;
      if (problem.status === 401) report(problem, $("memories-status"));
      else toast(`Could not delete: ${problem.detail}`, { ms: 8000 });
      return;
    }
    item.remove();
    if ($("toast-undo").hidden === false && !pending.current) hideToast();
    if (!$("memory-list").querySelector("li:not([hidden])") && !view.query) {
      setStatus($("memories-status"), "No memories yet. What your agents save shows up here.");
    }
  });
  toast("Memory deleted.", { undo: true });
  $("toast-undo").focus();
}

// ---- review queue --------------------------------------------------------------------------

async function openReview() {
  show("review"); // a waiting delete keeps its undo window: the list stays behind this tab
  await loadDrafts(true);
}

async function loadDrafts(reset) {
  const list = $("draft-list");
  const status = $("review-status");
  if (reset) view.draftsCursor = null;
  list.setAttribute("aria-busy", "true");
  setStatus(status, "Loading drafts…");
  try {
    const page = await api.listDrafts(reset ? null : view.draftsCursor);
    if (reset) list.replaceChildren();
    // A draft of an edit is shown against the memory as it is now.
    const current = await Promise.all(page.drafts.map((d) => (
      d.memory_id ? api.getMemory(d.memory_id).then((r) => r.memory, () => null) : null
    )));
    page.drafts.forEach((draft, i) => {
      list.append(draftCard(draft, { onConfirm: confirmDraft, onReject: rejectDraft }, current[i]));
    });
    view.draftsCursor = page.next_cursor;
    $("more-drafts").hidden = !page.next_cursor;
    updateCount(list.children.length, Boolean(page.next_cursor));
    setStatus(status, list.children.length ? "" : "Nothing waits for review.");
  } catch (problem) {
    if (problem instanceof ApiProblem && problem.code === "insufficient_scope") {
      setStatus(status, "This key cannot review drafts: it lacks the memory:review scope.", { error: true });
      return;
    }
    if (reset) list.replaceChildren();
    report(problem, status, () => loadDrafts(reset));
  } finally {
    list.removeAttribute("aria-busy");
  }
}

async function refreshReviewCount() {
  try {
    const page = await api.listDrafts(null);
    updateCount(page.drafts.length, Boolean(page.next_cursor));
  } catch {
    updateCount(0, false); // keys without memory:review simply show no count
  }
}

function updateCount(count, more) {
  const badge = $("review-count");
  badge.hidden = count === 0;
  badge.textContent = more ? `${count}+` : String(count);
  badge.setAttribute("aria-label", `${badge.textContent} waiting`);
}

function afterDraft(item, message) {
  const next = item.nextElementSibling || item.previousElementSibling;
  item.remove();
  const left = $("draft-list").children.length;
  updateCount(left, Boolean(view.draftsCursor));
  if (!left) setStatus($("review-status"), "Nothing waits for review.");
  toast(message);
  (next?.querySelector("textarea") || $("tab-review")).focus();
}

async function confirmDraft(draft, edits, item, error) {
  for (const b of item.querySelectorAll("button")) b.disabled = true;
  error.textContent = "";
  try {
    await api.confirmDraft(draft.id, Object.keys(edits).length ? edits : undefined);
    view.memoriesStale = true;
    afterDraft(item, draft.memory_id ? "Confirmed: the memory is updated." : "Confirmed: it is now a memory.");
  } catch (problem) {
    draftProblem(problem, item, error);
  }
}

async function rejectDraft(draft, item, error) {
  for (const b of item.querySelectorAll("button")) b.disabled = true;
  error.textContent = "";
  try {
    await api.rejectDraft(draft.id);
    afterDraft(item, "Rejected: the draft was discarded.");
  } catch (problem) {
    draftProblem(problem, item, error);
  }
}

function draftProblem(problem, item, error) {
  if (problem instanceof ApiProblem && problem.status === 404) {
    afterDraft(item, "That draft is gone: confirmed elsewhere, rejected or expired.");
    return;
  }
  for (const b of item.querySelectorAll("button")) b.disabled = false;
  if (problem instanceof ApiProblem && problem.status === 401) {
    report(problem, error);
    return;
  }
  error.textContent = problem.detail || String(problem);
}

// ---- copy prompt ---------------------------------------------------------------------------

async function copyPrompt() {
  const button = $("copy-prompt");
  let text;
  try {
    text = await api.prompt();
  } catch (problem) {
    if (problem instanceof ApiProblem && problem.status === 404) {
      toast("This server does not serve the Memory Bank prompt yet (GET /v1/memory/prompt).", { ms: 8000 });
    } else if (problem instanceof ApiProblem && problem.status === 401) {
      report(problem, $("memories-status"));
    } else {
      toast(`Could not fetch the prompt: ${problem.detail}`, { ms: 8000 });
    }
    return;
  }
  button.dataset.copiedChars = String(text.length);
  try {
    await navigator.clipboard.writeText(text);
    toast("Prompt copied. Paste it into your agent's instructions.");
  } catch {
    // No clipboard permission (e.g. plain http on another host): let the person copy by hand.
    $("prompt-text").value = text;
    $("prompt-dialog").showModal();
    $("prompt-text").select();
  }
}

// ---- wiring --------------------------------------------------------------------------------

function wire() {
  $("signin-form").addEventListener("submit", signInWithKey);
  $("search-form").addEventListener("submit", search);
  $("search-clear").addEventListener("click", () => {
    $("search-input").value = "";
    loadMemories(true);
    $("search-input").focus();
  });
  $("more").addEventListener("click", () => loadMemories(false));
  // A new filter reruns what is shown: the search, or the list from its first page.
  const rerun = (event) => {
    event.preventDefault();
    $("filter-clear").hidden = !narrowed(narrowFilter());
    if ($("search-input").value.trim()) search(event);
    else loadMemories(true);
  };
  $("scope-filter").addEventListener("change", rerun);
  $("filter-form").addEventListener("submit", rerun);
  for (const id of ["filter-from", "filter-until"]) $(id).addEventListener("change", rerun);
  $("filter-clear").addEventListener("click", (event) => {
    $("filter-form").reset();
    rerun(event);
  });
  $("more-drafts").addEventListener("click", () => loadDrafts(false));
  $("tab-memories").addEventListener("click", () => openMemories(false));
  $("tab-review").addEventListener("click", openReview);
  $("sign-out").addEventListener("click", () => signOut("Signed out."));
  $("copy-prompt").addEventListener("click", copyPrompt);
  $("toast-undo").addEventListener("click", () => {
    if (!pending.undo()) hideToast();
  });
  // Leaving the page closes the undo window: send the waiting delete so it is not lost.
  window.addEventListener("pagehide", () => pending.flush(true));
  window.addEventListener("beforeunload", () => pending.flush(true));
}

function linkCode() {
  return new URLSearchParams(location.hash.slice(1)).get("signin");
}

function boot() {
  wire();
  // A sign-in link pasted into a tab that already shows the panel only changes the fragment.
  window.addEventListener("hashchange", () => {
    const code = linkCode();
    if (code) signInWithLink(code);
  });
  const code = linkCode();
  if (code) {
    signInWithLink(code);
  } else if (storedKey()) {
    enter();
  } else {
    signOut("");
  }
}

boot();
