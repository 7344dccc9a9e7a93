// The page's read-only panels: the caller's tokens today (header), the tools offered to the caller
// (sidebar) and the service's health (header).
"use strict";

import { API, api, caller } from "./api.js";
import { el } from "./turn.js";

const $ = (selector) => document.querySelector(selector);

export async function loadUsage() {
  const badge = $("#usage");
  if (!caller()) return (badge.textContent = "");
  try {
    const usage = await api("GET", "/usage");
    badge.textContent = usage.tokensLimit == null ? `${usage.tokensUsed} tokens today` : `${usage.tokensUsed} / ${usage.tokensLimit} tokens today`;
  } catch {
    badge.textContent = "";
  }
}

export async function loadTools() {
  const list = $("#tools");
  list.replaceChildren();
  if (!caller()) return;
  const { tools } = await api("GET", "/agent/tools");
  for (const t of tools) {
    const item = el("li");
    item.append(el("span", "name", t.name));
    item.title = t.description;
    if (t.preview) item.append(el("span", "badge", t.preview));
    if (t.approval) item.append(el("span", "badge", "approval"));
    list.append(item);
  }
}

export async function checkHealth() {
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
