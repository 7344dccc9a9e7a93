"""The floor a hand-written service reaches: a minimal FastAPI app streaming a model through the `openai` SDK.

No auth, no store, no tools, no event log: the request's message goes to the model
(`FLOOR_MODEL_URL`, the bench's fake LLM) and each content delta goes out as an SSE `ResponseChunk`
event the moment it arrives, then `Completed`. bench/ttft.py times what it adds to the first token
beside what our chat-stream process adds; `python -m uvicorn bench.floor_app:app` serves it.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from openai import AsyncOpenAI

app = FastAPI()
client = AsyncOpenAI(base_url=os.environ.get("FLOOR_MODEL_URL", "http://127.0.0.1:8000/v1"), api_key="floor")


@app.post("/api/v1/chat/conversations/{conversation_id}/messages/stream")
async def stream(conversation_id: str, request: Request) -> StreamingResponse:
    message = (await request.json())["message"]

    async def events() -> AsyncIterator[str]:
        chunks = await client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": message}], stream=True
        )
        async for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                data = {"conversationId": conversation_id, "content": chunk.choices[0].delta.content}
                yield f"event: ResponseChunk\ndata: {json.dumps(data)}\n\n"
        yield f"event: Completed\ndata: {json.dumps({'conversationId': conversation_id})}\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")
