"""Deterministic larger corpus from real text, for scale benchmarks.

``python -m benchmarks.gen_corpus SRC.jsonl OUT.jsonl --factor 10 [--seed 0]``

Writes ``factor`` times as many articles as SRC has, as JSON Lines. Output
article ``k`` (ids ``gen-<seed>-<k>``, 0-based) is modelled on source article
``k mod n``: it keeps that article's title, date, source, lead paragraph and
paragraph count, and its other paragraphs are drawn with replacement from
all the paragraphs of SRC by a ``random.Random(seed)`` used in output order.
So the text is real news prose with the source's length distribution and
vocabulary, every article is new (ids and content hashes differ, nothing is
skipped as unchanged), any prefix of the output is itself representative,
and the same command always writes the same bytes.

The paragraphs of SRC are held in memory (about the size of SRC); the output
is written as it is generated.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path

PARA_SEP = "\n\n"


def load_source(src: Path) -> list[dict]:
    """The source articles (id, title, date, source, text) with a non-empty text."""
    out = []
    with src.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                if isinstance(d.get("text"), str) and d["text"].strip():
                    out.append(d)
    return out


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in text.split(PARA_SEP) if p.strip()]


def generate(articles: list[dict], factor: int, seed: int = 0) -> Iterator[dict]:
    """Yield ``factor * len(articles)`` recombined articles, deterministically."""
    rng = random.Random(seed)
    paras = [paragraphs(a["text"]) for a in articles]
    pool = [p for ps in paras for p in ps]
    n = len(articles)
    for k in range(factor * n):
        src, own = articles[k % n], paras[k % n]
        body = own[:1] + [pool[rng.randrange(len(pool))] for _ in range(len(own) - 1)]
        yield {
            "id": f"gen-{seed}-{k}",
            "title": src.get("title") or "",
            "date": src.get("date"),
            "source": src.get("source"),
            "text": PARA_SEP.join(body),
        }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Deterministic larger corpus from real text.")
    ap.add_argument("src", type=Path, help="source JSON Lines (id, title, date, source, text)")
    ap.add_argument("out", type=Path, help="output JSON Lines")
    ap.add_argument("--factor", type=int, default=10, help="output articles / source articles")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    articles = load_source(args.src)
    n = 0
    with args.out.open("w", encoding="utf-8") as fh:
        for item in generate(articles, args.factor, args.seed):
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
            n += 1
    print(f"{n} articles written to {args.out}")


if __name__ == "__main__":
    main()
