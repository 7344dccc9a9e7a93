"""The offline embedder: feature hashing of words, their stems, word pairs and character n-grams. No model files."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import unicodedata
from collections import Counter
from functools import lru_cache

from rag_orchestrator.text.words import stem

DEFAULT_DIMENSIONS = 1024

# Function words carry no topic; dropping them stands in for the IDF a fitted model would learn.
_STOP_WORDS = """
a about above after again all also am an and any are as at be been before being below between both but
by can could did do does doing down during each few for from further had has have having he her here
hers him his how i if in into is it its itself just me more most my no nor not now of off on once only
or other our ours out over own same she should so some such than that the their theirs them then there
these they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours
el la los las un una unos unas de del al y o u en con por para que es son se su sus lo le les como mas
pero sin sobre entre cuando donde cual quien este esta estos estas ese esa eso muy ya tambien hay
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Relative weights of the feature families: words, their stems ("tests" ~ "test", so a question about
# running the tests meets `make test`), word pairs (shared phrases) and character n-grams (inflection
# and typos: "immunised" ~ "immune"). A word of 8 letters has ~20 n-grams, which together weigh a little
# more than the word itself. Chosen on tests/data/retrieval_corpus.json and eval/questions.yaml.
WEIGHTS = {"w": 1.0, "s": 1.0, "b": 0.5, "c": 0.35}
CHAR_NGRAM = (3, 4, 5)


def normalize(text: str) -> str:
    """Lower case, accents folded (NFKD without combining marks)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    return [w for w in _WORD.findall(normalize(text)) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]


@lru_cache(maxsize=65_536)
def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    # blake2b, not hash(): Python salts str hashes per process, and vectors must survive restarts.
    value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return value % dimensions, (1.0 if value >> 63 else -1.0)


def features(text: str) -> Counter[str]:
    """Feature occurrence counts of a text, before weighting and hashing."""
    words = tokenize(text)
    counts: Counter[str] = Counter()
    for word in words:
        counts["w:" + word] += 1
        counts["s:" + stem(word)] += 1
        padded = f"<{word}>"
        counts.update("c:" + padded[i : i + n] for n in CHAR_NGRAM for i in range(len(padded) - n + 1))
    counts.update(f"b:{first} {second}" for first, second in itertools.pairwise(words))
    return counts


class HashingEmbedder:
    """Deterministic, offline embeddings: hashed features, sublinear tf, L2-normalized."""

    def __init__(self, dimensions: int | None = None) -> None:
        self.dimensions = dimensions or DEFAULT_DIMENSIONS
        self.name = f"hashing-v2/{self.dimensions}"

    def embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for feature, count in features(text).items():
            index, sign = _slot(feature, self.dimensions)
            vector[index] += sign * WEIGHTS[feature[0]] * (1.0 + math.log(count))
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [self.embed(text) for text in texts]
