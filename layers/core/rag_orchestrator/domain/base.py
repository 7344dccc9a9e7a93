"""Base model: camelCase on the wire, snake_case in Python."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class CamelModel(BaseModel):
    # defer_build: a model's validator is built on first use, not at import; a cold start pays only
    # for the models its first request touches (FastAPI builds its routes' models at start-up anyway).
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, defer_build=True
    )


class RequestBody(CamelModel):
    """A request body FastAPI validates: built when defined (about 1 ms a body at start-up)."""

    # FastAPI wraps a body in a TypeAdapter that a deferred model defers too; built on the first request,
    # outside FastAPI's guard, it warns of the `alias` FastAPI gives it (UnsupportedFieldAttributeWarning).
    model_config = CamelModel.model_config | {"defer_build": False}


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())
