"""The chat client reads the answer's body decoded as the server encoded it, and takes only http(s) URLs."""

from __future__ import annotations

import gzip

import httpx
import pytest

from rag_orchestrator.errors import ConfigError
from rag_orchestrator.providers.openai_compat import ChatClient, RetryPolicy

BODY = (
    b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\ndata: {"choices":[{"delta":{"content":"lo"}}]}\n\n'
)


@pytest.mark.parametrize("encoding", [None, "identity", "gzip"])
async def test_an_encoded_or_plain_body_gives_the_same_deltas(encoding):
    def answer(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream"}
        if encoding:
            headers["content-encoding"] = encoding
        return httpx.Response(
            200, headers=headers, content=gzip.compress(BODY) if encoding == "gzip" else BODY
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        client = ChatClient(
            provider="test",
            base_url="http://model.invalid/v1",
            api_key=None,
            timeout_seconds=5,
            idle_timeout_seconds=5,
            retry=RetryPolicy(max_retries=0),
            http_client=http,
        )
        deltas = [delta async for delta in client.stream({"model": "m", "messages": []})]
    assert [delta.content for delta in deltas] == ["Hel", "lo"]


@pytest.mark.parametrize("base_url", ["ftp://model.example/v1", "model.example/v1", ""])
def test_a_base_url_that_is_not_http_is_a_configuration_error(base_url):
    with pytest.raises(ConfigError, match="must start with http:// or https://"):
        ChatClient(
            provider="test",
            base_url=base_url,
            api_key=None,
            timeout_seconds=5,
            idle_timeout_seconds=5,
            retry=RetryPolicy(),
        )
