"""frozen_start(): GC off while a function's app module loads, its objects frozen after; and what start-up
imports: the MCP SDK only where MCP_SERVERS names a server, and only at the first use of its tools."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest

from rag_orchestrator.startup import frozen_start


@pytest.fixture(autouse=True)
def collector():
    """Each test starts with the collector on and leaves nothing frozen behind."""
    gc.enable()
    yield
    gc.unfreeze()
    gc.enable()


def _scanned(obj: object) -> bool:
    """Whether a collection would still scan `obj` (a frozen object is in no generation)."""
    return any(o is obj for o in gc.get_objects())


def test_gc_is_off_while_building_and_what_was_built_is_frozen():
    with frozen_start():
        assert not gc.isenabled()
        built = {"schema": [1, 2]}
        assert _scanned(built)
    assert gc.isenabled()
    assert not _scanned(built)
    assert gc.get_freeze_count() > 0


def test_a_collector_the_process_turned_off_stays_off():
    gc.disable()
    with frozen_start():
        pass
    assert not gc.isenabled()


def test_a_failed_start_turns_the_collector_back_on():
    with pytest.raises(RuntimeError), frozen_start():
        raise RuntimeError("a bad setting")
    assert gc.isenabled()


IMPORTS = """
import json, os, sys
from rag_orchestrator.api.app import API_ROUTERS, STREAM_ROUTERS, create_app
create_app(STREAM_ROUTERS)
app = create_app(API_ROUTERS)
built = app.state.services.toolbox
sdk = lambda: sorted(
    {m.split(".")[0] for m in sys.modules} & {"mcp", "mcp_types", "httpx2"}
    | {m for m in sys.modules if m.startswith("rag_orchestrator.tools.mcp_")}
)
before = sdk()
from fastapi.testclient import TestClient  # Starlette's, which brings httpx2 along
with TestClient(app) as client:
    client.get("/api/v1/agent/tools", headers={"X-Caller-Id": "alice"})
print(json.dumps([before, sdk()]))
"""


def _sdk_modules(**env: str) -> list[list[str]]:
    """The MCP SDK's modules and our MCP tool modules loaded once the apps and their toolbox are built,
    and after a tool listing."""
    environ = {k: v for k, v in os.environ.items() if k != "MCP_SERVERS"}
    environ |= {"PYTHONPATH": os.pathsep.join(sys.path), "CONVERSATION_STORAGE": "memory", **env}
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS], capture_output=True, text=True, env=environ, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_mcp_client_loads_only_where_mcp_servers_is_set_and_then_at_first_use_without_the_sdk():
    assert _sdk_modules() == [[], ["httpx2"]]  # not even the MCP tool modules
    servers = json.dumps([{"name": "gone", "url": "http://127.0.0.1:9/mcp", "identity": "none"}])
    built, listed = _sdk_modules(MCP_SERVERS=servers)
    client = {"rag_orchestrator.tools.mcp_client", "rag_orchestrator.tools.mcp_session"}
    assert not ({"mcp", "mcp_types", "httpx2"} | client) & set(built)
    assert client <= set(listed)
    assert not {"mcp", "mcp_types"} & set(listed)  # the SDK's client (a second of imports) is not used


BOTO_AT_START = """
import json, sys
from rag_orchestrator.api.app import STREAM_ROUTERS, create_app
from rag_orchestrator.aws import AwsClients
aws = AwsClients()
create_app(STREAM_ROUTERS, aws=aws).state.services.toolbox
print(json.dumps([aws.made, sorted(set(sys.modules) & {"boto3", "botocore.session", "botocore.client"})]))
"""


def test_the_stream_app_makes_no_aws_client_before_its_first_request():
    """botocore's session, a client and an SSM call are a large part of a cold start: the first turn
    pays them, not the start-up before the function listens (Powertools imports botocore's top module
    alone)."""
    environ = os.environ | {
        "PYTHONPATH": os.pathsep.join(sys.path),
        "CONVERSATION_STORAGE": "dynamodb",
        "CONVERSATIONS_TABLE": "conversations",
        "TRANSCRIPTS_BUCKET": "transcripts",
        # deployed, with a model whose key is in SSM: building its strategy would fetch the key
        "AWS_LAMBDA_FUNCTION_NAME": "rag-orchestrator-test-ChatStreamFunction",
        "AUTH_MODE": "jwt",
        "JWT_ISSUER": "https://issuer.example.com",
        "JWT_AUDIENCE": "aud",
        "JWT_JWKS_URL": "https://issuer.example.com/jwks.json",
        "CONDENSE_FOLLOW_UPS": "true",  # the default deployed (the suite turns it off)
        "MODEL_STRATEGY": "openai_compatible",
        "OPENAI_COMPATIBLE_BASE_URL": "https://models.example/v1",
        "OPENAI_COMPATIBLE_MODEL": "m",
        "OPENAI_COMPATIBLE_API_KEY_PARAM": "/rag/model-key",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    done = subprocess.run(
        [sys.executable, "-c", BOTO_AT_START], capture_output=True, text=True, env=environ, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, []]


FASTAPI_IN_STREAM_APP = """
import json, sys
from rag_orchestrator.api.app import STREAM_ROUTERS, create_app
from starlette.testclient import TestClient
app = create_app(STREAM_ROUTERS)
built = sorted(m for m in sys.modules if m.split(".")[0] == "fastapi")
client = TestClient(app, raise_server_exceptions=False)
served = [
    client.get("/api/v1/agent/ping").status_code,
    client.post("/api/v1/chat/conversations/c/messages/stream", json={}, headers={"X-Caller-Id": "a"}).status_code,
    client.post("/api/v1/query/answer", content=b"{", headers={"content-type": "application/json"}).status_code,
]
after = sorted(m for m in sys.modules if m.split(".")[0] == "fastapi")
documented = client.get("/openapi.json").json()["paths"]
print(json.dumps([type(app).__name__, built, served, after, len(documented), "fastapi" in sys.modules]))
"""


def test_the_stream_app_never_imports_fastapi_until_its_document_is_asked_for():
    """FastAPI's import is ~0.27 s of CPU (bench/README.md): the streaming function's app is Starlette
    alone, its routes declared with api/routing.py; FastAPI comes in only to build /openapi.json."""
    environ = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path), "CONVERSATION_STORAGE": "memory"}
    done = subprocess.run(
        [sys.executable, "-c", FASTAPI_IN_STREAM_APP], capture_output=True, text=True, env=environ, check=True
    )
    kind, built, served, after, documented, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert (kind, built, after) == ("StreamApp", [], [])
    assert served == [200, 422, 400]  # a turn's body refused as FastAPI would; the answer route's 400
    assert documented >= 10 and loaded
