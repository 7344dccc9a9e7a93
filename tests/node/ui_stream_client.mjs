// Turns through the AI SDK's own chat client, as `useChat` runs it, with the `ai` package of either
// current major: AbstractChat (the core every framework binding wraps) with DefaultChatTransport posting
// to our ui-stream route, the SDK parsing the stream (uiMessageChunkSchema) and assembling the message.
// Prints what the app would hold, as JSON on the last line.
//
//   [CALLER_CLAIMS=<claims JSON>] node ui_stream_client.mjs <6|7> <url> <caller-id> <message> [<body JSON>] [<mode>]
//
// Modes:
//   stop             once the answer's first text has arrived, press Stop as an app would: POST the
//                    turn's cancel route with the turnId the message's metadata carries.
//   approve:<why>    the turn asks for an approval: answer it with addToolApprovalResponse; the chat
//   deny:<why>       sends the answer itself (sendAutomaticallyWhen), and the turn continues.
//   resume           the connection drops after the answer's first text (the body fails as a lost
//                    network does); prints {"dropped": true}, then resumes as useChat({resume: true})
//                    does: GET on the same URL, the running turn replayed and followed; prints
//                    {"resuming": true} once that GET has answered 200.
//   regenerate       after the answer, regenerate() it.
//   edit:<text>      after the answer, sendMessage({text, messageId}) replaces the question.
const [major, url, callerId, text, extra, mode = ""] = process.argv.slice(2);
const ai = await import(major === "7" ? "ai7" : "ai6");
const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } = ai;

class ChatState {
  constructor(onMessage) {
    this.onMessage = onMessage;
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage = (message) => {
    this.messages = [...this.messages, message];
    this.onMessage(message);
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

// The dev caller's token claims, where pinned tool parameters come from (X-Caller-Claims).
const claims = process.env.CALLER_CLAIMS ? { "X-Caller-Claims": process.env.CALLER_CLAIMS } : {};
const headers = { "X-Caller-Id": callerId, ...claims };
const data = [];
const errors = [];
const cancels = [];
const finishes = [];
let waiting = null;
const nextFinish = () => new Promise((resolve) => (waiting = resolve));

const hasText = (message) => message.parts.some((p) => p.type === "text" && p.text);
const pressStop = (message) => {
  const turnId = message.metadata?.turnId;
  if (mode !== "stop" || cancels.length || !turnId || !hasText(message)) return;
  const cancelUrl = url.replace(/\/ui-stream$/, `/turns/${turnId}/cancel`);
  cancels.push(fetch(cancelUrl, { method: "POST", headers }).then((r) => r.status));
};

// A fetch whose first POST body fails once the chat shows the answer's first text, as a dropped
// connection does.
let dropped = false;
let textShown;
const shown = new Promise((resolve) => (textShown = resolve));
const droppingFetch = async (input, init) => {
  const response = await fetch(input, init);
  if (mode === "resume" && init?.method === "GET" && response.ok) console.log(JSON.stringify({ resuming: true }));
  if (mode !== "resume" || dropped || init?.method !== "POST") return response;
  const reader = response.body.getReader();
  const body = new ReadableStream({
    async pull(controller) {
      const next = await Promise.race([reader.read(), shown]);
      if (next === "shown") {
        dropped = true;
        await reader.cancel(); // the socket goes; the server runs the turn on
        console.log(JSON.stringify({ dropped: true }));
        return controller.error(new TypeError("network error"));
      }
      if (next.done) return controller.close();
      controller.enqueue(next.value);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
};
const onMessage = (message) => {
  if (message.role === "assistant" && hasText(message)) textShown("shown");
  pressStop(message);
};

const chat = new Chat(
  {
    transport: new DefaultChatTransport({
      api: url,
      headers,
      fetch: droppingFetch,
      // useChat({resume: true}) reconnects with a GET: ours is on the same URL.
      prepareReconnectToStreamRequest: () => ({ api: url }),
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onData: (part) => data.push(part),
    onError: (error) => errors.push(error.message),
    onFinish: ({ finishReason, isDisconnect }) => {
      finishes.push({ finishReason: finishReason ?? null, isDisconnect });
      waiting?.();
    },
  },
  onMessage,
);

const snapshot = () => structuredClone(chat.messages);
const result = { before: null };
await chat.sendMessage({ text }, { body: extra ? JSON.parse(extra) : undefined });
const [action, argument = ""] = mode.split(/:(.*)/s);
if (action === "approve" || action === "deny") {
  result.before = snapshot();
  const part = chat.lastMessage.parts.find((p) => p.state === "approval-requested");
  const finished = nextFinish();
  await chat.addToolApprovalResponse({
    id: part.approval.id,
    approved: action === "approve",
    reason: argument || undefined,
  });
  await finished;
} else if (action === "resume") {
  result.before = snapshot();
  await chat.resumeStream();
} else if (action === "regenerate") {
  result.before = snapshot();
  await chat.regenerate();
} else if (action === "edit") {
  result.before = snapshot();
  const question = chat.messages.findLast((m) => m.role === "user");
  await chat.sendMessage({ text: argument, messageId: question.id });
}
const cancelStatuses = await Promise.all(cancels);
console.log(
  JSON.stringify({
    ...result,
    status: chat.status,
    error: chat.error?.message ?? null,
    errors,
    data,
    finishes,
    messages: chat.messages,
    cancelStatuses,
  }),
);
