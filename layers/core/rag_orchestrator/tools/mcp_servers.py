"""MCP_SERVERS (docs/mcp.md): the MCP servers whose tools join the catalogue's, validated like it.

The document is `{"servers": [...]}` or a bare list. MCP_SERVERS is a file (YAML or JSON), an S3
object (`s3://bucket/key.json`), an SSM parameter (`ssm:/name`) or the JSON document itself, read
when the toolbox is built. Every problem is a ConfigError naming the server and the field. A header
value may hold secret references, `${ssm:/name}` (an SSM parameter, decrypted) or
`${secretsmanager:<name or ARN>}` (a Secrets Manager secret), `#field` picking one field of a JSON
secret, read through the composition root's SecretReader when the server is first used.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.callers import ANONYMOUS, normalise_roles
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.ssm_params import SecretReference
from rag_orchestrator.tools.assertion import origin as url_origin

if TYPE_CHECKING:
    from rag_orchestrator.aws import AwsClients

SETTING = "MCP_SERVERS"
SEPARATOR = "__"  # a tool is offered as <server>__<tool>
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what the model's function names may be
SECRET_REF = re.compile(r"\$\{(ssm:/[^{}]*|secretsmanager:[^{}]*)\}")
_REF = re.compile(r"\$\{[^{}]*\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Set by the transport or by `identity`: a server's headers may not replace them.
_RESERVED = {"accept", "content-type", "content-length", "host", "x-caller-assertion"}
_RESERVED_PREFIX = "mcp-"

Identity = Literal["assertion", "caller-token", "none"]


def secret_reference(ref: str) -> str:
    """What `${ref}` names, as ssm_params reads it: `ssm:/name` is the parameter `/name`."""
    return ref.removeprefix("ssm:")


def _is_secret_reference(ref: str) -> bool:
    found = SECRET_REF.fullmatch(ref)
    try:
        return found is not None and bool(SecretReference.parse(secret_reference(found.group(1))))
    except ValueError:
        return False


def _labels(values: tuple[str, ...] | None, *, roles: bool = False) -> tuple[str, ...] | None:
    if values is None:
        return None
    if not values or any(not value.strip() for value in values):
        raise ValueError("must be a list of non-empty strings; omit the field for all")
    labels = normalise_roles(values) if roles else tuple(dict.fromkeys(values))
    if roles and ANONYMOUS in labels:
        raise ValueError("anonymous callers get no tools")
    return labels


class McpServer(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*$", max_length=32)
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    identity: Identity = "assertion"
    roles: tuple[str, ...] | None = None  # omitted: every authenticated role
    contexts: tuple[str, ...] | None = None  # omitted: every context
    approval: Literal["required"] | tuple[str, ...] | None = None
    timeout_seconds: float | None = Field(None, gt=0, le=300)
    include: tuple[str, ...] | None = None

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an absolute http or https URL")
        if parts.username or parts.password:
            raise ValueError("must not carry credentials; use headers")
        if parts.fragment or _REF.search(url):
            raise ValueError("must be a plain URL, without a fragment or ${…} references")
        return url

    @field_validator("headers")
    @classmethod
    def _check_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            lowered = name.lower()
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid header name")
            if lowered in _RESERVED or lowered.startswith(_RESERVED_PREFIX):
                raise ValueError(f"{name} is set by the service, not by the configuration")
            if "\r" in value or "\n" in value:
                raise ValueError(f"{name}: a header value may not hold a line break")
            if not all(_is_secret_reference(ref) for ref in _REF.findall(value)):
                raise ValueError(
                    f"{name}: the only references a value may hold are ${{ssm:/name}} and "
                    "${secretsmanager:<name or ARN>}, with #field for one field of a JSON secret"
                )
        return headers

    @field_validator("roles")
    @classmethod
    def _check_roles(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _labels(value, roles=True)

    @field_validator("contexts", "include")
    @classmethod
    def _check_labels(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _labels(value)

    @field_validator("approval")
    @classmethod
    def _check_approval(cls, value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
        return value if value is None or isinstance(value, str) else _labels(value)

    def needs_approval(self, tool: str) -> bool:
        """Whether a call of this server's `tool` waits for the caller's decision (docs/approvals.md)."""
        return self.approval == "required" or (isinstance(self.approval, tuple) and tool in self.approval)

    def keeps(self, tool: str) -> bool:
        return self.include is None or tool in self.include

    def tool_name(self, tool: str) -> str:
        return f"{self.name}{SEPARATOR}{tool}"

    @property
    def origin(self) -> str:
        """Where the server lives (`scheme://host[:port]`): the audience of a caller assertion."""
        return url_origin(self.url)


def _describe(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(entry)"
    return f"{where}: {error['msg'].removeprefix('Value error, ')}"


def parse_servers(document: Any, source: str = SETTING) -> tuple[McpServer, ...]:
    """Validate a parsed MCP_SERVERS document; raise ConfigError naming the server and field at fault."""
    if isinstance(document, dict):
        unknown = sorted(set(document) - {"servers"})
        if unknown:
            raise ConfigError(f"{source}: unknown field(s) {', '.join(unknown)}")
        document = document.get("servers") or []
    if not isinstance(document, list):
        raise ConfigError(f'{source}: must be {{"servers": [...]}} or a list of servers')
    servers: dict[str, McpServer] = {}
    for index, raw in enumerate(document):
        label = repr(raw["name"]) if isinstance(raw, dict) and "name" in raw else f"#{index + 1}"
        try:
            server = McpServer.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"{source}: server {label}: {_describe(exc)}") from None
        if server.name in servers:
            raise ConfigError(f"{source}: server {label}: name: duplicate server name")
        servers[server.name] = server
    return tuple(servers.values())


def load_servers(settings: Settings, aws: AwsClients | None = None) -> tuple[McpServer, ...]:
    """The servers MCP_SERVERS names, validated; none when it is unset. One in S3 or SSM is read with
    `aws`."""
    location = (settings.mcp_servers or "").strip()
    if not location:
        return ()
    if location.startswith(("{", "[")):
        try:
            document = json.loads(location)
        except ValueError as exc:
            raise ConfigError(f"{SETTING}: the JSON document is not valid: {exc}") from None
        return parse_servers(document)
    from rag_orchestrator.tools.catalog_source import read_catalog_document

    return parse_servers(read_catalog_document(location, aws, SETTING), f"{SETTING} {location}")
