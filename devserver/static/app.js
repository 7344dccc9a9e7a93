// The dev chat page, a reference client of the API: conversations (titles, search, rename, delete —
// conversations.js), temporary chats and the memory list with forget (memory.js), turns over the native SSE stream with stop, regenerate, edit and feedback
// (turn.js), approvals, attachments (presigned S3 POST, attachments.js), usage, tools and health
// (panels.js), and a reload that resumes the turn still running. No framework, no build step,
// nothing loaded from elsewhere.
"use strict";

import { API, api, caller, streamEvents } from "./api.js";
import { attach, clearAttachments, takeAttachments } from "./attachments.js";
import { ConversationList } from "./conversations.js";
import { MemoryPanel } from "./memory.js";
import { checkHealth, loadTools, loadUsage } from "./panels.js";
import { TurnView, button, el } from "./turn.js";

const state = { conversationId: null, running: null };
const $ = (selector) => document.querySelector(selector);
const RUNNING = "runningTurn"; // localStorage: the turn a reload resumes

export function showError(message) {
  const box = $("#composer-error");
  box.textContent = message;
  box.hidden = !message;
}

const report = (e) => showError(e.message);

function scrollDown() {
  const transcript = $("#transcript");
  transcript.scrollTop = transcript.scrollHeight;
}

// ---------------------------------------------------------------- conversations

const conversations = new ConversationList($("#conversations"), $("#search"), {
  current: () => state.conversationId,
  open: (id) => openConversation(id).catch(report),
  renamed: (id) => id === state.conversationId && showTitle(),
  deleted: (id) => {
    if (id === state.conversationId) closeConversation();
    memory.load().catch(report); // a deleted conversation's fragments went with it
  },
  report,
});

const memory = new MemoryPanel($("#memory-panel"), $("#memory-search"), { report });

function showTitle() {
  const title = state.conversationId ? conversations.title(state.conversationId) || "Untitled" : "Pick or start a conversation.";
  $("#conversation-title").textContent = title;
  $("#temporary-badge").hidden = !state.conversationId || !conversations.temporary(state.conversationId);
}

function closeConversation() {
  state.conversationId = null;
  $("#transcript").replaceChildren();
  $("#send").disabled = true;
  $("#attach").disabled = true;
  clearAttachments();
  showTitle();
}

// A temporary chat is created with "memory": false: nothing of it is remembered, nothing recalled into it.
async function newConversation(temporary) {
  const created = await api("POST", "/chat/conversations", temporary ? { memory: false } : {});
  await conversations.load();
  await openConversation(created.conversationId);
}

async function openConversation(id) {
  state.conversationId = id;
  clearAttachments();
  document.body.classList.remove("menu-open");
  $("#send").disabled = false;
  $("#attach").disabled = false;
  $("#transcript").replaceChildren();
  const page = await api("GET", `/chat/conversations/${id}/messages?limit=100`);
  if (state.conversationId !== id) return page.items; // another was opened meanwhile
  for (const m of page.items) renderStored(m);
  conversations.markActive(id);
  showTitle();
  markLast();
  scrollDown();
  return page.items;
}

function renderStored(message) {
  if (message.role === "user") {
    const ids = message.attachmentIds ?? [];
    const files = ids.length ? `${ids.length} file${ids.length > 1 ? "s" : ""}` : "";
    $("#transcript").append(userBubble(message.content, files, message.messageId));
  } else if (message.role === "assistant" && message.toolCalls?.length) {
    for (const call of message.toolCalls) {
      $("#transcript").append(el("div", "stored-tool muted", `⚙ ${call.function.name} ${call.function.arguments}`));
    }
  } else if (message.role === "assistant") {
    $("#transcript").append(TurnView.stored(message, hooks).root);
  }
}

// Regenerate and edit act on the last exchange only: its question and answer carry `last`.
function markLast() {
  for (const node of document.querySelectorAll("#transcript .last")) node.classList.remove("last");
  const bubbles = document.querySelectorAll("#transcript .bubble.user");
  bubbles[bubbles.length - 1]?.classList.add("last");
  const turns = document.querySelectorAll("#transcript .turn");
  turns[turns.length - 1]?.classList.add("last");
}

// ---------------------------------------------------------------- turns

function userBubble(text, attached, messageId) {
  const bubble = el("div", "bubble user");
  bubble.append(el("div", "text", text));
  if (messageId) bubble.dataset.messageId = messageId;
  if (attached) bubble.append(el("div", "attached", `Attached: ${attached}`));
  bubble.append(button("✎ Edit", "edit", () => startEdit(bubble), "Edit and ask again"));
  return bubble;
}

const hooks = {
  decide(approval, decision, reason) {
    const body = reason ? { decision, reason } : { decision };
    const url = `${API}/chat/conversations/${approval.conversationId}/approvals/${approval.approvalId}`;
    runTurn(url, body).catch(report);
  },
  regenerate(view) {
    const after = [...$("#transcript").children];
    const start = after.lastIndexOf(document.querySelector("#transcript .bubble.user.last"));
    for (const node of after.slice(start + 1)) node.remove();
    const url = `${API}/chat/conversations/${state.conversationId}/messages/${view.messageId}/regenerate`;
    runTurn(url, {}).catch(report);
  },
  feedback(view, rating) {
    const path = `/chat/conversations/${state.conversationId}/messages/${view.messageId}/feedback`;
    const again = view.rating === rating; // a second click takes the rating back
    (again ? api("DELETE", path) : api("PUT", path, { rating }))
      .then(() => view.rated(again ? null : rating))
      .catch(report);
  },
  passage(source) {
    $("#passage-title").textContent = source.title || source.documentId;
    $("#passage-key").textContent = `${source.documentId}#${source.chunkIndex}${source.source ? ` · ${source.source}` : ""}`;
    $("#passage-text").textContent = source.snippet || "";
    $("#passage").showModal();
  },
};

// The exchange's message id the revision routes take: its answer's, else its question's.
function exchangeMessageId(bubble) {
  const answers = [...document.querySelectorAll("#transcript .turn[data-message-id]")];
  return answers[answers.length - 1]?.dataset.messageId ?? bubble.dataset.messageId;
}

function startEdit(bubble) {
  const text = bubble.querySelector(".text");
  const box = el("textarea", "edit-box");
  box.value = text.textContent;
  box.rows = 3;
  const save = button("Save & ask", "edit-save", () => {
    const message = box.value.trim();
    const messageId = exchangeMessageId(bubble);
    if (!message || !messageId) return;
    const nodes = [...$("#transcript").children];
    for (const node of nodes.slice(nodes.indexOf(bubble) + 1)) node.remove();
    text.textContent = message;
    bubble.classList.remove("editing");
    form.remove();
    runTurn(`${API}/chat/conversations/${state.conversationId}/messages/${messageId}/edit`, { message }).catch(report);
  });
  const cancel = button("Cancel", "secondary", () => {
    bubble.classList.remove("editing");
    form.remove();
  });
  const form = el("div", "edit-form");
  form.append(box, save, cancel);
  bubble.classList.add("editing");
  bubble.append(form);
  box.focus();
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

// Streams one turn into a new view; the Stop button cancels it; a reload resumes it.
async function runTurn(url, body, resumed) {
  const view = new TurnView(hooks);
  $("#transcript").append(view.root);
  markLast();
  view.status.textContent = resumed ? "Resuming…" : "Sending…";
  setRunning({ view, conversationId: state.conversationId });
  refreshing(1);
  try {
    await streamEvents(url, body, (event) => {
      if (!view.turnId && event.turnId) {
        localStorage.setItem(RUNNING, JSON.stringify({ callerId: caller(), conversationId: state.conversationId, turnId: event.turnId }));
      }
      view.handle(event);
      scrollDown();
    });
  } catch (error) {
    view.status.textContent = "";
    if (!view.text && !view.tools.children.length) view.root.remove();
    throw error;
  } finally {
    if (view.ended) localStorage.removeItem(RUNNING);
    setRunning(null);
    markLast();
    refreshAfterTurn();
  }
}

function setRunning(running) {
  state.running = running;
  $("#stop").hidden = !running;
  $("#send").hidden = Boolean(running);
}

async function stop() {
  const running = state.running;
  if (!running?.view.turnId) return;
  $("#stop").disabled = true;
  try {
    await api("POST", `/chat/conversations/${running.conversationId}/turns/${running.view.turnId}/cancel`);
  } finally {
    $("#stop").disabled = false;
  }
}

function refreshAfterTurn() {
  loadUsage();
  conversations.load()
    .then(showTitle)
    .catch(report);
  // An automatic title and the turn's memory are written just after the turn's end: both asked once more.
  setTimeout(() => {
    Promise.allSettled([conversations.load().then(showTitle), memory.load()]).then(() => refreshing(-1));
  }, 1500);
}

// <body data-refreshing> counts the turns whose refresh (above) is still to come, from each turn's start:
// the page tests wait for none before they touch the lists such a refresh redraws.
function refreshing(step) {
  const data = document.body.dataset;
  const count = Number(data.refreshing ?? 0) + step;
  if (count > 0) data.refreshing = String(count);
  else delete data.refreshing;
}

async function submit(event) {
  event.preventDefault();
  const message = $("#message").value.trim();
  if (!message || state.running || !state.conversationId) return;
  showError("");
  let body;
  try {
    const attached = await takeAttachments();
    body = turnBody(message, attached.map((a) => a.attachmentId));
    const names = attached.map((a) => a.fileName).join(", ");
    $("#message").value = "";
    $("#transcript").append(userBubble(message, names));
  } catch (e) {
    return showError(e instanceof SyntaxError ? `context is not JSON: ${e.message}` : e.message);
  }
  await runTurn(`${API}/chat/conversations/${state.conversationId}/messages/stream`, body).catch(report);
}

// After a reload: the turn that was running in this conversation, replayed and followed, unless its
// answer is stored already.
async function resumeRunning() {
  const running = JSON.parse(localStorage.getItem(RUNNING) || "null");
  if (!running || running.callerId !== caller()) return;
  const stored = await openConversation(running.conversationId).catch(() => null);
  const last = stored?.[stored.length - 1];
  if (!stored || (last?.role === "assistant" && !last.toolCalls?.length)) {
    localStorage.removeItem(RUNNING);
    return;
  }
  const url = `${API}/chat/conversations/${running.conversationId}/turns/${running.turnId}/events`;
  await runTurn(url, undefined, true).catch((e) => {
    localStorage.removeItem(RUNNING);
    report(e);
  });
}

// ---------------------------------------------------------------- the rest of the page

// A new caller (or none): nothing of the previous one's stays on the page.
async function refresh() {
  localStorage.setItem("callerId", caller());
  localStorage.setItem("callerRoles", $("#caller-roles").value.trim());
  localStorage.setItem("callerClaims", $("#caller-claims").value.trim());
  closeConversation();
  showError("");
  $("#new-conversation").disabled = !caller();
  $("#new-temporary").disabled = !caller();
  $("#usage").textContent = "";
  memory.clear();
  if (!caller()) {
    $("#conversations").replaceChildren(el("li", "empty muted", "Enter a caller id to see its conversations."));
    $("#tools").replaceChildren();
    return;
  }
  await Promise.all([conversations.load(), loadTools(), loadUsage()]);
}

let searching = 0;
function search() {
  clearTimeout(searching);
  searching = setTimeout(() => conversations.load().catch(report), 200);
}

function start() {
  $("#caller-id").value = localStorage.getItem("callerId") ?? "alice";
  $("#caller-roles").value = localStorage.getItem("callerRoles") || "";
  // alice's account in the demo tool API (devserver/demo_tools.py), until the field is changed
  $("#caller-claims").value = localStorage.getItem("callerClaims") ?? '{"accountId": "acct-1001"}';
  $("#caller-id").addEventListener("change", () => refresh().catch(report));
  $("#caller-roles").addEventListener("change", () => refresh().catch(report));
  $("#caller-claims").addEventListener("change", () => refresh().catch(report));
  $("#new-conversation").addEventListener("click", () => newConversation(false).catch(report));
  $("#new-temporary").addEventListener("click", () => newConversation(true).catch(report));
  $("#search").addEventListener("input", search);
  $("#composer").addEventListener("submit", submit);
  $("#stop").addEventListener("click", () => stop().catch(report));
  $("#attachment-file").addEventListener("change", (e) => attach(e, state.conversationId, showError));
  $("#attach").addEventListener("click", () => $("#attachment-file").click());
  $("#menu").addEventListener("click", () => document.body.classList.toggle("menu-open"));
  $("#passage-close").addEventListener("click", () => $("#passage").close());
  $("#message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) submit(e);
  });
  checkHealth();
  refresh()
    .then(resumeRunning)
    .catch(report);
}

start();
