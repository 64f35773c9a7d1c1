"""Deterministic synthetic news articles for the reliability tests.

Each article has three paragraphs long enough to be three passages, names for
the entity recogniser and a quotation with a speaker, so the real enricher has
real work to do. Same seed -> same corpus.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

FIRST = ["Maria", "John", "Aisha", "Pedro", "Lena", "Omar", "Grace", "Ivan"]
LAST = ["Lopez", "Smith", "Khan", "Alvarez", "Novak", "Haddad", "Okafor", "Petrov"]
PLACES = ["Lisbon", "Nairobi", "Caracas", "Oslo", "Manila", "Denver"]
WORDS = (
    "council budget river school harbor election strike market bridge hospital "
    "vote water road farmers police court museum railway tax housing"
).split()


def article(i: int, rng: random.Random, prefix: str = "art") -> dict:
    a = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    b = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    place = rng.choice(PLACES)

    def w(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    paras = [
        f"{a} arrived in {place} on Monday to discuss the {w(3)} with local officials, "
        f"who have argued for months about the {w(3)} and the {w(2)} near the old town.",
        f'"We will not accept this {w(2)} while the {w(2)} is still closed," {a.split()[1]} '
        f"said at a meeting on the {w(2)}. The {w(4)} was delayed again, officials said.",
        f"{b} told reporters that the {w(3)} would reopen next week in {place}, after "
        f"an inspection of the {w(3)} found no serious damage to the {w(2)}.",
    ]
    return {
        "id": f"{prefix}-{i:04d}",
        "title": f"{place}: {w(2)} talks, part {i}",
        "source": "Test Wire",
        "date": f"2024-{1 + i % 9:02d}-{10 + i % 10}",
        "text": "\n\n".join(paras),
    }


def articles(n: int, seed: int = 1, prefix: str = "art") -> list[dict]:
    rng = random.Random(seed)
    return [article(i, rng, prefix) for i in range(n)]


def write_jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(a) + "\n" for a in items), encoding="utf-8")
    return path
