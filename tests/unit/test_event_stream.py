"""The answer stream's server-sent-events decoder: the event-stream rules, however the bytes are split,
and the same events as httpx-sse's decoder for the same bytes."""

from __future__ import annotations

import random

import pytest
from httpx_sse._decoders import SSEDecoder, SSELineDecoder

from rag_orchestrator.event_stream import EventStreamDecoder


def decode(chunks: list[bytes]) -> list[tuple[str, str]]:
    decoder = EventStreamDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.flush()


def httpx_sse_events(body: bytes) -> list[tuple[str, str]]:
    """httpx-sse's reading of the same body, keeping the events with data (the only ones a model
    stream's reader looks at)."""
    lines, fields = SSELineDecoder(), SSEDecoder()
    events = []
    for line in [*lines.decode(body.decode()), *lines.flush()]:
        sse = fields.decode(line.rstrip("\n"))
        if sse is not None and sse.data:
            events.append((sse.event, sse.data))
    return events


def every_split(body: bytes) -> list[list[bytes]]:
    return [[body[:i], body[i:]] for i in range(len(body) + 1)]


OPENAI = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: {"choices":[]}\n\ndata: [DONE]\n\n'


def test_a_model_stream_one_event_per_chunk():
    chunks = [part + b"\n\n" for part in OPENAI.split(b"\n\n") if part]
    assert decode(chunks) == [
        ("", '{"choices":[{"delta":{"content":"Hi"}}]}'),
        ("", '{"choices":[]}'),
        ("", "[DONE]"),
    ]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending_and_every_split_point_give_the_same_events(ending):
    body = OPENAI.replace(b"\n", ending)
    expected = decode([OPENAI])
    for chunks in every_split(body):
        assert decode(chunks) == expected, chunks


def test_comments_names_multiline_data_and_the_space_after_the_colon():
    body = (
        b": keep-alive\n\n"
        b'event: error\ndata: {"error": 1}\n\n'
        b"data:no space\ndata:  two spaces\n\n"
        b"event: only a name\n\n"
        b"data\n\n"
        b"id: 7\nretry: 10\nunknown: x\ndata: after other fields\n\n"
    )
    assert decode([body]) == [
        ("error", '{"error": 1}'),
        ("", "no space\n two spaces"),
        ("", ""),
        ("", "after other fields"),
    ]


def test_an_event_without_its_blank_line_is_not_dispatched():
    assert decode([b"data: complete\n\ndata: cut off"]) == [("", "complete")]
    assert decode([b"data: ends on a CR\r\r"]) == [("", "ends on a CR")]


def test_an_event_named_in_one_chunk_keeps_its_name_in_the_fast_path():
    assert decode([b"event: error\n", b"data: {}\n\n", b"data: {}\n\n"]) == [("error", "{}"), ("", "{}")]


def test_invalid_utf8_is_replaced_as_a_text_decoder_would():
    assert decode([b"data: caf\xc3\n\n"]) == [("", "caf\ufffd")]
    assert decode([b"data: caf\xc3", b"\xa9\n\n"]) == [("", "café")]


def test_random_streams_read_as_httpx_sse_reads_them():
    rng = random.Random(22)
    pieces = [b"data: ", b"data:", b"event: ", b"error", b": c", b"id: 1", b"x", b"{}", b" ", b"\xc3\xa9"]
    endings = [b"\n", b"\r\n", b"\r"]
    for _ in range(500):
        body = b"".join(
            rng.choice(pieces) + (rng.choice(endings) if rng.random() < 0.6 else b"") for _ in range(12)
        )
        cuts = sorted(rng.sample(range(len(body) + 1), k=min(3, len(body) + 1)))
        chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert [event for event in decode(chunks) if event[1]] == httpx_sse_events(body), body
