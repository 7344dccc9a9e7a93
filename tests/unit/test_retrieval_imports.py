"""Nothing deployed imports chromadb (0.7 s of CPU: the layer speaks Chroma's REST API itself), and
start-up loads no numpy or onnxruntime."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOYED = [ROOT / "layers" / "core" / "rag_orchestrator", ROOT / "functions"]

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


def imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
    return modules


def test_nothing_deployed_imports_chromadb():
    sources = [path for root in DEPLOYED for path in sorted(root.rglob("*.py"))]
    assert len(sources) > 100
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if m.split(".")[0] == "chromadb"
        )
        for path in sources
    }
    assert {path: found for path, found in offenders.items() if found} == {}


def test_start_up_imports_no_chromadb_numpy_or_onnxruntime():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip() == "[]"
