"""HttpTool: one catalogue entry executed over HTTP (docs/tools.md).

The request goes to the catalogue URL's scheme, host and port and nowhere else: path parameters are
refused when they could climb out of their segment, and the built URL is checked against the
catalogue's origin before anything is sent. Redirects are not followed and the environment's proxy
and .netrc settings are ignored. Responses are read up to a byte limit; anything larger, any
non-2xx answer, a timeout or a connection error becomes an unsuccessful result with a short message.

Who the call is for is the service's to say, never the model's or the client's (tools/caller_binding.py):
pinned parameters (`contextParams`) replace whatever the model wrote, and the caller's identity goes
along as the tool's `identity` declares — a signed assertion, the caller's own token, or nothing.
"""

from __future__ import annotations

import asyncio
import copy
import json
import weakref
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx

from rag_orchestrator import tls
from rag_orchestrator.domain.messages import ToolPreview, ToolResult
from rag_orchestrator.errors import RagError
from rag_orchestrator.observability import logger
from rag_orchestrator.sanitize import strip_control, truncate
from rag_orchestrator.tools.assertion import origin
from rag_orchestrator.tools.base import AttachmentLinks, ToolContext, failure
from rag_orchestrator.tools.caller_assertions import CallerAssertions
from rag_orchestrator.tools.caller_binding import (
    accepting_pinned,
    credentials,
    hide_pinned,
    identity_headers,
    pin,
    redact,
)
from rag_orchestrator.tools.catalog import (
    PATH_PARAM,
    SECRET_REF,
    Lookup,
    ToolSpec,
    environment_secret,
    resolve,
)
from rag_orchestrator.tools.registry import schema_errors

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024
PREVIEW_SENT = "preview_sent"
USER_AGENT = "rag-orchestrator-tools/1"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_UNSAFE_IN_SEGMENT = ("/", "\\", "..", "@", "://", "?", "#")
_ERROR_EXCERPT = 200
ATTACHMENT_PARAM = "The attachmentId of a file attached to this conversation"


class ResponseTooLarge(Exception):
    pass


class ClientPool:
    """One AsyncClient per event loop, shared by every HttpTool of the process.

    A client's connections belong to the loop that opened them, so a loop that is replaced (a test,
    a Lambda runtime that starts a new loop) gets its own client; the old one goes with its loop.
    """

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._transport = transport
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = httpx.AsyncClient(
                transport=self._transport,
                follow_redirects=False,
                trust_env=False,
                verify=tls.context(),
                limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            )
            self._clients[loop] = client
        return client


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def path_segment(name: str, value: Any) -> str:
    """A path parameter as one URL-encoded segment; raises ValueError for values that could leave it."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"path parameter {name} must be a string or a number")
    text = str(value)
    if (
        not text.strip()
        or text == "."
        or any(mark in text for mark in _UNSAFE_IN_SEGMENT)
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in text)
    ):
        raise ValueError(f"path parameter {name} has a value that is not allowed")
    return quote(text, safe="")


def _query_value(value: Any) -> Any:
    """Scalars and lists of scalars as httpx encodes them; anything nested as compact JSON."""
    scalar = (str, int, float, bool)
    if isinstance(value, scalar) or (isinstance(value, list) and all(isinstance(v, scalar) for v in value)):
        return value
    return json.dumps(value, separators=(",", ":"))


def model_parameters(spec: ToolSpec) -> dict[str, Any]:
    """The schema the model sees: pinned parameters are not in it, since the service fills them;
    attachment parameters say they take an attachment id, unless the catalogue describes them."""
    schema = copy.deepcopy(spec.input_schema)
    for name in spec.http.attachment_params:
        schema["properties"][name].setdefault("description", ATTACHMENT_PARAM)
    hide_pinned(schema, spec.http.context_params)
    return schema


class HttpTool:
    def __init__(
        self,
        spec: ToolSpec,
        *,
        pool: ClientPool | None = None,
        lookup: Lookup = environment_secret,
        default_timeout: float = 30.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        links: AttachmentLinks | None = None,
        assertions: CallerAssertions | None = None,
    ) -> None:
        self.spec = spec
        self._links = links
        self._assertions = assertions
        self.name = spec.name
        self.description = spec.description
        self.parameters = model_parameters(spec)
        self.arguments_schema = accepting_pinned(self.parameters, spec.http.context_params)
        self.preview = spec.preview
        self.approval_required = spec.approval == "required"
        self.timeout_seconds = spec.http.timeout_seconds or default_timeout
        self.max_response_bytes = max_response_bytes
        self._pool = pool or ClientPool()
        self._url = resolve(spec.http.url, lookup)
        self._origin = _origin(httpx.URL(self._url))
        self.audience = origin(self._url)
        declared = {header: resolve(value, lookup) for header, value in spec.http.headers.items()}
        self._headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **declared}
        refs = {
            name for text in (spec.http.url, *spec.http.headers.values()) for name in SECRET_REF.findall(text)
        }
        values = (lookup(name) for name in refs)
        self._secrets = sorted((v for v in values if v and len(v) >= 4), key=len, reverse=True)

    def build_url(self, arguments: dict[str, Any]) -> tuple[httpx.URL, dict[str, Any]]:
        """The request URL and the arguments left for the query string or body."""
        rest = dict(arguments)
        path = PATH_PARAM.sub(lambda m: path_segment(m.group(1), rest.pop(m.group(1), None)), self._url)
        url = httpx.URL(path)
        if _origin(url) != self._origin:
            raise ValueError("arguments may not change where the request goes")
        return url, rest

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            filled = pin(arguments, self.spec.http.context_params, ctx)
        except ValueError as exc:
            return failure(self.name, str(exc))
        problems = schema_errors(self.spec.input_schema, filled)
        if problems:
            return failure(self.name, "Invalid arguments: " + "; ".join(problems))
        try:
            filled, linked = await self._link_attachments(filled, ctx)
        except RagError as exc:
            return failure(self.name, exc.public_message)
        try:
            url, rest = self.build_url(filled)
        except ValueError as exc:
            return failure(self.name, f"Invalid arguments: {exc}")
        try:
            identity = await identity_headers(
                self.spec.http.identity, ctx, self._assertions, self.audience, self.name
            )
        except ValueError as exc:
            return failure(self.name, f"{exc}; the tool was not called")
        method = self.spec.http.method
        body = None
        if method in _BODY_METHODS:
            body = rest
        else:
            url = url.copy_merge_params(
                {key: _query_value(value) for key, value in rest.items() if value is not None}
            )
        # An error body is read only so far (its excerpt is for the model), and a secret cut by the
        # read's end would not be redacted: a margin more is read, and that much of the end dropped.
        margin = 6 * max(map(len, self._secrets_with(identity)), default=0)  # \uXXXX: 6 a character
        try:
            async with asyncio.timeout(self.timeout_seconds):
                response, content, cut = await self._send(method, url, body, identity, margin)
        except TimeoutError:
            return failure(self.name, f"The service did not answer within {self.timeout_seconds:g}s")
        except ResponseTooLarge:
            return failure(self.name, f"The response was larger than {self.max_response_bytes} bytes")
        except httpx.HTTPError as exc:
            logger.warning("http tool failed", extra={"tool": self.name, "error_type": type(exc).__name__})
            return failure(self.name, f"Could not reach the service ({type(exc).__name__})")
        logger.info("http tool called", extra={"tool": self.name, "status": response.status_code})
        text = self._redact(content.decode(response.encoding or "utf-8", errors="replace"), linked, identity)
        if cut:
            text = text[: max(0, len(text) - margin)]
        if not response.is_success:
            status = self._status_message(response)
            # The model may read the 4xx body's excerpt (it says which argument was wrong); a client never.
            return failure(self.name, self._with_excerpt(status, response, text), client_message=status)
        return self._result(response, text, linked, identity)

    async def _send(
        self, method: str, url: httpx.URL, body: Any, identity: dict[str, str], margin: int
    ) -> tuple[httpx.Response, bytes, bool]:
        """The response and its body, and whether the body was cut (an error's, read only so far)."""
        client = self._pool.client()
        headers = {**self._headers, **identity} if identity else self._headers
        request = client.build_request(
            method, url, json=body, headers=headers, timeout=httpx.Timeout(self.timeout_seconds)
        )
        response = await client.send(request, stream=True)
        try:
            limit = self.max_response_bytes if response.is_success else _ERROR_EXCERPT * 4 + margin
            declared = response.headers.get("content-length", "")
            if response.is_success and declared.isdigit() and int(declared) > limit:
                raise ResponseTooLarge
            content = bytearray()
            async for chunk in response.aiter_bytes():
                content += chunk
                if len(content) > limit:
                    if response.is_success:
                        raise ResponseTooLarge
                    break
            return response, bytes(content[:limit]), len(content) > limit
        finally:
            await response.aclose()

    def _result(
        self, response: httpx.Response, text: str, linked: dict[str, str], identity: dict[str, str]
    ) -> ToolResult:
        payload: Any = text
        if text.strip():
            try:
                # Written anew, and redacted anew: an escape the first redaction missed is undone here.
                text = self._redact(
                    json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":")), linked, identity
                )
                payload = json.loads(text)
            except ValueError:
                pass
        else:
            text = json.dumps({"status": response.status_code})
            payload = None
        if self.preview:
            return ToolResult(
                tool_call_id="",
                tool_name=self.name,
                result=PREVIEW_SENT,
                preview=ToolPreview(type=self.preview, payload=payload),
            )
        return ToolResult(tool_call_id="", tool_name=self.name, result=text)

    @staticmethod
    def _status_message(response: httpx.Response) -> str:
        message = f"The service answered HTTP {response.status_code} {response.reason_phrase}".rstrip()
        return message + " (redirects are not followed)" if response.is_redirect else message

    @staticmethod
    def _with_excerpt(message: str, response: httpx.Response, text: str) -> str:
        if response.is_client_error and text.strip():
            # A 4xx body usually says which argument was wrong, which helps the model retry.
            return f"{message}: {truncate(' '.join(strip_control(text).split()), _ERROR_EXCERPT)}"
        return message

    async def _link_attachments(
        self, arguments: dict[str, Any], ctx: ToolContext
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The arguments with each attachment id replaced by a presigned GET URL, and {url: id}: the
        model never reads a URL back, the answer shows it the id it sent."""
        linked, urls = dict(arguments), {}
        for name in self.spec.http.attachment_params:
            attachment_id = arguments.get(name)
            if not isinstance(attachment_id, str) or not attachment_id:
                continue
            if self._links is None:
                raise RagError("Attachments are not available to tools here")
            url = await self._links.link(ctx.caller_id, ctx.conversation_id, attachment_id)
            linked[name] = url
            urls[url] = attachment_id
        return linked, urls

    def _secrets_with(self, identity: dict[str, str]) -> list[str]:
        """The catalogue's secrets and the caller's credentials the request carries."""
        return [*self._secrets, *credentials(identity)]

    def _redact(
        self, text: str, linked: dict[str, str] | None = None, identity: dict[str, str] | None = None
    ) -> str:
        """The answer without the catalogue's secrets, the caller's credentials (an API that echoes
        its request), or the presigned URLs it was given."""
        text = redact(text, self._secrets_with(identity or {}))
        for url, attachment_id in (linked or {}).items():
            for form in url_forms(url):
                text = text.replace(form, attachment_id)
        return text


def url_forms(url: str) -> list[str]:
    """How an answer may quote a presigned URL: as is, percent-encoded, JSON-escaped, and its signature
    alone (which is what makes it a credential); longest first."""
    signature = parse_qs(urlsplit(url).query).get("X-Amz-Signature", [])
    forms = {url, quote(url, safe=""), url.replace("/", "\\/"), *signature}
    return sorted((f for f in forms if len(f) >= 16), key=len, reverse=True)
