"""Score quotation spans and speakers against the hand-annotated BBC review set.

Usage::

    python -m benchmarks.eval_bbc --corpus /work/shared/corpora/bbc_news_2004_2005.jsonl \
        [--errors N] [--category C] [--cache DIR] [--review DIR]

The review set (``benchmarks/bbc_review/``: ``articles.txt`` and ``quotes.jsonl``,
see its README) keeps only article ids, offsets, names and labels; the texts
come from the corpus. Every reviewed article is enriched whole with the
project's enrichment, exactly as ``benchmarks/eval_quotes.py`` does it for
PolNeAR (its ``predict``, which parses with ``load_nlp`` and runs
``analyse_doc``), and scored with eval_quotes' match and speaker rules:

* A prediction P *matches* a gold quote G when ``|P ∩ G| >= 0.5 * |G|``.
* Direct recall: gold ``direct`` quotes matched by a predicted direct or partial
  quote. Partial recall likewise for gold ``partial``.
* Direct precision: predicted direct quotes that match a gold direct or partial
  quote; one that matches only a ``scare`` gold, or nothing, is a false positive.
* Speaker accuracy (matched): over gold direct+partial quotes with a named
  speaker (``speaker_named``) that some predicted quote matches, the best
  overlapping prediction's canonical speaker is correct by eval_quotes'
  ``speaker_ok`` (folded gold words, titles dropped, all in ours, or the same
  last word). End to end: the same over all named gold quotes, a missed quote
  counting as wrong.
* Narrative inside a stored quotation: the share of the characters of predicted
  direct quotes that lie outside every gold quote span (of any kind).
* Scare quotes predicted as quotations: gold ``scare`` spans matched by a
  predicted direct or partial quote.

Indirect predictions (no quote marks) are not scored: the review set has no gold
for reported speech without quote marks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

from benchmarks.eval_quotes import Gold, Item, matches, overlap, predict, speaker_ok
from newsquarry.search.ingest.enrich.quotes import ArticleQuote

REVIEW_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bbc_review")
CATEGORIES = ("business", "entertainment", "politics", "sport", "tech")


@dataclass
class BbcGold(Gold):
    named: bool = False
    continued: bool = False


@dataclass
class BbcItem(Item):
    category: str = ""


def load_review(review_dir: str, corpus: str) -> list[BbcItem]:
    """The reviewed articles (texts from the corpus) with their gold quotes."""
    with open(os.path.join(review_dir, "articles.txt"), encoding="utf-8") as f:
        ids = [line.split()[0] for line in f if line.strip() and not line.startswith("#")]
    texts: dict[str, dict] = {}
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            texts[rec["id"]] = rec
    missing = [i for i in ids if i not in texts]
    if missing:
        raise SystemExit(f"{len(missing)} reviewed articles not in {corpus}: {missing[:5]}")
    items = {i: BbcItem(i, texts[i]["text"], category=texts[i]["category"]) for i in ids}
    with open(os.path.join(review_dir, "quotes.jsonl"), encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            item = items[q["article_id"]]
            span = item.text[q["start"] : q["end"]]
            if not span.startswith(q["check"]):
                raise SystemExit(
                    f"{q['article_id']} {q['start']}: offsets do not match the corpus text "
                    f"({span[:20]!r} != {q['check']!r}): is this the same corpus version?"
                )
            item.gold.append(
                BbcGold(
                    start=q["start"],
                    end=q["end"],
                    kind=q["kind"],
                    speaker=q["speaker"] or "",
                    speaker_start=None,
                    speaker_end=None,
                    is_pronoun=False,
                    suspect=False,
                    text=span,
                    named=bool(q["speaker_named"]),
                    continued=bool(q.get("continued")),
                )
            )
    return [items[i] for i in ids]


def _outside(q: ArticleQuote, spans: list[tuple[int, int]]) -> int:
    """Characters of q (spaces not counted) outside every gold span."""
    inside = [False] * (q.end - q.start)
    for s, e in spans:
        for k in range(max(s, q.start), min(e, q.end)):
            inside[k - q.start] = True
    return sum(1 for k, ins in enumerate(inside) if not ins and not q.text[k : k + 1].isspace())


def _ctx(text: str, s: int, e: int, pad: int = 60) -> str:
    return text[max(0, s - pad) : e + pad].replace("\n", " ")


def evaluate(items: list[BbcItem], preds: list[list[ArticleQuote]], errors: int = 0) -> dict:
    """Figures per category and overall (``examples`` holds the printed errors)."""
    cs: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)

    def note(kind: str, line: str) -> None:
        if len(examples[kind]) < errors:
            examples[kind].append(line)

    for item, quotes in zip(items, preds, strict=True):
        c = cs[item.category]
        c["articles"] += 1
        quoted = [q for q in quotes if q.kind != "indirect"]
        speech = [g for g in item.gold if g.kind in ("direct", "partial")]
        scare = [g for g in item.gold if g.kind == "scare"]
        spans = [(g.start, g.end) for g in item.gold]
        for q in quoted:
            c[f"pred_{q.kind}"] += 1
            if q.kind != "direct":
                continue
            hit = any(matches(q, g) for g in speech)
            c["tp_pred_direct"] += hit
            if not hit:
                only_scare = any(matches(q, g) for g in scare)
                c["fp_direct_scare" if only_scare else "fp_direct_none"] += 1
                note(
                    "fp_direct_on_scare" if only_scare else "fp_direct",
                    f"{item.id}: pred [{q.kind}] {q.text[:110]!r} speaker={q.speaker!r}",
                )
            out = _outside(q, spans)
            chars = sum(1 for ch in q.text if not ch.isspace())
            c["pred_direct_chars"] += chars
            c["pred_direct_chars_outside"] += out
            if out >= 20:
                c["pred_direct_with_narrative"] += 1
                inner = [g for g in item.gold if overlap(q.start, q.end, g.start, g.end)]
                note(
                    "narrative",
                    f"{item.id}: pred {q.text[:160]!r} ({out} chars outside) || gold "
                    + (" | ".join(repr(g.text[:60]) for g in inner) or "none"),
                )
        for g in item.gold:
            cands = [q for q in quoted if matches(q, g)]
            best = max(cands, key=lambda q: overlap(q.start, q.end, g.start, g.end), default=None)
            c[f"gold_{g.kind}"] += 1
            c[f"rec_{g.kind}"] += best is not None
            if g.kind == "scare":
                if best is not None:
                    note(
                        "scare_as_quote",
                        f"{item.id}: gold scare {g.text!r} -> pred [{best.kind}] "
                        f"speaker={best.speaker!r} || {_ctx(item.text, g.start, g.end, 50)!r}",
                    )
                continue
            if best is None:
                note(
                    f"fn_{g.kind}",
                    f"{item.id}: gold {g.text[:90]!r} ({g.speaker}) || "
                    f"{_ctx(item.text, g.start, g.end)!r}",
                )
            if best is not None:
                c["speech_matched"] += 1
                c["kind_agree"] += best.kind == g.kind
            if not g.named:
                c["unnamed"] += 1
                continue
            c["named"] += 1
            if best is not None:
                c["named_matched"] += 1
                ok = speaker_ok(g.speaker, best.speaker)
                c["named_ok"] += ok
                if not ok:
                    note(
                        "speaker",
                        f"{item.id}: gold={g.speaker!r} ours={best.speaker!r} "
                        f"mention={best.speaker_mention!r} cue={best.cue!r} || "
                        f"{g.text[:70]!r}",
                    )
    total: Counter[str] = Counter()
    for c in cs.values():
        total.update(c)
    rows = {cat: _figures(cs[cat]) for cat in CATEGORIES if cat in cs}
    rows["all"] = _figures(total)
    return {"rows": rows, "examples": examples}


def _figures(c: Counter[str]) -> dict:
    def ratio(a: str, b: str) -> float:
        return round(c[a] / c[b], 4) if c[b] else 0.0

    return {
        "articles": c["articles"],
        "gold_direct": c["gold_direct"],
        "gold_partial": c["gold_partial"],
        "gold_scare": c["gold_scare"],
        "direct_recall": ratio("rec_direct", "gold_direct"),
        "partial_recall": ratio("rec_partial", "gold_partial"),
        "predicted_direct": c["pred_direct"],
        "predicted_partial": c["pred_partial"],
        "direct_precision": ratio("tp_pred_direct", "pred_direct"),
        "fp_direct_on_scare": c["fp_direct_scare"],
        "fp_direct_on_nothing": c["fp_direct_none"],
        "kind_agreement": ratio("kind_agree", "speech_matched"),
        "named_gold": c["named"],
        "speaker_accuracy_named_matched": ratio("named_ok", "named_matched"),
        "speaker_accuracy_named_end_to_end": ratio("named_ok", "named"),
        "narrative_share_in_pred_direct": ratio("pred_direct_chars_outside", "pred_direct_chars"),
        "pred_direct_with_20+_narrative_chars": c["pred_direct_with_narrative"],
        "scare_predicted_as_quote": c["rec_scare"],
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="bbc_news_2004_2005.jsonl")
    ap.add_argument("--review", default=REVIEW_DIR, help="review set folder (default: %(default)s)")
    ap.add_argument("--category", choices=CATEGORIES, help="score one desk only")
    ap.add_argument("--errors", type=int, default=0, help="print the first N errors of each type")
    ap.add_argument("--cache", help="folder to cache parsed docs (DocBin) between runs")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    items = load_review(args.review, args.corpus)
    if args.category:
        items = [it for it in items if it.category == args.category]
    preds = predict(items, args.cache)
    res = evaluate(items, preds, args.errors)
    rows = res["rows"]
    names = list(rows)
    keys = list(rows["all"])
    print(f"{'':38}" + "".join(f"{n:>14}" for n in names))
    for k in keys:
        print(f"{k:38}" + "".join(f"{rows[n][k]:>14}" for n in names))
    print(f"{'seconds':38}{round(time.perf_counter() - t0, 1):>14}")
    for name, lines in res["examples"].items():
        print(f"\n## {name}")
        for line in lines:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
