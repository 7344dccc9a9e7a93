// The page's HTTP: JSON routes with the dev caller headers, the error JSON as an Error, and the native
// SSE stream of a turn read with fetch + ReadableStream (docs/streams.md). Every URL is this server's.
"use strict";

export const API = "/api/v1";
const $ = (selector) => document.querySelector(selector);

export function caller() {
  return $("#caller-id").value.trim();
}

export function callerHeaders(json) {
  const headers = { "X-Caller-Id": caller() };
  const roles = $("#caller-roles").value.trim();
  if (roles) headers["X-Caller-Roles"] = roles;
  // The dev stand-in for the token's claims: pinned tool parameters (the demo tools' accountId) come from them.
  const claims = $("#caller-claims").value.trim();
  if (claims) headers["X-Caller-Claims"] = claims;
  if (json) headers["Content-Type"] = "application/json";
  return headers;
}

export async function failure(response) {
  try {
    const body = await response.json();
    return new Error(`${response.status} ${body.error}: ${body.message}`);
  } catch {
    return new Error(`HTTP ${response.status}`);
  }
}

export async function api(method, path, body) {
  const response = await fetch(API + path, {
    method,
    headers: callerHeaders(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  const text = await response.text(); // a 204, or a 202 (forget all), has no body
  return text ? JSON.parse(text) : null;
}

// Server-sent events from a fetch body: blocks split on a blank line, `data:` lines joined.
export async function* readEvents(body) {
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

// A turn's events: POST `url` with `body` (or GET it, to resume), each event to `onEvent`.
export async function streamEvents(url, body, onEvent) {
  const response = await fetch(url, {
    method: body === undefined ? "GET" : "POST",
    headers: { ...callerHeaders(body !== undefined), Accept: "text/event-stream" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  for await (const event of readEvents(response.body)) onEvent(event);
}
