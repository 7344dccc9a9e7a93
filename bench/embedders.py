"""Offline embedders side by side: what one costs a fresh process, and how fast it embeds.

For `hashing` and `wordllama` (when installed): seconds from a fresh interpreter's start until the
embedder is imported and built (its import, and wordllama's 16 MB of weights), the memory that adds
(resident memory once built, less the interpreter's before the import), and texts embedded per second
on the chunks of eval/corpus/. Their retrieval quality is `make eval`'s job.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time

from bench.report import ROOT, Section

# Resident memory now, from /proc: ru_maxrss would carry the parent's peak across fork and exec.
CHILD = """
import json, sys, time
def rss_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
started = time.perf_counter()
before = rss_kb()
from rag_orchestrator.config import load_settings
from rag_orchestrator.retrieval.embedders import create_embedder
embedder = create_embedder(load_settings(conversation_storage="memory", embedding_provider=sys.argv[1]))
embedder.embed("warm")
loaded = time.perf_counter() - started
after = rss_kb()
print(json.dumps({"seconds": loaded, "rss_mb": (after - before) / 1024}))
"""


def _fresh(provider: str) -> dict[str, float]:
    env = {"PYTHONPATH": str(ROOT / "layers" / "core"), "AUTH_MODE": "dev", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, provider], capture_output=True, text=True, check=True, env=env, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _texts() -> list[str]:
    from eval.questions import corpus_documents
    from rag_orchestrator.retrieval.chunking import split_text

    return [chunk for d in corpus_documents() for chunk in split_text(d["text"], 800, 120)]


def run(quick: bool = False) -> Section:
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.retrieval.embedders import create_embedder

    section = Section("embedders", packages=["wordllama", "numpy", "tokenizers"])
    providers = ["hashing", *(["wordllama"] if importlib.util.find_spec("wordllama") else [])]
    texts = _texts()
    rounds = 2 if quick else 5
    for provider in providers:
        fresh = [_fresh(provider) for _ in range(rounds)]
        section.add(f"{provider}: fresh process until built", "s", [f["seconds"] for f in fresh])
        section.add(f"{provider}: memory it adds (RSS)", "MB", [f["rss_mb"] for f in fresh])
        embedder = create_embedder(load_settings(conversation_storage="memory", embedding_provider=provider))
        speeds = []
        for _ in range(rounds):
            started = time.perf_counter()
            embedder.embed_batch(texts)
            speeds.append(len(texts) / (time.perf_counter() - started))
        section.add(f"{provider}: chunks of 800 chars embedded", "per s", speeds)
    section.details["chunks embedded"] = len(texts)
    return section
