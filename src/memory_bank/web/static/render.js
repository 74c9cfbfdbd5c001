// DOM builders. Everything a user or agent stored goes in through textContent, never as HTML.

/** An element with optional class, text and attributes, and child nodes. */
export function el(tag, { cls, text, attrs } = {}, children = []) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  for (const child of children) if (child) node.append(child);
  return node;
}

/** A <time> showing local time, with the exact UTC value as its machine value and tooltip. */
export function when(iso, label) {
  const date = new Date(iso);
  const shown = Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
  return el("span", { cls: "when" }, [
    `${label} `,
    el("time", { text: shown, attrs: { datetime: iso, title: iso } }),
  ]);
}

/** A short, plain-text stand-in for a long content, for button labels. */
export function gist(text, size = 48) {
  const flat = String(text).replace(/\s+/g, " ").trim();
  return flat.length > size ? `${flat.slice(0, size - 1)}…` : flat;
}

function tagList(tags) {
  if (!tags.length) return null;
  return el("ul", { cls: "tags", attrs: { "aria-label": "Tags" } },
    tags.map((tag) => el("li", { cls: "tag", text: tag })));
}

function contextList(contexts) {
  if (!contexts.length) return null;
  const items = contexts.map((ctx) => {
    const facts = [];
    if (ctx.citation) {
      const parts = [];
      if (ctx.citation.conversation_id) parts.push(`conversation ${ctx.citation.conversation_id}`);
      if (ctx.citation.message_id) parts.push(`message ${ctx.citation.message_id}`);
      facts.push(el("span", { cls: "cite", text: `Cited: ${parts.join(", ")}` }));
    }
    if (ctx.origin) facts.push(el("span", { cls: "origin", text: ctx.origin.replace(/_/g, " ") }));
    return el("li", { cls: "context" }, [
      el("blockquote", { text: ctx.snippet }),
      facts.length ? el("p", { cls: "meta" }, facts) : null,
    ]);
  });
  const label = contexts.length === 1 ? "1 context" : `${contexts.length} contexts`;
  return el("details", { cls: "contexts" }, [
    el("summary", { text: label }),
    el("ul", {}, items),
  ]);
}

/** A shared (org) memory or draft says so, and who saved it; a personal one shows nothing. */
function sharedBadge(item) {
  if (item.scope !== "org") return null;
  return el("p", { cls: "badge", text: `Organisation · saved by ${item.created_by}` });
}

/** One memory as a list item; `score` is shown for search results. */
export function memoryCard(memory, { onDelete, onEdit, onHistory }) {
  const meta = [
    el("span", { cls: "source", text: `from ${memory.source}` }),
    when(memory.created_at, "saved"),
  ];
  if (memory.updated_at !== memory.created_at) meta.push(when(memory.updated_at, "updated"));
  if (typeof memory.score === "number") {
    meta.unshift(el("span", { cls: "score", text: `score ${memory.score.toFixed(3)}` }));
  }
  const remove = el("button", {
    cls: "danger",
    text: "Delete",
    attrs: { type: "button", "aria-label": `Delete memory: ${gist(memory.content)}` },
  });
  remove.addEventListener("click", () => onDelete(memory, item));
  const edit = el("button", {
    text: "Edit",
    attrs: { type: "button", "aria-label": `Edit memory: ${gist(memory.content)}` },
  });
  edit.addEventListener("click", () => onEdit(memory, item));
  const history = el("button", {
    text: memory.revision > 1 ? `History (${memory.revision})` : "History",
    attrs: { type: "button", "aria-label": `History of memory: ${gist(memory.content)}` },
  });
  history.addEventListener("click", () => onHistory(memory, item));
  const item = el("li", { cls: `card memory${memory.scope === "org" ? " shared" : ""}`, attrs: { "data-id": memory.id, "data-revision": String(memory.revision) } }, [
    sharedBadge(memory),
    el("p", { cls: "content", text: memory.content }),
    tagList(memory.tags),
    el("p", { cls: "meta" }, meta),
    contextList(memory.contexts),
    el("div", { cls: "card-actions" }, [edit, history, remove]),
  ]);
  return item;
}

/** The inline editor of a memory: content and tags, save and cancel, and where errors show. */
export function memoryEditor(memory) {
  const contentId = `edit-${memory.id}`;
  const tagsId = `edit-tags-${memory.id}`;
  const content = el("textarea", { attrs: { id: contentId, rows: "3", maxlength: "8000" } });
  content.value = memory.content;
  const tags = el("input", { attrs: { id: tagsId, type: "text" } });
  tags.value = memory.tags.join(", ");
  const save = el("button", { text: "Save", attrs: { type: "button" } });
  const cancel = el("button", { text: "Cancel", attrs: { type: "button" } });
  const error = el("p", { cls: "error", attrs: { role: "alert" } });
  const form = el("div", { cls: "editor" }, [
    el("label", { text: "Memory", attrs: { for: contentId } }),
    content,
    el("label", { text: "Tags (separate with commas)", attrs: { for: tagsId } }),
    tags,
    error,
    el("div", { cls: "card-actions" }, [save, cancel]),
  ]);
  const changes = () => {
    const changed = {};
    if (content.value.trim() !== memory.content) changed.content = content.value;
    const newTags = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
    if (newTags.join("\u0000") !== memory.tags.join("\u0000")) changed.tags = newTags;
    return changed;
  };
  return { form, content, save, cancel, error, changes };
}

/** A memory's revisions, newest first, each but the current one with a Restore button. */
export function historyList(memory, revisions, { onRestore }) {
  const items = revisions.map((rev) => {
    const current = rev.revision === memory.revision;
    const facts = [
      el("span", { text: `Revision ${rev.revision}${current ? " (current)" : ""}` }),
      el("span", { cls: "source", text: `from ${rev.source}` }),
      when(rev.edited_at, "at"),
    ];
    const actions = [];
    if (!current) {
      const restore = el("button", {
        text: "Restore",
        attrs: { type: "button", "aria-label": `Restore revision ${rev.revision}` },
      });
      restore.addEventListener("click", () => onRestore(rev));
      actions.push(restore);
    }
    return el("li", { cls: "revision", attrs: { "data-revision": String(rev.revision) } }, [
      el("p", { cls: "meta" }, facts),
      el("p", { cls: "content", text: rev.content }),
      tagList(rev.tags),
      actions.length ? el("div", { cls: "card-actions" }, actions) : null,
    ]);
  });
  return el("section", { cls: "history", attrs: { "aria-label": "History" } }, [
    el("ol", { cls: "revisions" }, items),
  ]);
}

/** One draft with editable content and tags, and confirm / reject buttons. */
export function draftCard(draft, { onConfirm, onReject }, current = null) {
  const contentId = `content-${draft.id}`;
  const tagsId = `tags-${draft.id}`;
  const content = el("textarea", { attrs: { id: contentId, rows: "3", maxlength: "8000" } });
  content.value = draft.content;
  const tags = el("input", {
    attrs: { id: tagsId, type: "text", "aria-describedby": `${tagsId}-hint` },
  });
  tags.value = draft.tags.join(", ");
  const confirm = el("button", { text: "Confirm", attrs: { type: "button" } });
  const reject = el("button", { cls: "danger", text: "Reject", attrs: { type: "button" } });
  const error = el("p", { cls: "error", attrs: { role: "alert" } });
  // A draft of an edit shows what the memory says now, above what the edit would make it.
  const before = draft.memory_id
    ? el("div", { cls: "was" }, [
      el("p", { cls: "hint", text: `Edit of a memory (revision ${draft.base_revision}). It says now:` }),
      el("p", { cls: "content", text: current ? current.content : "(that memory is gone)" }),
      current ? tagList(current.tags) : null,
    ])
    : null;
  const item = el("li", { cls: "card draft", attrs: { "data-id": draft.id } }, [
    sharedBadge(draft),
    before,
    el("label", { text: draft.memory_id ? "Proposed edit" : "Draft", attrs: { for: contentId } }),
    content,
    el("label", { text: "Tags", attrs: { for: tagsId } }),
    tags,
    el("p", { cls: "hint", text: "Separate tags with commas.", attrs: { id: `${tagsId}-hint` } }),
    el("p", { cls: "meta" }, [
      el("span", { cls: "source", text: `from ${draft.source}` }),
      when(draft.created_at, "saved"),
      when(draft.expires_at, "expires"),
    ]),
    contextList(draft.contexts),
    error,
    el("div", { cls: "card-actions" }, [confirm, reject]),
  ]);
  const edits = () => {
    const changed = {};
    if (content.value.trim() !== draft.content) changed.content = content.value;
    const newTags = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
    if (newTags.join("\u0000") !== draft.tags.join("\u0000")) changed.tags = newTags;
    return changed;
  };
  confirm.addEventListener("click", () => onConfirm(draft, edits(), item, error));
  reject.addEventListener("click", () => onReject(draft, item, error));
  return item;
}
