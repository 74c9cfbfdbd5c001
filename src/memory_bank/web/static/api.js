// Talking to the memory-bank API: the key goes in the Authorization header, never in a URL.

const KEY_SLOT = "memory-bank.key";

/** A failed request, carrying the problem document's status, code and detail. */
export class ApiProblem extends Error {
  constructor(status, code, detail) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

/** The key kept for this tab (sessionStorage: gone when the tab closes). */
export function storedKey() {
  return sessionStorage.getItem(KEY_SLOT);
}

export function storeKey(key) {
  sessionStorage.setItem(KEY_SLOT, key);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_SLOT);
}

/** Send one request; JSON (or text) on success, ApiProblem on an error status or no network. */
export async function request(
  method,
  path,
  { body, accept = "application/json", keepalive = false, ifMatch, contentType = "application/json" } = {},
) {
  const headers = { Accept: `${accept}, application/problem+json` };
  const key = storedKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (ifMatch) headers["If-Match"] = ifMatch;
  const init = { method, headers, keepalive, cache: "no-store", credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = contentType;
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiProblem(0, "network_error", "Cannot reach the server. Check that it is running, then retry.");
  }
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  if (!response.ok) {
    let detail = `The server answered ${response.status}.`;
    let code = "error";
    let revision = null;
    if (type.includes("json")) {
      try {
        const problem = await response.json();
        detail = problem.detail || detail;
        code = problem.code || code;
        revision = problem.revision ?? null;
      } catch {
        // A broken error body still leaves the status to go on.
      }
    }
    const problem = new ApiProblem(response.status, code, detail);
    problem.revision = revision;
    throw problem;
  }
  return type.includes("json") ? response.json() : response.text();
}

/** Query parameters for the filters: each tag repeated, the times as given (RFC 3339). */
function narrowing({ tags = [], createdAfter = "", createdBefore = "" } = {}) {
  const params = new URLSearchParams();
  for (const tag of tags) params.append("tag", tag);
  if (createdAfter) params.set("created_after", createdAfter);
  if (createdBefore) params.set("created_before", createdBefore);
  const text = params.toString();
  return text ? `&${text}` : "";
}

export const api = {
  listMemories: (cursor, scope = "all", filters = {}) =>
    request(
      "GET",
      `/v1/memory?limit=20&scope=${encodeURIComponent(scope)}${narrowing(filters)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    ),
  // minScore: the relevance floor (0: the nearest matches however weak); absent, the server's.
  search: (q, scope = "all", filters = {}, minScore = null) =>
    request(
      "GET",
      `/v1/memory/search?limit=50&scope=${encodeURIComponent(scope)}${narrowing(filters)}${minScore === null ? "" : `&min_score=${minScore}`}&q=${encodeURIComponent(q)}`,
    ),
  deleteMemory: (id, keepalive = false) =>
    request("DELETE", `/v1/memory/${encodeURIComponent(id)}`, { keepalive }),
  getMemory: (id) => request("GET", `/v1/memory/${encodeURIComponent(id)}`),
  // The revision the person read goes as If-Match: a memory changed meanwhile is a 412.
  patchMemory: (id, changes, revision) =>
    request("PATCH", `/v1/memory/${encodeURIComponent(id)}`, {
      body: changes,
      contentType: "application/merge-patch+json",
      ifMatch: `"${revision}"`,
    }),
  revisions: (id) => request("GET", `/v1/memory/${encodeURIComponent(id)}/revisions?limit=100`),
  restoreRevision: (id, number, revision) =>
    request("POST", `/v1/memory/${encodeURIComponent(id)}/revisions/${number}/restore`, {
      ifMatch: `"${revision}"`,
    }),
  listDrafts: (cursor) =>
    request("GET", `/v1/memory/drafts?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`),
  confirmDraft: (id, edits) =>
    request("POST", `/v1/memory/drafts/${encodeURIComponent(id)}/confirm`, { body: edits }),
  rejectDraft: (id) => request("POST", `/v1/memory/drafts/${encodeURIComponent(id)}/reject`),
  prompt: () => request("GET", "/v1/memory/prompt", { accept: "text/markdown" }),
  signIn: (code) => request("POST", "/v1/panel/session", { body: { code } }),
};
