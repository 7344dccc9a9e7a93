"""`python -m rag_orchestrator.cli chat`: a turn streamed in the terminal, for people and smoke tests.

The answer goes to stdout as it streams; progress (status, tool calls, previews, sources, the final
tally) goes to stderr, with a spinner when stderr is a terminal. With a message it runs one turn;
without, it reads one message per line until end of input. Exit status: 0 when every turn completed,
1 when a turn ended with an Error event, 2 when a request was refused or the service unreachable.
Only httpx and httpx-sse are imported: it runs anywhere the layer's requirements are installed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import threading
from typing import Any, TextIO

import httpx
from httpx_sse import connect_sse

from rag_orchestrator import tls

CHAT = "/api/v1/chat/conversations"


class Refused(Exception):
    """A request the service answered with an error status, or could not be sent."""


class Progress:
    """Status and tool lines on stderr; a spinner beside the current status when it is a terminal."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, out: TextIO, animate: bool) -> None:
        self.out = out
        self.animate = animate
        self.text = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def status(self, text: str, *, own: bool = False) -> None:
        """The current status; `own` ones (the client's waiting states) are shown only beside the spinner."""
        if not self.animate:
            if not own:
                self.line(f"… {text}")
            return
        with self._lock:
            self.text = text
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()

    def line(self, text: str) -> None:
        with self._lock:
            self._clear()
            print(text, file=self.out, flush=True)

    def quiet(self) -> None:
        """Stop the spinner and clear its line (before answer text is written)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        if self.animate:
            self.out.write("\r\033[K")
            self.out.flush()

    def _spin(self) -> None:
        for frame in itertools.cycle(self.FRAMES):
            with self._lock:
                self.out.write(f"\r\033[K{frame} {self.text}")
                self.out.flush()
            if self._stop.wait(0.1):
                return


def _excerpt(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _refusal(response: httpx.Response) -> Refused:
    try:
        body = response.json()
        return Refused(f"HTTP {response.status_code} {body['error']}: {body['message']}")
    except (ValueError, KeyError, TypeError):
        return Refused(f"HTTP {response.status_code}")


class Client:
    def __init__(self, args: argparse.Namespace) -> None:
        headers = {"Accept": "application/json"}
        if args.token:
            headers["Authorization"] = f"Bearer {args.token}"
        elif args.caller_id:
            headers["X-Caller-Id"] = args.caller_id
            if args.roles:
                headers["X-Caller-Roles"] = args.roles
            if args.claims:
                headers["X-Caller-Claims"] = json.dumps(args.claims)
        self.args = args
        self.http = httpx.Client(
            headers=headers, timeout=httpx.Timeout(30, read=330), verify=tls.verify(args.api_url)
        )

    def conversation(self, conversation_id: str | None) -> dict[str, Any]:
        """The conversation to talk in (a new one when `conversation_id` is None), as the service has it:
        its `callerId` says whom the service took the credentials for."""
        base = self.args.api_url.rstrip("/") + CHAT
        try:
            if conversation_id is None:
                body = {"memory": False} if self.args.temporary else {}
                response, expected = self.http.post(base, json=body), 201
            else:
                response, expected = self.http.get(f"{base}/{conversation_id}"), 200
        except httpx.HTTPError as exc:
            raise Refused(f"cannot reach {self.args.api_url}: {exc}") from None
        if response.status_code != expected:
            raise _refusal(response)
        return dict(response.json())

    def credentials(self) -> str:
        if self.args.token:
            return "bearer token"
        return "X-Caller-Id header" + (f", roles {self.args.roles}" if self.args.roles else "")

    def turn(self, conversation_id: str, message: str, progress: Progress, out: TextIO) -> bool:
        """Stream one turn; True when it completed, False when it ended with an Error event."""
        body: dict[str, Any] = {"message": message}
        if self.args.context_type:
            body["contextType"] = self.args.context_type
        if self.args.context:
            body["context"] = self.args.context
        url = f"{self.args.url.rstrip('/')}{CHAT}/{conversation_id}/messages/stream"
        progress.status("Sending", own=True)
        try:
            with connect_sse(self.http, "POST", url, json=body) as source:
                if source.response.status_code != 200:
                    source.response.read()
                    raise _refusal(source.response)
                return self._render(source.iter_sse(), progress, out)
        except httpx.HTTPError as exc:
            raise Refused(f"cannot reach {self.args.url}: {exc}") from None
        finally:
            progress.quiet()

    def _render(self, events: Any, progress: Progress, out: TextIO) -> bool:
        answering = False
        for sse in events:
            event = json.loads(sse.data)
            kind = event.get("type")
            if kind == "ResponseChunk":
                if not answering:
                    progress.quiet()
                    answering = True
                out.write(event["content"])
                out.flush()
                continue
            if answering:
                out.write("\n")
                answering = False
            if kind == "StatusUpdate":
                progress.status(event["status"] + (f" ({event['details']})" if event.get("details") else ""))
            elif kind == "ToolCallStart":
                progress.line(f"⚙ {event['toolName']} {_excerpt(event['arguments'])}")
                progress.status(f"Running {event['toolName']}", own=True)
            elif kind == "ToolCallResult":
                mark = "✓" if event["success"] else "✗"
                progress.line(f"{mark} {event['toolName']} → {_excerpt(event['result'])}")
                progress.status("Thinking", own=True)
            elif kind == "Preview":
                progress.line(f"▣ {event['previewType']}: {_excerpt(event['payload'], 400)}")
            elif (
                kind == "ApprovalRequested"
            ):  # decided with POST …/approvals/{approvalId} (docs/approvals.md)
                args = _excerpt(event["arguments"])
                progress.line(f"? {event['toolName']} {args} waits for approval {event['approvalId']}")
            elif kind == "Sources":
                for n, s in enumerate(event["sources"], 1):
                    progress.line(
                        f"[{n}] {s.get('title') or s['documentId']} ({s['documentId']}#{s['chunkIndex']})"
                    )
            elif kind == "Completed":
                tally = f"{event['iterationsUsed']} model call(s), {event['tokensUsed']} tokens"
                progress.line(f"— {tally}, message {event['messageId']}")
                return True
            elif kind == "Error":
                progress.line(f"error: {event['error']}")
                return False
        progress.line("error: the stream ended before the turn did")
        return False


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rag_orchestrator.cli", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser("chat", help="stream chat turns in the terminal")
    chat.add_argument("message", nargs="*", help="one message; none: read one per line from stdin")
    chat.add_argument(
        "--url",
        default=os.environ.get("RAG_URL") or f"http://127.0.0.1:{os.environ.get('PORT') or 8000}",
        help="base URL of the streaming routes (deployed: the function URL); env RAG_URL, else the dev "
        "server's http://127.0.0.1:$PORT (8000)",
    )
    chat.add_argument(
        "--api-url", default=os.environ.get("RAG_API_URL"), help="base URL of the REST routes; default --url"
    )
    chat.add_argument(
        "--token", default=os.environ.get("RAG_TOKEN"), help="bearer token (JWT); env RAG_TOKEN"
    )
    chat.add_argument(
        "--caller-id",
        default=os.environ.get("RAG_CALLER_ID", "cli"),
        help="dev auth caller (X-Caller-Id), when no token is given; env RAG_CALLER_ID",
    )
    chat.add_argument("--roles", help="dev auth roles (X-Caller-Roles), comma-separated")
    chat.add_argument(
        "--claims",
        type=json.loads,
        help='dev auth token claims (X-Caller-Claims) as JSON, e.g. \'{"accountId": "acct-1001"}\'',
    )
    chat.add_argument("--conversation", help="continue this conversation; a new one is created when absent")
    chat.add_argument(
        "--temporary",
        action="store_true",
        help="a new conversation that remembers nothing and recalls nothing (docs/memory.md)",
    )
    chat.add_argument("--context-type", help="the turn's contextType, e.g. orders")
    chat.add_argument(
        "--context", type=json.loads, help='the turn\'s context as JSON, e.g. \'{"accountId": "a-1"}\''
    )
    return parser


def _messages(args: argparse.Namespace, prompt: bool) -> Any:
    if args.message:
        yield " ".join(args.message)
        return
    while True:
        if prompt:
            print("you › ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            return
        if line.strip():
            yield line.strip()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.api_url = args.api_url or args.url
    client = Client(args)
    progress = Progress(sys.stderr, animate=sys.stderr.isatty())
    failed = False
    try:
        conversation = client.conversation(args.conversation)
        conversation_id = conversation["conversationId"]
        progress.line(f"conversation {conversation_id}")
        progress.line(f"caller {conversation['callerId']} ({client.credentials()}) at {args.url}")
        for message in _messages(args, prompt=sys.stdin.isatty()):
            failed |= not client.turn(conversation_id, message, progress, sys.stdout)
    except Refused as exc:
        progress.line(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        progress.quiet()
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
