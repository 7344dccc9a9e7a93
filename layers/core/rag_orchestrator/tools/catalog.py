"""The tool catalogue (catalog.example.yaml, docs/operations.md): HTTP tools declared in YAML or JSON, validated at start.

Every problem is a ConfigError that names the tool and the field. With no TOOL_CATALOG_PATH the
catalogue is empty: only `rag_search` is offered. `catalog.example.yaml` beside this module documents
every field. TOOL_CATALOG_PATH is a file, an S3 object (`s3://bucket/key.yaml`) or an SSM parameter
(`ssm:/name`), read once when a function starts. `${NAME}` in a URL or header is the environment
variable NAME; in Lambda, else the secret NAME_PARAM names, else `<TOOL_SECRETS_PREFIX>NAME`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from rag_orchestrator.config import Settings, in_lambda
from rag_orchestrator.domain.callers import ANONYMOUS, normalise_roles
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.tools.catalog_source import read_catalog_document
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH
from rag_orchestrator.tools.schema_check import plainly_valid

if TYPE_CHECKING:
    from rag_orchestrator.aws import AwsClients
    from rag_orchestrator.ssm_params import SecretReader

EXAMPLE_PATH = Path(__file__).with_name("catalog.example.yaml")
PreviewType = Literal["workflow_preview", "table_config_preview"]
Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
Identity = Literal["assertion", "caller-token", "none"]
CONTEXT_SOURCE, CLAIM_SOURCE = "context", "claim:"
ASSERTION_HEADER = "X-Caller-Assertion"
# The header each identity sends; a catalogue header of the same name would be overwritten.
IDENTITY_HEADERS = {"assertion": ASSERTION_HEADER, "caller-token": "Authorization"}

PATH_PARAM = re.compile(r"(?<!\$)\{([^{}]*)\}")
SECRET_REF = re.compile(r"\$\{([^{}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Lookup = Callable[[str], str | None]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, frozen=True)


def _labels(values: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    if not values:
        raise ValueError("must not be empty: omit the field instead")
    if any(not v.strip() for v in values):
        raise ValueError("entries must be non-empty strings")
    return tuple(dict.fromkeys(values))


def _roles(values: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """Role labels as callers carry them (`moderator` is `mod`)."""
    labels = _labels(values)
    return None if labels is None else normalise_roles(labels)


class HttpSpec(_Strict):
    method: Method
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float | None = Field(None, gt=0, le=60)
    # Pinned parameters, name -> source (`context`, or `claim:<name>`): the service fills them, the
    # model never sees nor sets them (docs/tools.md). The list form means `context` for each name.
    context_params: dict[str, str] = Field(default_factory=dict)
    attachment_params: tuple[str, ...] = ()  # the model sends an attachment id; the tool gets a GET URL
    identity: Identity = "assertion"  # how the tool's API learns who the caller is

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("context_params", mode="before")
    @classmethod
    def _sources(cls, value: object) -> object:
        if isinstance(value, (list, tuple)):
            if len(set(value)) != len(value):
                raise ValueError("each parameter may be named once")
            return dict.fromkeys(value, CONTEXT_SOURCE)
        return value

    @field_validator("context_params")
    @classmethod
    def _check_sources(cls, value: dict[str, str]) -> dict[str, str]:
        for name, source in value.items():
            if source != CONTEXT_SOURCE and not (
                source.startswith(CLAIM_SOURCE) and source[len(CLAIM_SOURCE) :]
            ):
                raise ValueError(
                    f"{name}: the source must be 'context' or 'claim:<claim name>', not {source!r}"
                )
        return value


class RagSearchSpec(_Strict):
    roles: tuple[str, ...] | None = None

    @field_validator("roles")
    @classmethod
    def _check_roles(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _roles(value)


class ToolSpec(_Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str = Field(min_length=1, max_length=2000)
    example_queries: tuple[str, ...] = ()
    contexts: tuple[str, ...] | None = None
    core: bool = False
    roles: tuple[str, ...] | None = None
    input_schema: dict[str, Any]
    http: HttpSpec
    preview: PreviewType | None = None
    approval: Literal["required"] | None = (
        None  # required: run only once its caller approves (docs/approvals.md)
    )

    @field_validator("contexts")
    @classmethod
    def _check_labels(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _labels(value)

    @field_validator("roles")
    @classmethod
    def _check_roles(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _roles(value)

    @property
    def path_params(self) -> list[str]:
        return PATH_PARAM.findall(self.http.url)

    def embed_text(self) -> str:
        """The text a tool is embedded by for selection: `{name} — {description} | {example} | …`."""
        return " | ".join([f"{self.name} — {self.description}", *self.example_queries])


class Catalog(_Strict):
    rag_search: RagSearchSpec = Field(default_factory=RagSearchSpec)
    tools: tuple[ToolSpec, ...] = ()


def environment_secrets(secrets: SecretReader | None) -> Lookup:
    """`${NAME}`: the environment variable NAME, else in Lambda the secret `NAME_PARAM` names, else the
    secret NAME under TOOL_SECRETS_PREFIX (an SSM path or a Secrets Manager name prefix: the one place
    the template lets functions read), read through `secrets` (the composition root's)."""

    def lookup(name: str) -> str | None:
        value = os.environ.get(name)
        if value is not None:
            return value
        prefix = os.environ.get("TOOL_SECRETS_PREFIX")
        parameter = os.environ.get(f"{name}_PARAM") or (f"{prefix}{name}" if prefix else None)
        if not (parameter and in_lambda()):
            return None
        try:
            if secrets is None:
                raise LookupError("no AWS clients given")
            return secrets.read(parameter)
        except Exception:  # a bad reference, or Powertools' GetParameterError: missing, or not readable
            raise ValueError(f"${{{name}}}: the secret {parameter} cannot be read") from None

    return lookup


environment_secret = environment_secrets(None)  # the environment's values; no AWS (tests, local runs)


def resolve(text: str, lookup: Lookup = environment_secret) -> str:
    """`text` with every `${NAME}` replaced; raises ValueError naming what cannot be resolved."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if not _ENV_NAME.match(name):
            raise ValueError(f"${{{name}}} is not a valid variable name")
        found = lookup(name)
        if found is None:
            raise ValueError(f"${{{name}}} is not set (set {name}, or {name}_PARAM in Lambda)")
        return found

    return SECRET_REF.sub(value, text)


def _schema_problems(schema: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if not plainly_valid(schema):  # jsonschema is imported only for a schema beyond plain typed properties
        from jsonschema import Draft202012Validator, SchemaError

        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            where = ".".join(str(p) for p in exc.path)
            yield f"inputSchema{'.' + where if where else ''}", exc.message
            return
    if schema.get("type") != "object":
        yield "inputSchema.type", "must be 'object'"


def _problems(spec: ToolSpec, lookup: Lookup) -> Iterator[tuple[str, str]]:
    """Cross-field rules pydantic cannot express, as (field, problem)."""
    if spec.name == RAG_SEARCH:
        yield "name", f"{RAG_SEARCH} is built in; configure it under ragSearch"
    if spec.roles and ANONYMOUS in spec.roles:
        yield "roles", "anonymous callers get no tools (docs/auth.md)"
    yield from _schema_problems(spec.input_schema)
    properties = spec.input_schema.get("properties") or {}
    required = set(spec.input_schema.get("required") or ())
    try:
        url = resolve(spec.http.url, lookup)
    except ValueError as exc:
        yield "http.url", str(exc)
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        yield "http.url", "must be an absolute http or https URL"
    elif "{" in parts.netloc or "}" in parts.netloc:
        yield "http.url", "parameters may only appear in the path, never in the host"
    elif parts.username or parts.password:
        yield "http.url", "must not carry credentials; use headers"
    for param in spec.path_params:
        if param not in properties:
            yield "http.url", f"{{{param}}} is not a property of inputSchema"
        elif param not in required and param not in spec.http.context_params:
            yield "http.url", f"{{{param}}} must be required in inputSchema or listed in contextParams"
    for param in spec.http.context_params:
        if param not in properties:
            yield "http.contextParams", f"{param} is not a property of inputSchema"
    yield from _attachment_problems(spec, properties)
    identity_header = IDENTITY_HEADERS.get(spec.http.identity, "").lower()
    for header, value in spec.http.headers.items():
        if header.lower() == identity_header:
            yield f"http.headers.{header}", f"identity {spec.http.identity} sends this header itself"
        try:
            resolve(value, lookup)
        except ValueError as exc:
            yield f"http.headers.{header}", str(exc)


def _attachment_problems(spec: ToolSpec, properties: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """An attachment parameter is a string property the model fills, sent in the query or the body."""
    for param in spec.http.attachment_params:
        where = "http.attachmentParams"
        if param not in properties:
            yield where, f"{param} is not a property of inputSchema"
        elif (properties[param] or {}).get("type") != "string":
            yield where, f"{param} must be of type string in inputSchema (it holds an attachment id)"
        elif param in spec.path_params:
            yield where, f"{param} cannot be a path parameter: a URL does not fit in one path segment"
        elif param in spec.http.context_params:
            yield where, f"{param} cannot also be in contextParams"
    if len(set(spec.http.attachment_params)) != len(spec.http.attachment_params):
        yield "http.attachmentParams", "each parameter may be named once"


def _describe(exc: ValidationError, prefix: str = "") -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(entry)"
    message = error["msg"].removeprefix("Value error, ")
    return f"{prefix}{where}: {message}"


def parse_catalog(document: Any, source: str = "catalogue", lookup: Lookup = environment_secret) -> Catalog:
    """Validate a parsed catalogue document; raise ConfigError naming the tool and field at fault."""
    if document is None:
        return Catalog()
    if not isinstance(document, dict):
        raise ConfigError(f"{source}: must be a mapping with a `tools` list")
    unknown = sorted(set(document) - {"tools", "ragSearch"})
    if unknown:
        raise ConfigError(f"{source}: unknown field(s) {', '.join(unknown)}")
    try:
        rag = RagSearchSpec.model_validate(document.get("ragSearch") or {})
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc, 'ragSearch.')}") from None
    if rag.roles and ANONYMOUS in rag.roles:
        raise ConfigError(f"{source}: ragSearch.roles: anonymous callers get no tools (docs/auth.md)")
    raw_tools = document.get("tools") or []
    if not isinstance(raw_tools, list):
        raise ConfigError(f"{source}: tools: must be a list")
    tools: dict[str, ToolSpec] = {}
    for index, raw in enumerate(raw_tools):
        label = repr(raw["name"]) if isinstance(raw, dict) and "name" in raw else f"#{index + 1}"
        try:
            spec = ToolSpec.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"{source}: tool {label}: {_describe(exc)}") from None
        for field, problem in _problems(spec, lookup):
            raise ConfigError(f"{source}: tool {label}: {field}: {problem}")
        if spec.name in tools:
            raise ConfigError(f"{source}: tool {label}: name: duplicate tool name")
        tools[spec.name] = spec
    return Catalog.model_construct(rag_search=rag, tools=tuple(tools.values()))


def load_catalog(
    settings: Settings, lookup: Lookup = environment_secret, aws: AwsClients | None = None
) -> Catalog:
    """The catalogue TOOL_CATALOG_PATH names, validated; empty (rag_search only) when it is unset.
    One in S3 or SSM is read with `aws`."""
    location = settings.tool_catalog_path
    if not location:
        return Catalog()
    return parse_catalog(read_catalog_document(location, aws), location, lookup)
