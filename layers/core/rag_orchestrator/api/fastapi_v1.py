"""FastAPI without its import of pydantic.v1 (~0.15 s of the API function's cold start).

FastAPI 0.163 asks of every route parameter it builds, and of a value it cannot otherwise encode, whether
it is a pydantic v1 model, only to refuse one with a clear error (it no longer supports them). To ask, it
imports `pydantic.v1`. A v1 model cannot exist before `pydantic.v1` is imported, so until then the answer
is no and nothing needs importing; once anything has imported it, FastAPI's own check answers as before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

V1 = "pydantic.v1"
CHECKS = ("is_pydantic_v1_model_class", "is_pydantic_v1_model_instance")


def skip_v1_import() -> None:
    """Put the guard in front of FastAPI's two checks, where its modules look them up (once)."""
    from fastapi import encoders
    from fastapi._compat import shared

    for module in (shared, encoders):
        for name in CHECKS:
            check = getattr(module, name, None)
            if check is not None and not getattr(check, "guarded", False):
                setattr(module, name, _guarded(check))


def _guarded(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def guarded(value: Any) -> bool:
        return V1 in sys.modules and check(value)

    guarded.guarded = True  # type: ignore[attr-defined]
    return guarded
