// Files for the next message (docs/attachments.md): a picked file is declared (POST …/attachments),
// then uploaded straight to S3 with the presigned POST that returns (its fields, then the file) — never
// through the API. The next message names it in `attachmentIds`. Under make dev S3 announces the
// upload and the app reads it at once; a turn reads one not read yet itself, with a StatusUpdate.
"use strict";

import { api } from "./api.js";
import { button, el } from "./turn.js";

let pending = [];
const $ = (selector) => document.querySelector(selector);

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
const LABELS = {
  declaring: "declaring…",
  uploading: "uploading…",
  PENDING_UPLOAD: "uploaded",
  PROCESSING: "reading…",
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function contentType(file) {
  return file.type || TYPES_BY_EXTENSION[file.name.split(".").pop().toLowerCase()] || "application/octet-stream";
}

function show(item, status, detail) {
  item.status = status;
  const modalities = [...new Set((item.segments ?? []).map((s) => s.modality))].join(", ");
  const ready = modalities ? `ready · ${modalities}` : "ready · no text";
  item.chip.dataset.status = status;
  item.chip.querySelector(".state").textContent = status === "READY" ? ready : status === "FAILED" ? "failed" : LABELS[status];
  item.chip.title = detail || "";
}

function drop(item) {
  pending = pending.filter((a) => a !== item);
  item.chip.remove();
}

export function clearAttachments() {
  pending = [];
  $("#attachments").replaceChildren();
}

// The files of the next message, once uploaded (failed ones left out); the composer starts empty again.
export async function takeAttachments() {
  const taken = pending;
  await Promise.all(taken.map((a) => a.uploaded));
  clearAttachments();
  return taken.filter((a) => a.attachmentId && a.status !== "FAILED");
}

async function upload(item, file, conversationId) {
  const declared = { fileName: file.name, contentType: contentType(file), sizeBytes: file.size };
  const created = await api("POST", `/chat/conversations/${conversationId}/attachments`, declared);
  item.attachmentId = created.attachmentId;
  show(item, "uploading");
  const form = new FormData();
  for (const [name, value] of Object.entries(created.upload.fields)) form.append(name, value);
  form.append("file", file); // last: S3 ignores the fields after it
  const sent = await fetch(created.upload.url, { method: "POST", body: form });
  if (!sent.ok) throw new Error(`S3 refused the upload (HTTP ${sent.status})`);
  show(item, created.status);
}

// Its status until it is read (or for half a minute: without S3 events a turn reads it).
async function follow(item, conversationId) {
  for (let i = 0; i < 30 && pending.includes(item) && !SETTLED.has(item.status); i++) {
    await sleep(1000);
    const seen = await api("GET", `/chat/conversations/${conversationId}/attachments/${item.attachmentId}`);
    if (!pending.includes(item)) return;
    item.segments = seen.segments;
    show(item, seen.status, seen.detail);
  }
}

export function attach(event, conversationId, showError) {
  showError("");
  for (const file of event.target.files) {
    const item = { fileName: file.name, attachmentId: null, status: "declaring" };
    item.chip = el("li", "attachment");
    item.chip.append(el("span", "name", file.name), el("span", "state muted"));
    item.chip.append(button("✕", "remove", () => drop(item), "Do not send this file"));
    show(item, "declaring");
    pending.push(item);
    $("#attachments").append(item.chip);
    item.uploaded = upload(item, file, conversationId).catch((e) => {
      drop(item);
      showError(`${file.name}: ${e.message}`);
    });
    item.uploaded.then(() => item.attachmentId && follow(item, conversationId)).catch(() => {});
  }
  event.target.value = ""; // the same file may be picked again
}
