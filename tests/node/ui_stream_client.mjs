// One turn through the AI SDK's own chat client, as `useChat` runs it: AbstractChat (the core every
// framework binding wraps) with DefaultChatTransport posting to our ui-stream route, the SDK parsing
// the stream (uiMessageChunkSchema) and assembling the message. Prints what the app would hold.
//
//   [CALLER_CLAIMS=<claims JSON>] node ui_stream_client.mjs <url> <caller-id> <message> [<body JSON>] [stop]
//
// `stop`: once the answer's first text has arrived, press Stop as an app would: POST the turn's cancel
// route with the turnId the stream's `start` part carries in the message's metadata.
import { AbstractChat, DefaultChatTransport } from "ai";

class ChatState {
  constructor(onMessage) {
    this.onMessage = onMessage;
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage = (message) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
    this.onMessage(message);
  };
  snapshot = (thing) => structuredClone(thing);
}

class Chat extends AbstractChat {
  constructor(init, onMessage) {
    super({ ...init, state: new ChatState(onMessage) });
  }
}

const [url, callerId, text, extra, stop] = process.argv.slice(2);
// The dev caller's token claims, where pinned tool parameters come from (X-Caller-Claims).
const claims = process.env.CALLER_CLAIMS ? { "X-Caller-Claims": process.env.CALLER_CLAIMS } : {};
const data = [];
const errors = [];
const cancels = [];
const pressStop = (message) => {
  const turnId = message.metadata?.turnId;
  if (stop !== "stop" || cancels.length || !turnId || !message.parts.some((p) => p.type === "text" && p.text)) {
    return;
  }
  const cancelUrl = url.replace(/\/ui-stream$/, `/turns/${turnId}/cancel`);
  cancels.push(fetch(cancelUrl, { method: "POST", headers: { "X-Caller-Id": callerId } }).then((r) => r.status));
};
const chat = new Chat({
  transport: new DefaultChatTransport({ api: url, headers: { "X-Caller-Id": callerId, ...claims } }),
  onData: (part) => data.push(part),
  onError: (error) => errors.push(error.message),
}, pressStop);
await chat.sendMessage({ text }, { body: extra ? JSON.parse(extra) : undefined });
const cancelStatuses = await Promise.all(cancels);
console.log(
  JSON.stringify({
    status: chat.status,
    error: chat.error?.message ?? null,
    errors,
    data,
    messages: chat.messages,
    cancelStatuses,
  }),
);
