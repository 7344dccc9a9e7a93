"""The four roles as the app sees them: `mod` and its alias `moderator`, through the dev headers and a
real JWT (verified against a JWKS on loopback): the moderator prompt, tools, the audit route."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.loop.prompts import ROLE_BLOCKS
from tests.fakes.llm_script import text_reply

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"
ISSUER = "https://issuer.example.com"
CATALOG = """
tools:
  - name: hide_review
    description: Hide a product review that is spam or abusive
    roles: [moderator]
    inputSchema: {type: object, properties: {reviewId: {type: string}}, required: [reviewId]}
    http: {method: PATCH, url: "https://reviews.example.com/reviews/{reviewId}"}
  - name: ban_account
    description: Ban an account that keeps breaking the rules
    roles: [mod, admin]
    inputSchema: {type: object, properties: {accountId: {type: string}}, required: [accountId]}
    http: {method: POST, url: "https://accounts.example.com/bans"}
"""


@pytest.fixture
def app_for(fake_llm, jwks, monkeypatch, tmp_path):
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(CATALOG)
    monkeypatch.setenv("TOOL_CATALOG_PATH", str(catalog))
    monkeypatch.setenv("LOOP_INITIAL_RAG", "false")
    for key, value in fake_llm.settings_for("openai_compatible").items():
        monkeypatch.setenv(key.upper(), str(value))

    def build(auth_mode: str) -> TestClient:
        monkeypatch.setenv("AUTH_MODE", auth_mode)
        monkeypatch.setenv("JWT_ISSUER", ISSUER)
        monkeypatch.setenv("JWT_JWKS_URL", jwks.url)
        return TestClient(create_app(ALL_ROUTERS))

    return build


def token(jwks, groups: list[str], sub: str = "mo") -> dict:
    now = int(time.time())
    claims = {"sub": sub, "iss": ISSUER, "iat": now, "exp": now + 600, "cognito:groups": groups}
    return {"Authorization": f"Bearer {jwks.keys[0].sign(claims)}"}


def system_prompt_for(client: TestClient, fake_llm, headers: dict) -> str:
    cid = client.post(BASE, json={}, headers=headers).json()["conversationId"]
    fake_llm.script(text_reply("Done."))
    response = client.post(f"{BASE}/{cid}/messages", json={"message": "Review the reports"}, headers=headers)
    assert response.status_code == 200, response.text
    return fake_llm.requests[-1]["messages"][0]["content"]


@pytest.mark.parametrize("role", ["moderator", "mod"])
def test_a_mod_gets_the_moderator_prompt_through_the_dev_header_and_the_jwt(app_for, fake_llm, jwks, role):
    dev = app_for("dev")
    header = {"X-Caller-Id": "mo", "X-Caller-Roles": role}
    prompt = system_prompt_for(dev, fake_llm, header)
    assert ROLE_BLOCKS["mod"] in prompt and ROLE_BLOCKS["user"] not in prompt

    signed = app_for("jwt")
    prompt = system_prompt_for(signed, fake_llm, token(jwks, [role]))
    assert ROLE_BLOCKS["mod"] in prompt and ROLE_BLOCKS["user"] not in prompt
    user_prompt = system_prompt_for(signed, fake_llm, token(jwks, ["user"], sub="alice"))
    assert ROLE_BLOCKS["user"] in user_prompt and ROLE_BLOCKS["mod"] not in user_prompt


def test_moderator_and_mod_name_the_same_role_for_tools_and_the_audit_route(app_for, jwks):
    client = app_for("jwt")
    for groups in (["moderator"], ["mod"], "[moderator user]"):
        listed = client.get("/api/v1/agent/tools", headers=token(jwks, groups)).json()["tools"]
        assert {"hide_review", "ban_account"} <= {t["name"] for t in listed}, groups
    user = client.get("/api/v1/agent/tools", headers=token(jwks, ["user"], sub="alice")).json()["tools"]
    assert not {"hide_review", "ban_account"} & {t["name"] for t in user}

    cid = client.post(BASE, json={}, headers=token(jwks, ["user"], sub="alice")).json()["conversationId"]
    params = {"conversationId": cid}
    assert (
        client.get("/api/v1/admin/audit", params=params, headers=token(jwks, ["moderator"])).status_code
        == 200
    )
    refused = client.get("/api/v1/admin/audit", params=params, headers=token(jwks, ["user"], sub="alice"))
    assert refused.status_code == 403
    assert set(refused.json()) == {"error", "message", "timestamp", "requestId"}
