"""ToolSelector: the three stages, roles, and every branch of the degradation tree."""

from __future__ import annotations

import math

import pytest

from rag_orchestrator.text.hashing import HashingEmbedder
from rag_orchestrator.tools import selection
from rag_orchestrator.tools.selection import Offer, ToolIndex, ToolSelector, index_key, normalized

OFFERS = [
    Offer("rag_search", "", core=True),
    Offer("list_orders", "list_orders — list orders", contexts=("orders",), core=True),
    Offer("get_order_status", "get_order_status — order status | where is my order", contexts=("orders",)),
    Offer("cancel_order", "cancel_order — cancel an order", contexts=("orders",)),
    Offer("refund_order", "refund_order — refund an order", contexts=("orders",), roles=("admin",)),
    Offer("run_workflow", "run_workflow — run a workflow now", contexts=("workflow",)),
    Offer("reset_password", "reset_password — reset a forgotten password"),
    Offer("open_ticket", "open_ticket — talk to support"),
    Offer("hide_review", "hide_review — hide a spam review", roles=("moderator",)),
]
USER = ("user",)


class CountingEmbedder(HashingEmbedder):
    def __init__(self, *, fail_batch=0, fail_query=0):
        super().__init__(256)
        self.batches = 0
        self.fail_batch = fail_batch
        self.fail_query = fail_query

    def embed_batch(self, texts):
        self.batches += 1
        if self.fail_batch:
            self.fail_batch -= 1
            raise ConnectionError("embedder down")
        return [HashingEmbedder.embed(self, text) for text in texts]

    def embed(self, text):
        if self.fail_query:
            self.fail_query -= 1
            raise ConnectionError("embedder down")
        return super().embed(text)


@pytest.fixture
def warnings(monkeypatch):
    seen: list[tuple[str, dict]] = []
    monkeypatch.setattr(selection.logger, "warning", lambda msg, extra=None: seen.append((msg, extra)))
    return seen


def make(embedder=None, top_k=2, **kwargs):
    return ToolSelector(OFFERS, embedder=embedder or CountingEmbedder(), top_k=top_k, **kwargs)


async def test_context_filter_then_top_k_then_core_tools_first():
    offered = await make().select("where is my order 12", "orders", USER)
    assert offered[:2] == ["rag_search", "list_orders"]
    assert offered[2] == "get_order_status" and len(offered) == 4  # two core + top 2
    assert "run_workflow" not in offered and "refund_order" not in offered


async def test_tools_without_contexts_compete_in_every_context():
    offered = await make(top_k=1).select("I forgot my password", "workflow", USER)
    assert offered == ["rag_search", "reset_password"]


async def test_without_a_context_type_every_tool_competes_and_only_context_free_core_tools_are_forced():
    offered = await make(top_k=1).select("please run the workflow now", None, USER)
    assert offered == ["rag_search", "run_workflow"]


async def test_roles_decide_which_tools_are_candidates():
    chooser = make(top_k=10)
    assert "refund_order" not in await chooser.select("refund order 1", "orders", USER)
    assert "refund_order" in await chooser.select("refund order 1", "orders", ("user", "admin"))
    assert "hide_review" in await chooser.select("hide this spam review", None, ("moderator",))
    assert await chooser.select("anything", None, ("anonymous",)) == []
    assert [o.name for o in chooser.visible(("moderator",))] == [
        o.name for o in OFFERS if o.name not in ("refund_order",)
    ]


async def test_a_restricted_rag_search_is_left_out_for_other_roles():
    offers = [Offer("rag_search", "", core=True, roles=("admin",)), *OFFERS[1:]]
    chooser = ToolSelector(offers, embedder=CountingEmbedder(), top_k=2)
    assert "rag_search" not in await chooser.select("where is my order", "orders", USER)
    assert "rag_search" in await chooser.select("where is my order", "orders", ("admin",))


async def test_min_score_drops_weak_matches():
    chooser = make(top_k=5, min_score=0.99)
    assert await chooser.select("where is my order", "orders", USER) == ["rag_search", "list_orders"]


async def test_vectors_are_computed_once_per_process():
    embedder = CountingEmbedder()
    chooser = make(embedder)
    for message in ("a", "b", "c"):
        await chooser.select(message, "orders", USER)
    assert embedder.batches == 1
    assert set(chooser._index.vectors) == {o.name for o in OFFERS} - {"rag_search"}


CONTEXT_FILTERED = [
    "rag_search",
    "list_orders",
    "get_order_status",
    "cancel_order",
    "reset_password",
    "open_ticket",
]


async def test_no_embedder_offers_every_context_filtered_tool_and_logs_once(warnings):
    chooser = ToolSelector(OFFERS, embedder=None, top_k=1)
    for _ in range(3):
        assert await chooser.select("where is my order", "orders", USER) == CONTEXT_FILTERED
    assert [extra["degradation"] for _, extra in warnings] == ["embedder"]


async def test_index_build_failure_offers_every_context_filtered_tool_logs_once_and_retries_later(warnings):
    now = [0.0]
    embedder = CountingEmbedder(fail_batch=2)
    chooser = make(embedder, top_k=1, retry_seconds=60, clock=lambda: now[0])
    for _ in range(3):
        assert await chooser.select("where is my order", "orders", USER) == CONTEXT_FILTERED
    assert embedder.batches == 1 and [e["degradation"] for _, e in warnings] == ["index"]
    now[0] = 61.0  # the retry fails again: still one warning for this outage
    assert await chooser.select("where is my order", "orders", USER) == CONTEXT_FILTERED
    assert embedder.batches == 2 and len(warnings) == 1
    now[0] = 122.0  # the embedder is back
    assert len(await chooser.select("where is my order", "orders", USER)) == 3
    assert embedder.batches == 3


async def test_search_error_offers_every_context_filtered_tool_and_logs_once_per_outage(warnings):
    embedder = CountingEmbedder(fail_query=2)
    chooser = make(embedder, top_k=1)
    assert await chooser.select("where is my order", "orders", USER) == CONTEXT_FILTERED
    assert await chooser.select("where is my order", "orders", USER) == CONTEXT_FILTERED
    assert len(warnings) == 1 and warnings[0][1] == {"degradation": "search", "error_type": "ConnectionError"}
    assert len(await chooser.select("where is my order", "orders", USER)) == 3  # recovered
    embedder.fail_query = 1
    await chooser.select("where is my order", "orders", USER)
    assert len(warnings) == 2  # a new outage is logged again


async def test_only_core_candidates_need_no_embedding():
    embedder = CountingEmbedder()
    chooser = ToolSelector(OFFERS[:2], embedder=embedder, top_k=1)
    assert await chooser.select("x", "orders", USER) == ["rag_search", "list_orders"]
    assert embedder.batches == 0


class MemoryCache:
    def __init__(self):
        self.objects = {}

    def load(self, key):
        return self.objects.get(key)

    def store(self, key, vectors):
        self.objects[key] = vectors


async def test_a_cached_index_is_reused_and_keyed_by_texts_and_embedder():
    cache = MemoryCache()
    first = CountingEmbedder()
    await make(first, cache=cache).select("where is my order", "orders", USER)
    second = CountingEmbedder(fail_batch=1)  # would fail if it had to embed the catalogue
    offered = await make(second, cache=cache).select("where is my order", "orders", USER)
    assert second.batches == 0 and offered[2] == "get_order_status"
    assert len(cache.objects) == 1
    rankable = OFFERS[1:]
    assert index_key(rankable, first.name) in cache.objects
    assert index_key(rankable, "other-embedder") != index_key(rankable, first.name)
    changed = [*rankable[:-1], Offer("hide_review", "hide_review — changed")]
    assert index_key(changed, first.name) != index_key(rankable, first.name)


def test_search_ranks_by_cosine_similarity():
    index = ToolIndex({"a": (1.0, 0.0), "b": (0.6, 0.8), "c": (0.0, 1.0)})
    assert index.search([2.0, 0.0], ["a", "b", "c"], 2, 0.0) == [("a", 1.0), ("b", 0.6)]
    assert index.search([0.0, 3.0], ["a", "b"], 5, 0.5) == [("b", 0.8)]


async def test_a_message_without_content_words_is_no_outage(warnings):
    offered = await make(top_k=2).select("is it?", "orders", USER)
    assert offered[:2] == ["rag_search", "list_orders"] and len(offered) == 4 and warnings == []


def test_a_sparse_query_scores_as_the_full_dot_product():
    embedder = HashingEmbedder(256)
    texts = [offer.text or offer.name for offer in OFFERS]
    index = ToolIndex({text: normalized(embedder.embed(text)) for text in texts})
    dense = ToolIndex(index.vectors)
    for message in ("where is my order", "reset a forgotten password please", "order", ""):
        query = embedder.embed(message)
        sparse = index.search(query, texts, k=len(texts), min_score=-1.0)
        full = sorted(
            ((t, math.sumprod(normalized(query), dense.vectors[t])) for t in texts),
            key=lambda item: item[1],
            reverse=True,
        )
        assert [name for name, _ in sparse] == [name for name, _ in full]
        assert [score for _, score in sparse] == pytest.approx([score for _, score in full], abs=1e-12)
