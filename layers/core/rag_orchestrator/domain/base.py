"""Base model: camelCase on the wire, snake_case in Python."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

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


def in_utc(moment: datetime) -> datetime:
    """`moment` in UTC (without an offset: taken as UTC). A valid time whose UTC is outside what a
    datetime holds (`0001-01-01T00:00:00+14:00`, `9999-12-31T23:59:59-14:00`) means "from the beginning"
    or "until the end": datetime.min or datetime.max, in UTC."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        ahead = (moment.utcoffset() or timedelta()) > timedelta()  # east of UTC: its UTC is earlier
        return (datetime.min if ahead else datetime.max).replace(tzinfo=UTC)


def new_id() -> str:
    return str(uuid.uuid4())
