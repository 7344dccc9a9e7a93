"""Image captions from a vision-capable OpenAI-compatible model: the image goes as a base64 data URL."""

from __future__ import annotations

import base64
from typing import Any

import httpx

from rag_orchestrator import tls
from rag_orchestrator.attachments.uploads import EngineUnavailable, UnsupportedContent, Upload
from rag_orchestrator.config import Settings
from rag_orchestrator.observability import logger

PROMPT = (
    "Describe this image in two or three plain sentences for someone who cannot see it: what it shows, "
    "and any text that matters. Do not guess at what is not visible."
)
MAX_IMAGE_BYTES = 15 * 1024 * 1024  # base64 adds a third; vision endpoints take about 20 MB per request
MAX_CAPTION_TOKENS = 300
ATTEMPTS = 2


class VisionCaptioner:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        *,
        timeout_seconds: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout_seconds
        self._transport = transport

    @classmethod
    def from_settings(cls, settings: Settings) -> VisionCaptioner:
        return cls(
            settings.attachment_caption_base_url or "",
            settings.attachment_caption_model or "",
            settings.secret("attachment_caption_api_key"),
            timeout_seconds=settings.model_timeout_seconds,
        )

    def caption(self, upload: Upload) -> str:
        body = upload.body()
        if len(body) > MAX_IMAGE_BYTES:
            raise UnsupportedContent("the image is too large to describe")
        data_url = f"data:{upload.content_type};base64,{base64.b64encode(body).decode()}"
        payload = {
            "model": self._model,
            "stream": False,
            "max_tokens": MAX_CAPTION_TOKENS,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": PROMPT},
                        {"type": "image_url", "image_url": {"url": data_url}},
                    ],
                }
            ],
        }
        return _text_of(self._post(payload))

    def _post(self, payload: dict[str, Any]) -> Any:
        with httpx.Client(timeout=self._timeout, verify=tls.context(), transport=self._transport) as http:
            for attempt in range(ATTEMPTS):
                try:
                    response = http.post(self._url, json=payload, headers=self._headers)
                except httpx.HTTPError as exc:
                    logger.warning("caption model unreachable", extra={"error_type": type(exc).__name__})
                    continue
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        break
                # The body is the provider's: it never leaves the log (and there only its status).
                logger.warning(
                    "caption model refused", extra={"status": response.status_code, "attempt": attempt}
                )
                if response.status_code not in (408, 429, 500, 502, 503, 504):
                    break
        raise EngineUnavailable("the caption model did not answer")


def _text_of(answer: Any) -> str:
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise EngineUnavailable("the caption model answered without a caption") from None
    if isinstance(content, list):  # some servers answer in content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "").strip()
