// One answer on the page: a streamed turn's native events (docs/streams.md) — status, tool calls,
// previews, an approval to decide, the answer as Markdown with its citations, the sources, the tally —
// or a stored answer. Its actions (feedback, regenerate) act on the stored message it became.
"use strict";

import { renderMarkdown } from "./markdown.js";

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function button(label, className, onClick, title) {
  const node = el("button", className, label);
  node.type = "button";
  if (title) node.title = title;
  node.addEventListener("click", onClick);
  return node;
}

function pretty(value) {
  if (typeof value !== "string") return JSON.stringify(value, null, 2);
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

// The passages an answer drew on, kept by the page per stored message, so a reopened answer's
// citations still open their passage in this tab.
const cached = (messageId) => JSON.parse(sessionStorage.getItem(`sources:${messageId}`) || "[]");

export class TurnView {
  // `hooks`: decide(approval, decision, reason), regenerate(view), feedback(view, rating), passage(source)
  constructor(hooks) {
    this.hooks = hooks;
    this.root = el("div", "turn");
    this.status = el("div", "status muted");
    this.tools = el("div", "tools");
    this.previews = el("div", "previews");
    this.answer = el("div", "bubble assistant answer markdown");
    this.sourceList = el("ol", "sources");
    this.footer = el("div", "turn-footer muted");
    this.actions = el("div", "answer-actions");
    this.root.append(this.status, this.tools, this.previews, this.answer, this.sourceList, this.footer, this.actions);
    this.cards = new Map();
    this.sources = [];
    this.text = "";
    this.messageId = null;
    this.turnId = null;
    this.ended = false;
    this.drawing = 0;
  }

  static stored(message, hooks) {
    const view = new TurnView(hooks);
    view.text = message.content;
    view.showSources(cached(message.messageId));
    view.draw();
    view.finish(message.messageId, message.feedback?.rating ?? null);
    if (message.interrupted) view.footer.textContent = "interrupted";
    return view;
  }

  handle(event) {
    this.turnId ??= event.turnId ?? null;
    const handler = this[`on${event.type}`];
    if (handler) handler.call(this, event);
  }

  onStatusUpdate(e) {
    this.status.textContent = e.details ? `${e.status} (${e.details})` : e.status;
  }

  onToolCallStart(e) {
    const card = el("details", "tool-card running");
    card.append(el("summary", "", `⚙ ${e.toolName}`), el("div", "caption muted", "arguments"));
    card.append(el("pre", "arguments", pretty(e.arguments)));
    this.cards.set(e.toolCallId, card);
    this.tools.append(card);
  }

  onToolCallResult(e) {
    let card = this.cards.get(e.toolCallId);
    if (!card) {
      this.onToolCallStart({ ...e, arguments: {} }); // a decided call's result: its card comes now
      card = this.cards.get(e.toolCallId);
    }
    card.classList.remove("running");
    card.classList.add(e.success ? "ok" : "failed");
    card.querySelector("summary").textContent = `${e.success ? "✓" : "✗"} ${e.toolName}`;
    card.append(el("div", "caption muted", "result"), el("pre", "result", pretty(e.result)));
  }

  onPreview(e) {
    const card = el("div", "preview-card");
    card.append(el("div", "preview-title", e.previewType.replace(/_/g, " ")));
    const steps = e.payload?.steps ?? e.payload?.columns;
    if (Array.isArray(steps)) {
      const list = el("ol");
      for (const step of steps) list.append(el("li", step === e.payload.added ? "added" : "", String(step)));
      card.append(list);
    } else {
      card.append(el("pre", "", pretty(e.payload)));
    }
    this.previews.append(card);
  }

  // A held tool call: the decision streams the turn's continuation below this one (docs/approvals.md).
  onApprovalRequested(e) {
    const card = el("div", "approval-card");
    card.append(el("div", "preview-title", `approve ${e.toolName}?`), el("pre", "arguments", pretty(e.arguments)));
    const reason = el("input");
    reason.placeholder = "reason (optional)";
    reason.setAttribute("aria-label", "reason");
    const decide = (decision) => {
      for (const control of card.querySelectorAll("button, input")) control.disabled = true;
      this.hooks.decide(e, decision, reason.value.trim());
    };
    card.append(reason, button("Approve", "approve", () => decide("approve")));
    card.append(button("Deny", "deny secondary", () => decide("deny")));
    card.append(el("div", "caption muted", `expires ${new Date(e.expiresAt).toLocaleTimeString()}`));
    this.previews.append(card);
  }

  onResponseChunk(e) {
    this.text += e.content;
    if (!this.drawing) this.drawing = requestAnimationFrame(() => this.draw());
  }

  onSources(e) {
    this.showSources(e.sources);
  }

  onCompleted(e) {
    this.status.textContent = "";
    this.draw();
    const ended = e.finishReason === "stop" ? `message ${e.messageId}` : e.finishReason.replace(/_/g, " ");
    this.footer.textContent = `${e.iterationsUsed} model call(s) · ${e.tokensUsed} tokens · ${ended}`;
    if (e.messageId) {
      sessionStorage.setItem(`sources:${e.messageId}`, JSON.stringify(this.sources));
      this.finish(e.messageId, null);
    }
    this.ended = true;
  }

  onError(e) {
    this.status.textContent = "";
    this.draw();
    this.root.append(el("div", "error", e.error));
    this.ended = true;
  }

  draw() {
    cancelAnimationFrame(this.drawing);
    this.drawing = 0;
    renderMarkdown(this.answer, this.text, (key) => this.cite(key));
  }

  cite(key) {
    const index = this.sources.findIndex((s) => `${s.documentId}#${s.chunkIndex}` === key);
    if (index < 0) {
      const unknown = el("span", "citation unknown", `[${key}]`);
      unknown.title = "The passage is not known to this page";
      return unknown;
    }
    const link = button(`[${index + 1}]`, "citation", () => this.hooks.passage(this.sources[index]));
    link.title = `${this.sources[index].title || key} (${key})`;
    link.dataset.key = key;
    return link;
  }

  showSources(sources) {
    this.sources = sources;
    this.sourceList.replaceChildren();
    for (const source of sources) {
      const key = `${source.documentId}#${source.chunkIndex}`;
      const item = el("li");
      item.append(button(source.title || source.documentId, "source-link", () => this.hooks.passage(source)));
      item.append(el("span", "muted", ` ${key}`));
      this.sourceList.append(item);
    }
    if (this.text) this.draw();
  }

  // The stored answer's actions: feedback, and regenerate while it is the last one.
  finish(messageId, rating) {
    this.messageId = messageId;
    this.root.dataset.messageId = messageId;
    const up = button("✓ Good", "feedback-up", () => this.hooks.feedback(this, "up"), "A good answer");
    const down = button("✗ Bad", "feedback-down", () => this.hooks.feedback(this, "down"), "A bad answer");
    const again = button("↻ Regenerate", "regenerate secondary", () => this.hooks.regenerate(this));
    this.actions.replaceChildren(up, down, again);
    this.rated(rating);
  }

  rated(rating) {
    this.rating = rating;
    this.actions.querySelector(".feedback-up")?.setAttribute("aria-pressed", String(rating === "up"));
    this.actions.querySelector(".feedback-down")?.setAttribute("aria-pressed", String(rating === "down"));
  }
}
