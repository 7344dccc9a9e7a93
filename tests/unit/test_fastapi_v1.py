"""The API's FastAPI app without pydantic.v1 (api/fastapi_v1.py): not imported to build the app, its
OpenAPI document or its answers, and a v1 model still refused as FastAPI refuses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

BUILD = """
import json, sys
from fastapi.testclient import TestClient
from rag_orchestrator.api.app import API_ROUTERS, create_app
app = create_app(API_ROUTERS)
built = "pydantic.v1" in sys.modules
app.openapi()
documented = "pydantic.v1" in sys.modules
with TestClient(app) as client:
    listed = client.get("/api/v1/chat/conversations", headers={"X-Caller-Id": "alice"}).status_code
print(json.dumps([built, documented, listed, "pydantic.v1" in sys.modules, "fastapi" in sys.modules]))
"""


def test_the_api_app_is_built_documented_and_answers_without_importing_pydantic_v1():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "CONVERSATION_STORAGE": "memory"}
    done = subprocess.run([sys.executable, "-c", BUILD], capture_output=True, text=True, env=env, check=True)
    built, documented, listed, answered, fastapi = json.loads(done.stdout.strip().splitlines()[-1])
    assert (built, documented, listed, answered, fastapi) == (False, False, 200, False, True)


def test_a_pydantic_v1_model_is_still_refused_as_fastapi_refuses_it():
    from fastapi import FastAPI
    from fastapi.exceptions import PydanticV1NotSupportedError

    from rag_orchestrator.api.fastapi_v1 import skip_v1_import

    skip_v1_import()
    skip_v1_import()  # once is enough; twice wraps nothing twice
    from fastapi._compat import shared

    assert shared.is_pydantic_v1_model_class.guarded and not hasattr(
        shared.is_pydantic_v1_model_class, "__wrapped__"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pydantic import v1

    class Old(v1.BaseModel):
        name: str

    def take(body):  # type: ignore[no-untyped-def]
        return None

    take.__annotations__ = {"body": Old, "return": None}  # not a string: this module's annotations are
    with pytest.raises(PydanticV1NotSupportedError):
        FastAPI().post("/old")(take)
