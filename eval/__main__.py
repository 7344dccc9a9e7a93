"""`python -m eval [--embedders hashing] [--modes hybrid,dense,lexical] [--rerankers none,local] [--misses]
[--turns]`:
answer quality. Ingests eval/corpus/ and the sample knowledge base (README.md, docs/) into a Chroma server
of its own (data under .local/eval/), asks every question of eval/*.yaml through the service's code, and
prints, per embedder, strategy, retrieval mode and reranker: hit@1, hit@3, MRR, answer accuracy, answers
that lead with the fact, follow-ups answered, honest "not found", median answer length; then accuracy per
question type for the offline default. The new sets' two splits are reported apart: `tune` was looked at
while improving the code, `held-out` never was.

Strategies: the offline `extractive` always, and MODEL_STRATEGY from the environment when it names another
(its keys and URLs from the environment too). Retrieval uses the topK and similarity threshold `make dev`
would use for the embedder. `--misses` lists the wrong answers of the tune split (never the held-out one).
`--turns` also asks the package docs' questions as chat turns with conversation memory on and off
(eval/turns.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # a log line per search would bury the table
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
logging.disable(logging.INFO)
sys.path.insert(0, str(ROOT / "layers" / "core"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from devserver.stack import apply_local_defaults, free_port, start_chroma  # noqa: E402
from eval.questions import (  # noqa: E402
    HELD_OUT,
    TUNE,
    Question,
    QuestionSet,
    corpus_documents,
    question_sets,
)
from eval.runs import Asker  # noqa: E402
from eval.scoring import Tally, table  # noqa: E402

MODES = ("hybrid", "dense", "lexical")
DEFAULT = (
    "hashing",
    "extractive",
    "hybrid",
    "local",
)  # the offline default: embedder, strategy, mode, reranker
GOALS = {"hit@3": 0.95, "accuracy": 0.90, "leads": 0.85}


def rerankers() -> list[str]:
    return ["none", "local", *(["http"] if os.environ.get("RERANKER_URL") else [])]


def strategies() -> list[str]:
    configured = os.environ.get("MODEL_STRATEGY")
    return ["extractive", *([configured] if configured and configured != "extractive" else [])]


def settings_for(embedder: str, collection: str, chroma_url: str, **overrides):
    from rag_orchestrator.config import load_settings

    defaults = apply_local_defaults({"EMBEDDING_PROVIDER": embedder})
    threshold = float(
        os.environ.get("RAG_SIMILARITY_THRESHOLD") or defaults.get("RAG_SIMILARITY_THRESHOLD", 0.6)
    )
    return load_settings(
        embedding_provider=embedder,
        chroma_url=chroma_url,
        chroma_collection=f"{collection}-{embedder.replace('_', '-')}",
        conversation_storage="memory",
        memory_enabled=False,  # one question's answer must not become the next one's passage
        auto_title=False,
        rag_similarity_threshold=threshold,
        **overrides,
    )


def run_turns(embedders: list[str], chroma_url: str, questions: list[Question]) -> list[dict[str, str]]:
    """The questions as chat turns of the extractive model, memory on and off (eval/turns.py)."""
    from eval.turns import ask_as_turns

    rows = []
    for embedder in embedders:
        settings = settings_for(embedder, "eval", chroma_url)  # ingested by ingest()
        for memory in (False, True):
            with contextlib.redirect_stdout(io.StringIO()):
                tally = asyncio.run(ask_as_turns(questions, settings, memory=memory))
            name = f"extractive turns, memory {'on' if memory else 'off'}"
            rows.append(
                {
                    "embedder": embedder,
                    "strategy": name,
                    "mode": settings.retrieval_mode,
                    "reranker": settings.reranker,
                    "questions": "package docs",
                    **tally.row(),
                }
            )
    return rows


def ingest(embedder: str, chroma_url: str) -> None:
    from devserver.sample import sample_documents
    from rag_orchestrator.retrieval.ingestion import ingest_documents
    from rag_orchestrator.retrieval.knowledge_base import create_knowledge_base

    ingest_documents(corpus_documents(), create_knowledge_base(settings_for(embedder, "eval", chroma_url)))
    ingest_documents(
        sample_documents(), create_knowledge_base(settings_for(embedder, "eval-sample", chroma_url))
    )


def measure(sets: list[QuestionSet], embedder: str, chroma_url: str, **config) -> dict[str, Tally]:
    """Tallies of one configuration: the package docs, and the new sets' tune and held-out splits."""
    corpus = Asker(settings_for(embedder, "eval", chroma_url, **config))
    sample = Asker(settings_for(embedder, "eval-sample", chroma_url, **config))
    tallies: dict[str, Tally] = {}
    for questions in sets:
        asker = sample if questions.sample_knowledge_base else corpus
        if questions.name == "package docs":
            tallies["package docs"] = asyncio.run(asker.evaluate(questions))
            continue
        for split in (TUNE, HELD_OUT):
            tally = asyncio.run(asker.evaluate(questions.split(split)))
            tallies[f"new: {split}"] = (
                tallies[f"new: {split}"].merge(tally) if f"new: {split}" in tallies else tally
            )
    return tallies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", default="hashing", help="comma-separated (default: hashing)")
    parser.add_argument("--modes", default=",".join(MODES), help="retrieval modes (default: all three)")
    parser.add_argument("--rerankers", default="", help="default: none, local, and http with RERANKER_URL")
    parser.add_argument("--misses", action="store_true", help="list the wrong answers of the tune split")
    parser.add_argument(
        "--turns", action="store_true", help="also ask as chat turns, conversation memory on and off"
    )
    args = parser.parse_args(argv)
    embedders = [e.strip() for e in args.embedders.split(",") if e.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    chosen_rerankers = [r.strip() for r in args.rerankers.split(",") if r.strip()] or rerankers()
    sets = question_sets()
    for questions in sets:
        asked = len(questions.singles) + sum(len(c) for c in questions.conversations)
        print(f"{questions.name}: {asked} questions ({len(questions.conversations)} conversations)")

    local = ROOT / ".local" / "eval"
    shutil.rmtree(local / "chroma", ignore_errors=True)  # every run ingests afresh
    chroma = start_chroma(f"http://127.0.0.1:{free_port()}", local / "chroma", local / "chroma.log")
    rows, types = [], []
    try:
        for embedder in embedders:
            ingest(embedder, chroma.url)
            for strategy in strategies():
                for mode in modes:
                    for reranker in chosen_rerankers:
                        config = {"model_strategy": strategy, "retrieval_mode": mode, "reranker": reranker}
                        try:
                            tallies = measure(sets, embedder, chroma.url, **config)
                        except Exception as exc:
                            print(
                                f"{embedder}/{strategy}/{mode}/{reranker}: failed: {exc!r}", file=sys.stderr
                            )
                            continue
                        for name, tally in tallies.items():
                            rows.append(
                                {
                                    "embedder": embedder,
                                    "strategy": strategy,
                                    "mode": mode,
                                    "reranker": reranker,
                                    "questions": name,
                                    **tally.row(),
                                }
                            )
                            if (embedder, strategy, mode, reranker) == DEFAULT and name.startswith("new"):
                                types.append({"questions": name, **tally.type_row()})
                            if args.misses and name in ("package docs", f"new: {TUNE}"):
                                print(f"\n{embedder}/{strategy}/{mode}/{reranker}, {name}: wrong answers")
                                print("\n".join(f"  - {m}" for m in tally.misses))
        if args.turns:
            package_docs = next(q for q in sets if q.name == "package docs")
            rows += run_turns(embedders, chroma.url, package_docs.singles)
    finally:
        chroma.stop()
    print()
    print(table(rows))
    if types:
        print(f"\nRight answers per question type ({', '.join(DEFAULT)}):")
        print(table(types))
    print(
        f"\nGoals on {', '.join(DEFAULT)} for the new questions: "
        + ", ".join(f"{k} >= {v:.0%}" for k, v in GOALS.items())
        + ", follow-ups >= 75%, honest on 5 of 6, median <= 400 chars"
    )
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
