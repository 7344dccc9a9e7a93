// The sidebar's conversation list: titles (a search over them), temporary chats marked, rename and delete. The page tells it
// which conversation is open and hears back when one is opened, renamed or deleted; other sidebar
// panels (the memory list) follow the same shape: a class over its own element, told by the page.
"use strict";

import { api, caller } from "./api.js";
import { button, el } from "./turn.js";

function when(iso) {
  const date = new Date(iso);
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : date.toLocaleDateString();
}

export class ConversationList {
  // page: {current() → the open conversation's id, open(id), renamed(id), deleted(id), report(error)}
  constructor(root, search, page) {
    this.root = root;
    this.search = search;
    this.page = page;
    this.items = [];
  }

  title(id) {
    return this.items.find((c) => c.conversationId === id)?.title;
  }

  // A temporary chat ("memory": false): nothing of it is remembered.
  temporary(id) {
    return this.items.find((c) => c.conversationId === id)?.memory === false;
  }

  async load() {
    if (this.root.querySelector(".rename-input")) return; // a rename in progress keeps the list
    if (!caller()) {
      this.items = [];
      this.root.replaceChildren();
      return;
    }
    const q = this.search.value.trim();
    const page = await api("GET", `/chat/conversations?limit=50${q ? `&q=${encodeURIComponent(q)}` : ""}`);
    if (this.root.querySelector(".rename-input")) return; // a rename began while the list was read
    this.items = page.items;
    this.root.replaceChildren(...page.items.map((c) => this.item(c)));
    if (!page.items.length) this.root.append(el("li", "empty muted", q ? "No title matches." : "No conversations yet."));
  }

  markActive(id) {
    for (const item of this.root.querySelectorAll("li")) item.classList.toggle("active", item.dataset.id === id);
  }

  item(c) {
    const item = el("li", `conversation${c.conversationId === this.page.current() ? " active" : ""}`);
    item.dataset.id = c.conversationId;
    const open = button("", "open", () => this.page.open(c.conversationId));
    open.append(el("span", "title", c.title || "Untitled"), el("span", "when muted", when(c.updatedAt)));
    if (c.memory === false) open.querySelector(".when").append(el("span", "badge temporary", "temporary"));
    open.title = c.title || c.conversationId;
    item.append(open);
    item.append(button("✎", "rename", () => this.startRename(item, c), "Rename"));
    item.append(button("✕", "delete", () => this.remove(c).catch(this.page.report), "Delete"));
    return item;
  }

  startRename(item, conversation) {
    const input = el("input", "rename-input");
    input.value = conversation.title || "";
    input.maxLength = 120;
    input.setAttribute("aria-label", "New title");
    const done = () => item.replaceChildren(); // the rename is over: the list may be drawn again
    const save = async () => {
      const title = input.value.trim();
      if (title && title !== conversation.title) {
        await api("PATCH", `/chat/conversations/${conversation.conversationId}`, { title });
      }
      done();
      await this.load();
      this.page.renamed(conversation.conversationId);
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") save().catch(this.page.report);
      if (e.key === "Escape") {
        done();
        this.load().catch(this.page.report);
      }
    });
    item.replaceChildren(input, button("Save", "rename-save", () => save().catch(this.page.report)));
    input.focus();
  }

  async remove(conversation) {
    if (!confirm(`Delete "${conversation.title || "Untitled"}"?`)) return;
    await api("DELETE", `/chat/conversations/${conversation.conversationId}`);
    this.page.deleted(conversation.conversationId);
    await this.load();
  }
}
