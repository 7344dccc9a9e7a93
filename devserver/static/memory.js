// The sidebar's memory panel: what the service remembers of the caller (GET /api/v1/memory, newest
// first or best match for a search), a page at a time ("Show more" asks for the next), forget one
// fragment or all of them (docs/memory.md). Fragment text is shown as text, never as HTML: it is what a
// user typed and what a model answered.
"use strict";

import { api, caller } from "./api.js";
import { button, el } from "./turn.js";

const KINDS = { said: "you said", answered: "answered" };

export class MemoryPanel {
  // page: {report(error)}
  constructor(root, search, page) {
    this.root = root;
    this.list = root.querySelector("ul");
    this.search = search;
    this.page = page;
    this.searching = 0;
    this.asked = 0;
    search.addEventListener("input", () => {
      clearTimeout(this.searching);
      this.searching = setTimeout(() => this.load().catch(page.report), 200);
    });
    root.addEventListener("toggle", () => root.open && this.load().catch(page.report));
    root.querySelector(".forget-all").addEventListener("click", () => this.forgetAll().catch(page.report));
  }

  // Drawn only while the panel is open (or to clear it): a closed panel asks the service nothing.
  // A later load (another search, another caller) wins over an answer still on its way.
  async load() {
    const asked = ++this.asked;
    if (!caller()) return this.clear();
    if (!this.root.open) return;
    const q = this.search.value.trim();
    const page = await this.pageOf(q);
    if (asked !== this.asked || !this.root.open) return;
    this.list.replaceChildren(...page.items.map((f) => this.item(f)));
    if (!page.items.length) this.list.append(el("li", "empty muted", q ? "Nothing remembered matches." : "Nothing remembered."));
    this.offerMore(page.nextCursor, q, asked);
  }

  // One page of the caller's fragments (of a search's matches), from `cursor` on. Its size is the
  // panel's data-page-size, 50 unless a test sets it smaller.
  pageOf(q, cursor) {
    const size = Number(this.root.dataset.pageSize) || 50;
    const query = new URLSearchParams({ limit: String(size) });
    if (q) query.set("q", q);
    if (cursor) query.set("cursor", cursor);
    return api("GET", `/memory?${query}`);
  }

  // "Show more" after the last item while the service has more: its next page is added below, as long
  // as the panel still shows the same caller and search.
  offerMore(cursor, q, asked) {
    if (!cursor) return;
    const more = el("li", "more");
    more.append(button("Show more", "secondary", () => this.showMore(more, cursor, q, asked).catch(this.page.report)));
    this.list.append(more);
  }

  async showMore(more, cursor, q, asked) {
    more.remove();
    const page = await this.pageOf(q, cursor);
    if (asked !== this.asked || !this.root.open) return;
    this.list.append(...page.items.map((f) => this.item(f)));
    this.offerMore(page.nextCursor, q, asked);
  }

  clear() {
    this.asked++;
    this.search.value = "";
    this.list.replaceChildren();
    this.root.open = false;
  }

  item(fragment) {
    const item = el("li", "fragment");
    item.dataset.id = fragment.fragmentId;
    const body = el("div", "fragment-body");
    body.append(
      el("span", `kind badge ${fragment.kind}`, KINDS[fragment.kind] ?? fragment.kind),
      el("span", "when muted", new Date(fragment.createdAt).toLocaleDateString()),
      el("div", "text", fragment.text),
    );
    item.append(body, button("✕", "forget", () => this.forget(fragment).catch(this.page.report), "Forget this"));
    return item;
  }

  async forget(fragment) {
    await api("DELETE", `/memory/${encodeURIComponent(fragment.fragmentId)}`);
    await this.load();
  }

  async forgetAll() {
    if (!confirm("Forget everything remembered of you? Your conversations stay.")) return;
    await api("DELETE", "/memory");
    await this.load();
  }
}
