"""AUTH_MODE=jwt: RS256 tokens verified against a JWKS served over real HTTP on loopback."""

import time
import uuid

import jwt
import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import create_app, mount
from rag_orchestrator.api.auth import get_caller
from rag_orchestrator.api.jwt_verifier import JwksCache
from rag_orchestrator.api.routing import Depends, Router
from rag_orchestrator.domain.callers import Caller
from tests.fakes.jwks_server import SigningKey

pytestmark = pytest.mark.integration

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_TEST"
AUDIENCE = "app-client-123"

whoami = Router()  # declared, as the streaming function's routes are


@whoami.get("/whoami")
def who(caller: Caller = Depends(get_caller)) -> dict:
    return {"callerId": caller.caller_id, "roles": list(caller.roles)}


@whoami.get("/whoami/claims")
def claims_of(caller: Caller = Depends(get_caller)) -> dict:
    return {"accountId": caller.claims.get("custom:accountId"), "token": caller.token}


@pytest.fixture
def client(jwks, monkeypatch):
    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", ISSUER)
    monkeypatch.setenv("JWT_AUDIENCE", AUDIENCE)
    monkeypatch.setenv("JWT_JWKS_URL", jwks.url)
    app = create_app(["health", "conversations"])
    mount(app, whoami)
    return TestClient(app)


def claims(**overrides) -> dict:
    now = int(time.time())
    base = {
        "sub": "user-42",
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now,
        "exp": now + 600,
        "token_use": "id",
        "cognito:groups": ["admin", "user"],
    }
    return {k: v for k, v in (base | overrides).items() if v is not None}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def assert_refused(response, token: str | None = None) -> dict:
    assert response.status_code == 401, response.text
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"}
    assert response.headers["www-authenticate"] == "Bearer"
    if token:
        assert token not in response.text
    return body


def test_a_valid_token_names_the_caller_and_roles(client, jwks):
    token = jwks.keys[0].sign(claims())
    response = client.get("/whoami", headers=bearer(token))
    assert response.status_code == 200
    assert response.json() == {"callerId": "user-42", "roles": ["admin", "user"]}
    created = client.post("/api/v1/chat/conversations", json={}, headers=bearer(token))
    assert created.status_code == 201
    assert created.json()["callerId"] == "user-42"


def test_a_cognito_access_token_matches_on_client_id(client, jwks):
    token = jwks.keys[0].sign(claims(aud=None, client_id=AUDIENCE, token_use="access"))
    assert client.get("/whoami", headers=bearer(token)).status_code == 200


def test_keys_are_fetched_once_per_process(client, jwks):
    for _ in range(3):
        assert client.get("/whoami", headers=bearer(jwks.keys[0].sign(claims()))).status_code == 200
    assert jwks.requests == 1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"iss": "https://evil.example.com"}, "issuer"),
        ({"aud": "another-client"}, "audience"),
        ({"aud": None, "client_id": "another-client"}, "audience"),
        ({"token_use": "refresh"}, "use"),
        ({"exp": None}, "Invalid"),
    ],
)
def test_bad_claims_are_refused(client, jwks, overrides, message):
    token = jwks.keys[0].sign(claims(**overrides))
    body = assert_refused(client.get("/whoami", headers=bearer(token)), token)
    assert message in body["message"]


@pytest.mark.parametrize(
    "sub",
    ["user\ud800-1", "user\x00-1", "user\x85-1", "user\u202e-1", "u" * 257, "   ", "\U00020000" * 129],
    ids=["lone-surrogate", "nul", "c1-control", "bidi-override", "too-long", "blank", "over-512-bytes"],
)
def test_a_caller_id_claim_that_cannot_name_a_caller_is_refused_with_401(client, jwks, sub):
    """The identity provider signed it, but it cannot key a caller's data (a surrogate cannot be
    stored at all), or would read otherwise than it is: refused before anything is read or written."""
    token = jwks.keys[0].sign(claims(sub=sub))
    for response in (
        client.get("/whoami", headers=bearer(token)),
        client.post("/api/v1/chat/conversations", json={}, headers=bearer(token)),
    ):
        assert "sub claim" in assert_refused(response, token)["message"]


@pytest.mark.parametrize(
    "sub", ["auth0|5f7c8ec7a1b2", "X/b#c", "müller@example.com", "u" * 256, "\U00020000" * 128]
)
def test_unusual_but_plain_caller_ids_are_kept_as_they_are(client, jwks, sub):
    token = jwks.keys[0].sign(claims(sub=sub))
    assert client.get("/whoami", headers=bearer(token)).json()["callerId"] == sub
    created = client.post("/api/v1/chat/conversations", json={}, headers=bearer(token))
    assert created.status_code == 201 and created.json()["callerId"] == sub


def test_a_tampered_signature_is_refused(client, jwks):
    token = jwks.keys[0].sign(claims())
    header, payload, signature = token.split(".")
    forged_payload = jwt.utils.base64url_encode(
        b'{"sub":"admin","iss":"%s","exp":9999999999}' % ISSUER.encode()
    )
    assert_refused(client.get("/whoami", headers=bearer(f"{header}.{forged_payload.decode()}.{signature}")))
    flipped = signature[:-2] + ("AA" if not signature.endswith("AA") else "BB")
    assert_refused(client.get("/whoami", headers=bearer(f"{header}.{payload}.{flipped}")))


def test_a_token_signed_by_a_key_not_in_the_set_is_refused(client, jwks):
    stranger = SigningKey("key-1")  # same kid, different key
    assert_refused(client.get("/whoami", headers=bearer(stranger.sign(claims()))))


def test_alg_none_and_hs256_are_refused(client, jwks):
    unsigned = jwt.encode(claims(), None, algorithm="none", headers={"kid": "key-1"})
    body = assert_refused(client.get("/whoami", headers=bearer(unsigned)))
    assert "algorithm" in body["message"]
    # The classic confusion attack: HMAC keyed with the RSA public key.
    public_pem = jwks.keys[0].jwk()["n"].encode()
    hs = jwt.encode(claims(), public_pem, algorithm="HS256", headers={"kid": "key-1"})
    assert "algorithm" in assert_refused(client.get("/whoami", headers=bearer(hs)))["message"]


def test_malformed_and_missing_tokens_are_refused(client):
    assert_refused(client.get("/whoami", headers=bearer("not.a.token")))
    assert_refused(client.get("/whoami", headers={"Authorization": "Basic dXNlcjpwYXNz"}))
    assert_refused(client.get("/api/v1/chat/conversations"))
    assert_refused(client.get("/api/v1/chat/conversations", headers={"X-Caller-Id": "alice"}))


def test_a_bearer_token_over_8_kb_is_refused_before_any_verification(client, jwks):
    # Signed with a key the set has and valid otherwise: only its size refuses it, before any of it
    # is parsed, and before the key set is fetched (the issue's 900 KB token was verified in full).
    huge = jwks.keys[0].sign(claims(padding="x" * 9000))
    body = assert_refused(client.get("/whoami", headers=bearer(huge)), huge)
    assert body["message"] == "Bearer token is too large" and jwks.requests == 0
    fits = jwks.keys[0].sign(claims(padding="x" * 4000))  # ~6 KB once encoded
    assert client.get("/whoami", headers=bearer(fits)).status_code == 200


def test_the_claims_travel_with_the_caller_and_the_dev_claims_header_is_not_read(client, jwks):
    token = jwks.keys[0].sign(claims(**{"custom:accountId": "acct-1001"}))
    forged = {"X-Caller-Claims": '{"custom:accountId": "acct-2002"}'}
    answered = client.get("/whoami/claims", headers=bearer(token) | forged).json()
    assert answered == {"accountId": "acct-1001", "token": token}


def test_an_unknown_kid_is_refused_after_one_refetch(client, jwks, monkeypatch):
    monkeypatch.setattr(JwksCache, "refresh_interval_seconds", 0.0)
    assert client.get("/whoami", headers=bearer(jwks.keys[0].sign(claims()))).status_code == 200
    assert jwks.requests == 1
    stranger = SigningKey("key-unknown")
    body = assert_refused(client.get("/whoami", headers=bearer(stranger.sign(claims()))))
    assert "unknown key" in body["message"]
    assert jwks.requests == 2


def test_a_rotated_key_is_picked_up_by_the_refetch(client, jwks, monkeypatch):
    monkeypatch.setattr(JwksCache, "refresh_interval_seconds", 0.0)
    assert client.get("/whoami", headers=bearer(jwks.keys[0].sign(claims()))).status_code == 200
    jwks.keys.append(SigningKey("key-2"))
    assert client.get("/whoami", headers=bearer(jwks.keys[1].sign(claims()))).status_code == 200
    assert jwks.requests == 2


def test_refetches_on_unknown_kids_are_rate_limited(client, jwks):
    assert client.get("/whoami", headers=bearer(jwks.keys[0].sign(claims()))).status_code == 200
    for i in range(5):
        assert_refused(client.get("/whoami", headers=bearer(SigningKey(f"junk-{i}").sign(claims()))))
    assert jwks.requests == 1


def test_an_unreachable_issuer_is_a_503_until_its_keys_are_fetched_again(monkeypatch):
    """Not a 401 "unknown key" while fetches are held back: the token may be good, the outage is ours."""
    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", ISSUER)
    monkeypatch.setenv("JWT_JWKS_URL", f"http://127.0.0.1:9/{uuid.uuid4().hex}/jwks.json")  # nothing listens
    app = create_app(["health"])
    mount(app, whoami)
    token = SigningKey("key-1").sign(claims())
    for _ in range(3):
        response = TestClient(app).get("/whoami", headers=bearer(token))
        assert response.status_code == 503, response.text
        assert response.json()["error"] == "Identity provider unavailable"
        assert response.headers["retry-after"] == "5"


def test_api_gateway_authorizer_claims_are_used_without_verifying(jwks, monkeypatch):
    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", ISSUER)
    monkeypatch.setenv("JWT_JWKS_URL", jwks.url)
    app = create_app(["health"])
    mount(app, whoami)
    event = {
        "requestContext": {"authorizer": {"jwt": {"claims": {"sub": "gw-user", "cognito:groups": "[admin]"}}}}
    }

    async def behind_api_gateway(scope, receive, send):
        if scope["type"] == "http":
            scope["aws.event"] = event
        await app(scope, receive, send)

    response = TestClient(behind_api_gateway).get("/whoami")
    assert response.status_code == 200
    assert response.json() == {"callerId": "gw-user", "roles": ["admin"]}
    assert jwks.requests == 0
