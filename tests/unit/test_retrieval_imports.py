"""chromadb (about a second to import) stays off the start-up path: only the first vector-store write loads it
(searches read Chroma over plain httpx, tests/integration/test_chroma_http.py)."""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = """
import sys
from rag_orchestrator.api.app import API_ROUTERS, STREAM_ROUTERS, create_app
create_app(API_ROUTERS)
create_app(STREAM_ROUTERS)
import rag_orchestrator.retrieval.ingestion, rag_orchestrator.retrieval.s3_ingest, rag_orchestrator.retrieval.search
from rag_orchestrator.api.deps import Services
from rag_orchestrator.config import get_settings
Services(get_settings()).retriever  # the knowledge base, its lexical index and the reranker, built
print(sorted(m for m in sys.modules if m.split(".")[0] in ("chromadb", "numpy", "onnxruntime")))
"""


def test_start_up_does_not_import_chromadb():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip() == "[]"
