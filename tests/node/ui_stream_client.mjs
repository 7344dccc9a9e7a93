// One turn through the AI SDK's own chat client, as `useChat` runs it: AbstractChat (the core every
// framework binding wraps) with DefaultChatTransport posting to our ui-stream route, the SDK parsing
// the stream (uiMessageChunkSchema) and assembling the message. Prints what the app would hold.
//
//   node ui_stream_client.mjs <url> <caller-id> <message> [<body JSON>]
import { AbstractChat, DefaultChatTransport } from "ai";

class ChatState {
  constructor() {
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
  };
  snapshot = (thing) => structuredClone(thing);
}

class Chat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new ChatState() });
  }
}

const [url, callerId, text, extra] = process.argv.slice(2);
const data = [];
const errors = [];
const chat = new Chat({
  transport: new DefaultChatTransport({ api: url, headers: { "X-Caller-Id": callerId } }),
  onData: (part) => data.push(part),
  onError: (error) => errors.push(error.message),
});
await chat.sendMessage({ text }, { body: extra ? JSON.parse(extra) : undefined });
console.log(
  JSON.stringify({ status: chat.status, error: chat.error?.message ?? null, errors, data, messages: chat.messages }),
);
