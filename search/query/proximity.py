"""Proximity: adjacent query words found close together rank a passage higher.

"what did Trump say about Venezuela" should put "... said Donald Trump" before a
passage that has "said" in one sentence and "Venezuela" in another. For each pair
of consecutive important words of a ``most`` query (stop words between them
skipped: "tortured in Venezuela" pairs "tortured" with "Venezuela"), a passage
holds the pair when an occurrence of one lies within ``WINDOW`` words of the
other in the same sentence, in either order. The top ``RERANK`` passages of the ranking are rescored
``score * (1 + WEIGHT * share)``, where ``share`` is the idf-weighted share of the pairs
they hold (a pair weighs the mean idf of its words), and reordered among
themselves: the factor is at least 1, so they stay ahead of every passage below
them and paging stays consistent.

Positions come from the tokens the passage's segment keeps (``archive.tokenoffsets``:
the index analyzer's forms, as ids, in text order; ``kept_pair_share``), or, for a
segment without them, from the stored text tokenized as the index analyzer does (words,
possessive dropped, lower-cased, accents folded, Porter-stemmed) with a per-word cache;
sentence ends are found in the stored text either way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import numpy as np
from whoosh.lang.porter import stem
from whoosh.support.charset import accent_map

from newsquarry.search.engine.schema import _POSSESSIVE, _WORD_RE

WINDOW = 3  # words apart at most, in one sentence ("said Donald Trump": 2)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”’)\]]*\s+")
RERANK = 30  # passages rescored at the top of the ranking
WEIGHT = 0.5  # a passage holding every pair nearby scores 1.5 times its score


@lru_cache(maxsize=200_000)
def index_form(word: str) -> str:
    """A word as the text analyzer indexes it."""
    if word.endswith(_POSSESSIVE):
        word = word[:-2]
    return stem(word.lower().translate(accent_map))


def pair_share(text: str, pairs: list[tuple[set[str], set[str], float]]) -> float:
    """The weighted share of ``pairs`` (terms of a, terms of b, weight) found nearby."""
    wanted = set().union(*(a | b for a, b, _ in pairs))
    where: dict[str, list[int]] = {}
    i = 0
    for sentence in _SENTENCE_END.split(text):  # words of two sentences are never near
        for w in _WORD_RE.findall(sentence):
            f = index_form(w)
            if f in wanted:
                where.setdefault(f, []).append(i)
            i += 1
        i += WINDOW + 1
    total = sum(w for _, _, w in pairs)
    got = 0.0
    for a, b, weight in pairs:
        pa = sorted(p for t in a for p in where.get(t, ()))
        pb = sorted(p for t in b for p in where.get(t, ()))
        if pa and pb and _closest(pa, pb) <= WINDOW:
            got += weight
    return got / total if total else 0.0


def kept_pair_share(
    text_of: Callable[[], str], tid: np.ndarray, start: np.ndarray,
    pairs: list[tuple[np.ndarray, np.ndarray, float]],
) -> float:  # fmt: skip
    """``pair_share`` from a text's kept tokens (``archive.tokenoffsets``: term ids and
    starts, in text order) with each pair's terms as boolean arrays over the segment's
    vocabulary: the same share, no word of the text stemmed again. A token's position is
    its index plus ``WINDOW + 1`` per sentence end before it, as ``pair_share`` counts.

    ``text_of()`` gives the text, read only when a pair's words lie within ``WINDOW``
    tokens of each other, since sentence ends only put words further apart (most
    passages of a ranking's head hold no pair at all)."""
    total = sum(w for _, _, w in pairs)
    index = np.arange(len(tid))
    near = []
    for a, b, weight in pairs:
        pa, pb = index[a[tid]].tolist(), index[b[tid]].tolist()
        if pa and pb and _closest(pa, pb) <= WINDOW:
            near.append((pa, pb, weight))
    if not near or not total:
        return 0.0
    ends = [m.end() for m in _SENTENCE_END.finditer(text_of())]
    pos = index + np.searchsorted(ends, start, side="right") * (WINDOW + 1)
    got = 0.0
    for pa, pb, weight in near:
        if _closest(pos[pa].tolist(), pos[pb].tolist()) <= WINDOW:
            got += weight
    return got / total


def _closest(pa: list[int], pb: list[int]) -> int:
    i = j = 0
    best = 1 << 30
    while i < len(pa) and j < len(pb):
        d = pa[i] - pb[j]
        if d == 0:
            return 0
        best = min(best, abs(d))
        if d < 0:
            i += 1
        else:
            j += 1
    return best


def rerank(
    head: np.ndarray,
    scores: np.ndarray,
    pairs: list[tuple[set[str], set[str], float]],
    text_of: Any,
    tiebreak: np.ndarray,
    share_of: Any = None,
) -> np.ndarray:
    """``head`` (docnums, best first) rescored by proximity and reordered; ``scores``
    is updated in place for them. ``share_of(docnum, text, pairs)``, if given, gives a
    text's share from its kept tokens (None: it has none, ``pair_share`` then); its
    ``text`` is a function giving the text, called only if needed."""
    if not pairs or not len(head):
        return head
    for d in head:
        d = int(d)
        share = share_of(d, partial(text_of, d), pairs) if share_of is not None else None
        if share is None:
            share = pair_share(text_of(d), pairs)
        if share:
            scores[d] = scores[d] * (1.0 + WEIGHT * share)
    order = np.lexsort((head, tiebreak[head], -scores[head]))
    return head[order]
