// The dev chat page: conversations over the REST routes, turns over the native SSE stream
// (POST …/messages/stream, read with fetch + ReadableStream), files attached with the presigned S3
// POST the attachments route hands out. No framework, no build step.
"use strict";

const API = "/api/v1";
const state = { conversationId: null, busy: false, attachments: [] };
const $ = (selector) => document.querySelector(selector);

// ---------------------------------------------------------------- HTTP

function callerHeaders(json) {
  const headers = { "X-Caller-Id": $("#caller-id").value.trim() };
  const roles = $("#caller-roles").value.trim();
  if (roles) headers["X-Caller-Roles"] = roles;
  // The dev stand-in for the token's claims: pinned tool parameters (the demo tools' accountId) come from them.
  const claims = $("#caller-claims").value.trim();
  if (claims) headers["X-Caller-Claims"] = claims;
  if (json) headers["Content-Type"] = "application/json";
  return headers;
}

async function failure(response) {
  try {
    const body = await response.json();
    return new Error(`${response.status} ${body.error}: ${body.message}`);
  } catch {
    return new Error(`HTTP ${response.status}`);
  }
}

async function api(method, path, body) {
  const response = await fetch(API + path, {
    method,
    headers: callerHeaders(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? null : response.json();
}

// Server-sent events from a fetch body: blocks split on a blank line, `event:` / `id:` / `data:` fields.
async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart());
      if (data.length) yield JSON.parse(data.join("\n"));
    }
  }
}

// ---------------------------------------------------------------- DOM helpers

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function showError(message) {
  const box = $("#composer-error");
  box.textContent = message;
  box.hidden = !message;
}

function scrollDown() {
  const transcript = $("#transcript");
  transcript.scrollTop = transcript.scrollHeight;
}

function pretty(value) {
  if (typeof value !== "string") return JSON.stringify(value, null, 2);
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

// ---------------------------------------------------------------- conversations

// The list is replaced at once when the page arrives: never empty while it loads.
async function loadConversations() {
  const page = await api("GET", "/chat/conversations?limit=50");
  const items = page.items.map((c) => {
    const item = el("li", c.conversationId === state.conversationId ? "active" : "");
    item.append(el("span", "id", c.conversationId.slice(0, 8)), el("span", "muted", ` ${c.messageCount} msgs`));
    item.title = c.conversationId;
    item.addEventListener("click", () => openConversation(c.conversationId).catch((e) => showError(e.message)));
    return item;
  });
  $("#conversations").replaceChildren(...items);
}

async function loadTools() {
  const list = $("#tools");
  list.replaceChildren();
  const { tools } = await api("GET", "/agent/tools");
  for (const t of tools) {
    const item = el("li");
    item.append(el("span", "name", t.name));
    item.title = t.description;
    if (t.preview) item.append(el("span", "badge", t.preview));
    list.append(item);
  }
}

async function newConversation() {
  const created = await api("POST", "/chat/conversations", {});
  await openConversation(created.conversationId);
}

async function openConversation(id) {
  state.conversationId = id;
  clearAttachments();
  $("#conversation-title").textContent = `Conversation ${id}`;
  $("#send").disabled = false;
  $("#attach").disabled = false;
  const transcript = $("#transcript");
  transcript.replaceChildren();
  const page = await api("GET", `/chat/conversations/${id}/messages?limit=100`);
  for (const m of page.items) renderStored(m);
  await loadConversations();
  scrollDown();
}

function renderStored(message) {
  if (message.role === "user") {
    const ids = message.attachmentIds ?? [];
    const files = ids.length ? `${ids.length} file${ids.length > 1 ? "s" : ""}` : "";
    $("#transcript").append(userBubble(message.content, files, ids.join("\n")));
  } else if (message.role === "assistant" && message.toolCalls?.length) {
    for (const call of message.toolCalls) {
      $("#transcript").append(el("div", "stored-tool muted", `⚙ ${call.function.name} ${call.function.arguments}`));
    }
  } else if (message.role === "assistant") {
    $("#transcript").append(el("div", "bubble assistant", message.content));
  }
}

// ---------------------------------------------------------------- a streamed turn

function turnView() {
  const root = el("div", "turn");
  const view = {
    root,
    status: el("div", "status muted"),
    tools: el("div", "tools"),
    previews: el("div", "previews"),
    answer: el("div", "bubble assistant answer"),
    sources: el("ol", "sources"),
    footer: el("div", "turn-footer muted"),
    cards: new Map(),
  };
  root.append(view.status, view.tools, view.previews, view.answer, view.sources, view.footer);
  $("#transcript").append(root);
  return view;
}

function renderPreview(type, payload) {
  const card = el("div", "preview-card");
  card.append(el("div", "preview-title", type.replace(/_/g, " ")));
  const steps = payload?.steps ?? payload?.columns;
  if (Array.isArray(steps)) {
    const list = el("ol");
    for (const step of steps) list.append(el("li", step === payload.added ? "added" : "", String(step)));
    card.append(list);
  } else {
    card.append(el("pre", "", pretty(payload)));
  }
  return card;
}

// A held tool call: the decision streams the turn's continuation below it (docs/approvals.md).
function renderApproval(e) {
  const card = el("div", "approval-card");
  card.append(el("div", "preview-title", `approve ${e.toolName}?`), el("pre", "arguments", pretty(e.arguments)));
  const reason = el("input");
  reason.placeholder = "reason (optional)";
  const approve = el("button", "", "Approve");
  const deny = el("button", "", "Deny");
  const decide = (decision) => {
    approve.disabled = deny.disabled = reason.disabled = true;
    const body = { decision };
    if (reason.value.trim()) body.reason = reason.value.trim();
    const url = `${API}/chat/conversations/${e.conversationId}/approvals/${e.approvalId}`;
    streamTurn(url, body).catch((error) => showError(error.message));
  };
  approve.addEventListener("click", () => decide("approve"));
  deny.addEventListener("click", () => decide("deny"));
  card.append(reason, approve, deny, el("div", "caption muted", `expires ${e.expiresAt}`));
  return card;
}

// One handler per native event type.
const EVENT_HANDLERS = {
  StatusUpdate(view, e) {
    view.status.textContent = e.details ? `${e.status} (${e.details})` : e.status;
  },
  ToolCallStart(view, e) {
    const card = el("details", "tool-card running");
    const summary = el("summary", "", `⚙ ${e.toolName}`);
    card.append(summary, el("div", "caption muted", "arguments"), el("pre", "arguments", pretty(e.arguments)));
    view.cards.set(e.toolCallId, card);
    view.tools.append(card);
  },
  ToolCallResult(view, e) {
    const card = view.cards.get(e.toolCallId);
    if (!card) return;
    card.classList.remove("running");
    card.classList.add(e.success ? "ok" : "failed");
    card.querySelector("summary").textContent = `${e.success ? "✓" : "✗"} ${e.toolName}`;
    card.append(el("div", "caption muted", "result"), el("pre", "result", pretty(e.result)));
  },
  Preview(view, e) {
    view.previews.append(renderPreview(e.previewType, e.payload));
  },
  ApprovalRequested(view, e) {
    view.previews.append(renderApproval(e));
  },
  ResponseChunk(view, e) {
    view.answer.textContent += e.content;
  },
  Sources(view, e) {
    for (const s of e.sources) {
      const item = el("li", "", `${s.title || s.documentId} `);
      item.append(el("span", "muted", `${s.documentId}#${s.chunkIndex}`));
      item.title = s.snippet || "";
      view.sources.append(item);
    }
  },
  Completed(view, e) {
    view.status.textContent = "";
    const ended = e.finishReason === "stop" ? `message ${e.messageId}` : e.finishReason.replace(/_/g, " ");
    view.footer.textContent = `${e.iterationsUsed} model call(s) · ${e.tokensUsed} tokens · ${ended}`;
  },
  Error(view, e) {
    view.status.textContent = "";
    view.root.append(el("div", "error", e.error));
  },
};

function handleEvent(view, event) {
  const handler = EVENT_HANDLERS[event.type];
  if (handler) handler(view, event);
  else view.root.append(el("pre", "muted", `${event.type}: ${pretty(event)}`));
  scrollDown();
}

function userBubble(message, attached, title) {
  const bubble = el("div", "bubble user", message);
  if (attached) {
    const line = el("div", "attached", `Attached: ${attached}`);
    line.title = title;
    bubble.append(line);
  }
  return bubble;
}

function turnBody(message, attachmentIds) {
  const body = { message };
  const contextType = $("#context-type").value.trim();
  const context = $("#context").value.trim();
  if (contextType) body.contextType = contextType;
  if (context) body.context = JSON.parse(context);
  if (attachmentIds.length) body.attachmentIds = attachmentIds;
  return body;
}

async function sendMessage(message) {
  await Promise.all(state.attachments.map((a) => a.uploaded));
  const attached = state.attachments.filter((a) => a.status !== "FAILED");
  const body = turnBody(message, attached.map((a) => a.attachmentId));
  const names = attached.map((a) => a.fileName).join(", ");
  $("#transcript").append(userBubble(message, names, names));
  await streamTurn(`${API}/chat/conversations/${state.conversationId}/messages/stream`, body);
}

async function streamTurn(url, body) {
  const view = turnView();
  view.status.textContent = "Sending…";
  const response = await fetch(url, {
    method: "POST",
    headers: { ...callerHeaders(true), Accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    view.status.textContent = "";
    throw await failure(response);
  }
  clearAttachments(); // the turn has them; the next message starts with none
  for await (const event of readEvents(response.body)) handleEvent(view, event);
}

// ---------------------------------------------------------------- attachments
// A picked file is declared (POST …/attachments), then uploaded straight to S3 with the presigned
// POST that returns (its fields, then the file) — never through the API. The next message names it
// in `attachmentIds`. Under make dev S3 announces the upload and the app reads it at once; a turn
// reads one not read yet itself, with a StatusUpdate.

// Browsers leave File.type empty for some of the allowed types.
const TYPES_BY_EXTENSION = {
  md: "text/markdown",
  markdown: "text/markdown",
  txt: "text/plain",
  wav: "audio/wav",
  m4a: "audio/x-m4a",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
};
const SETTLED = new Set(["READY", "FAILED"]);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function contentType(file) {
  return file.type || TYPES_BY_EXTENSION[file.name.split(".").pop().toLowerCase()] || "application/octet-stream";
}

function showAttachment(item, status, detail) {
  item.status = status;
  const modalities = [...new Set((item.segments ?? []).map((s) => s.modality))].join(", ");
  const label = {
    declaring: "declaring…",
    uploading: "uploading…",
    PENDING_UPLOAD: "uploaded",
    PROCESSING: "reading…",
    READY: modalities ? `ready · ${modalities}` : "ready · no text",
    FAILED: "failed",
  }[status];
  item.chip.dataset.status = status;
  item.chip.querySelector(".state").textContent = label;
  item.chip.title = detail || "";
}

function attachmentChip(item) {
  const chip = el("li", "attachment");
  const remove = el("button", "remove", "✕");
  remove.type = "button";
  remove.title = "Do not send this file";
  remove.addEventListener("click", () => dropAttachment(item));
  chip.append(el("span", "name", item.fileName), el("span", "state muted"), remove);
  return chip;
}

function dropAttachment(item) {
  state.attachments = state.attachments.filter((a) => a !== item);
  item.chip.remove();
}

function clearAttachments() {
  state.attachments = [];
  $("#attachments").replaceChildren();
}

async function upload(item, file, conversationId) {
  const declared = { fileName: file.name, contentType: contentType(file), sizeBytes: file.size };
  const created = await api("POST", `/chat/conversations/${conversationId}/attachments`, declared);
  item.attachmentId = created.attachmentId;
  showAttachment(item, "uploading");
  const form = new FormData();
  for (const [name, value] of Object.entries(created.upload.fields)) form.append(name, value);
  form.append("file", file); // last: S3 ignores the fields after it
  const sent = await fetch(created.upload.url, { method: "POST", body: form });
  if (!sent.ok) throw new Error(`S3 refused the upload (HTTP ${sent.status})`);
  showAttachment(item, created.status);
}

// Its status until it is read (or for half a minute: without S3 events a turn reads it).
async function follow(item, conversationId) {
  for (let i = 0; i < 30 && state.attachments.includes(item) && !SETTLED.has(item.status); i++) {
    await sleep(1000);
    const path = `/chat/conversations/${conversationId}/attachments/${item.attachmentId}`;
    const seen = await api("GET", path);
    if (!state.attachments.includes(item)) return;
    item.segments = seen.segments;
    showAttachment(item, seen.status, seen.detail);
  }
}

function attach(file) {
  const conversationId = state.conversationId;
  const item = { fileName: file.name, attachmentId: null, status: "declaring" };
  item.chip = attachmentChip(item);
  showAttachment(item, "declaring");
  state.attachments.push(item);
  $("#attachments").append(item.chip);
  item.uploaded = upload(item, file, conversationId).catch((e) => {
    dropAttachment(item);
    showError(`${file.name}: ${e.message}`);
  });
  item.uploaded.then(() => item.attachmentId && follow(item, conversationId)).catch(() => {});
}

function pickFiles(event) {
  showError("");
  for (const file of event.target.files) attach(file);
  event.target.value = ""; // the same file may be picked again
}

// ---------------------------------------------------------------- wiring

async function refresh() {
  localStorage.setItem("callerId", $("#caller-id").value.trim());
  localStorage.setItem("callerRoles", $("#caller-roles").value.trim());
  localStorage.setItem("callerClaims", $("#caller-claims").value.trim());
  state.conversationId = null;
  $("#transcript").replaceChildren();
  $("#send").disabled = true;
  $("#attach").disabled = true;
  clearAttachments();
  $("#conversation-title").textContent = "Pick or create a conversation.";
  showError("");
  await Promise.all([loadConversations(), loadTools()]);
}

async function submit(event) {
  event.preventDefault();
  const message = $("#message").value.trim();
  if (!message || state.busy || !state.conversationId) return;
  state.busy = true;
  $("#send").disabled = true;
  showError("");
  try {
    $("#message").value = "";
    await sendMessage(message);
    await loadConversations();
  } catch (e) {
    showError(e.message);
  } finally {
    state.busy = false;
    $("#send").disabled = false;
  }
}

async function checkHealth() {
  const badge = $("#health");
  try {
    const response = await fetch(`${API}/agent/health`);
    const body = await response.json();
    badge.textContent = body.status;
    badge.className = `badge ${response.ok ? "ok" : "failed"}`;
  } catch {
    badge.textContent = "down";
    badge.className = "badge failed";
  }
}

function start() {
  $("#caller-id").value = localStorage.getItem("callerId") || "alice";
  $("#caller-roles").value = localStorage.getItem("callerRoles") || "";
  // alice's account in the demo tool API (devserver/demo_tools.py), until the field is changed
  $("#caller-claims").value = localStorage.getItem("callerClaims") ?? '{"accountId": "acct-1001"}';
  $("#caller-claims").addEventListener("change", () => refresh().catch((e) => showError(e.message)));
  $("#caller-id").addEventListener("change", () => refresh().catch((e) => showError(e.message)));
  $("#caller-roles").addEventListener("change", () => refresh().catch((e) => showError(e.message)));
  $("#new-conversation").addEventListener("click", () => newConversation().catch((e) => showError(e.message)));
  $("#composer").addEventListener("submit", submit);
  $("#attachment-file").addEventListener("change", pickFiles);
  $("#attach").addEventListener("click", () => $("#attachment-file").click());
  $("#message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) submit(e);
  });
  checkHealth();
  refresh().catch((e) => showError(e.message));
}

start();
