"""Streaming enrichment of many articles, here, in local worker processes, or on a cluster.

``Enricher.enrich`` consumes its input lazily and yields results in input
order. It cuts the stream into chunks of ``batch_size`` articles and hands the
chunks' texts to an executor (``executors.py``): each worker runs ``nlp.pipe``
*and* the entity/quote rules on a chunk and returns only what it found (plain
data), so the rules are spread over the workers too and nothing heavy travels
back; this process assigns the findings to the passages. With ``n_process=1``
chunks are parsed here (``InProcess``); with ``n_process>1`` by a pool of
worker processes (``LocalPool``, ``backend="pool"``, the default); with an
``executor`` given, by that executor (``cluster.DaskExecutor``: the workers of a
Dask cluster). At most ``max_ahead`` articles are in flight, so memory stays
bounded, yet the workers have queued work while the consumer is busy writing
and committing. ``backend="spacy"`` uses spaCy's own ``nlp.pipe(n_process=...)``
instead (rules then run in the parent); see docs/benchmarks.md for which is
faster.
"""

from __future__ import annotations

import contextlib
import threading
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

import numpy as np
from spacy.tokens import Doc

from newsquarry.search.core.errors import EnrichmentFailed
from newsquarry.search.core.models import Article, Passage
from newsquarry.search.ingest.enrich.assign import assign
from newsquarry.search.ingest.enrich.entities import Mention, extract_mentions
from newsquarry.search.ingest.enrich.executors import Executor, InProcess, LocalPool
from newsquarry.search.ingest.enrich.nlp import load_nlp
from newsquarry.search.ingest.enrich.quotes import ArticleQuote, extract_quotes

Found = tuple[list[Mention], list[ArticleQuote]]


def analyse_doc(doc: Doc, publisher: str | None = None) -> Found:
    """Entities and quotations of one parsed article, with article offsets.

    ``publisher``: the article's source, so that "told Reuters" in a Reuters
    story is not taken for an organisation of the story.
    """
    text = doc.text  # built once: spaCy rebuilds it from the tokens on every access
    mentions = extract_mentions(doc, publisher, text)
    return mentions, extract_quotes(doc, mentions, text)


def enrich_doc(doc: Doc, passages: list[Passage], publisher: str | None = None) -> list[Passage]:
    """Fill the passages of one parsed article."""
    mentions, quotes = analyse_doc(doc, publisher)
    return assign(passages, mentions, quotes)


def _analyse_safely(doc: Doc, publisher: str | None = None) -> Found | EnrichmentFailed:
    """``analyse_doc``, with a failure on one article returned instead of raised.

    A rule that breaks on one odd text must not abort an import of thousands:
    that article is reported as failed (and retried by the next run, since it
    was not written) while the others are indexed.
    """
    try:
        return analyse_doc(doc, publisher)
    except Exception as exc:  # noqa: BLE001 - any bug in the rules, on any text
        return EnrichmentFailed(f"enrichment failed: {type(exc).__name__}: {exc}")


def _assign_or_fail(
    passages: list[Passage], found: Found | EnrichmentFailed
) -> list[Passage] | EnrichmentFailed:
    if isinstance(found, EnrichmentFailed):
        return found
    return assign(passages, *found)


# Articles a process parses before it frees spaCy's per-text vocabulary entries.
# spaCy keeps every new word it sees in the Vocab and StringStore for the life of
# the process (+10 MB per 6,000 articles per worker, without end). Inside
# ``nlp.memory_zone()`` those entries are dropped when the zone closes, but the
# tokenizer's cache is not filled either (3% slower from a cold start), so the
# first articles are parsed outside a zone to warm that cache. Measured in
# docs/benchmarks.md ("Full Reuters on a quiet machine").
WARM_ARTICLES = 1000
_parsed_here = 0  # articles parsed by this process
# One parse at a time per process: closing a memory zone frees every entry added
# during it, including those of a Doc another thread (an API write) is still
# building. Pool workers are single-threaded, so there it is never contended.
_PARSE_LOCK = threading.Lock()


def _analyse_texts(
    texts: list[str], batch_size: int, publishers: list[str | None] | None = None
) -> list[Found]:
    """Worker entry point: parse and analyse a chunk of article texts.

    Returns plain data only (no Doc, Span or Lexeme), so nothing outlives the
    memory zone it was parsed in.
    """
    global _parsed_here
    nlp = load_nlp()
    with _PARSE_LOCK:
        warm = _parsed_here < WARM_ARTICLES
        with contextlib.nullcontext() if warm else nlp.memory_zone():
            pubs = publishers or [None] * len(texts)
            found = [
                _analyse_safely(doc, pub)
                for doc, pub in zip(_parse(nlp, texts, batch_size), pubs, strict=True)
            ]
        _parsed_here += len(texts)
    return found


# Longest text parsed as one spaCy call. spaCy's models compute a whole text at
# once, so a parse's working memory grows with the text: a 200,000-character article
# took the process from 163 MB to 823 MB. Longer articles are parsed in windows of
# whole paragraphs and the parts joined into one Doc (``Doc.from_docs``: tokens,
# sentences, parse and entities), so the rules still see the whole article (canonical
# names, speakers named paragraphs earlier) while a parse holds one window.
PARSE_WINDOW = 20_000


def _parse(nlp: Any, texts: list[str], batch_size: int) -> Iterator[Doc]:
    """``nlp.pipe(texts)``, with texts longer than ``PARSE_WINDOW`` parsed by windows."""
    long = {i for i, t in enumerate(texts) if len(t) > PARSE_WINDOW}
    short = nlp.pipe((t for i, t in enumerate(texts) if i not in long), batch_size=batch_size)
    for i, text in enumerate(texts):
        yield _parse_long(nlp, text) if i in long else next(short)


def windows(text: str, size: int = PARSE_WINDOW) -> list[str]:
    """``text`` cut after paragraph breaks into parts of at most ``size`` characters
    (a longer paragraph after its last space before the limit, or at the limit);
    joined, the parts are ``text``."""
    parts: list[str] = []
    start = 0
    while len(text) - start > size:
        end = text.rfind("\n\n", start, start + size)
        if end > start:
            end += 2
        else:
            end = text.rfind(" ", start, start + size) + 1 or start + size
            if end <= start:
                end = start + size
        parts.append(text[start:end])
        start = end
    parts.append(text[start:])
    return parts


def _parse_long(nlp: Any, text: str) -> Doc:
    parts = list(nlp.pipe(windows(text), batch_size=1))
    doc = Doc.from_docs(parts, ensure_whitespace=False)
    return doc if doc.text == text else nlp(text)  # offsets must be the article's


def _analyse_job(job: tuple, batch_size: int) -> list[Any]:
    """An executor's job: a chunk's texts and their sources (``_analyse_texts``), and,
    when vectors are asked for, each article's passage spans: then each article's result
    is (findings, passage vectors, quotation vectors by article offset) (``_with_vectors``)."""
    texts, publishers, *spans = job
    found = _analyse_texts(texts, batch_size, publishers)
    return _with_vectors(texts, found, *spans) if spans else found


def _with_vectors(
    texts: list[str], found: list[Any], spans: list[list[tuple[int, int]]], titles: list[str]
) -> list[Any]:
    """Vectors of a chunk's passages and quotations, encoded together in batches, here in
    the worker (the same texts ``assign`` gives: a quotation cut at its passage's end)."""
    from newsquarry.search.core import embedding  # lazy: torch

    batch: list[str] = []
    plan: list[tuple[int, int, list[int]]] = []  # per article: first row, passages, quote starts
    for text, one, sp, title in zip(texts, found, spans, titles, strict=True):
        first = len(batch)
        batch.extend(embedding.passage_text(title, text[a:b]) for a, b in sp)
        starts = [a for a, _ in sp]
        qstarts: list[int] = []
        if not isinstance(one, EnrichmentFailed) and sp:
            for q in one[1]:
                i = max(bisect_right(starts, q.start) - 1, 0)
                batch.append(text[q.start : min(q.end, sp[i][1])])
                qstarts.append(q.start)
        plan.append((first, len(sp), qstarts))
    vecs = embedding.encode(batch)
    out: list[Any] = []
    for one, (first, n, qstarts) in zip(found, plan, strict=True):
        quotes = {s: vecs[first + n + k] for k, s in enumerate(qstarts)}
        out.append((one, vecs[first : first + n], quotes))
    return out


def _attach(passages: list[Passage], vectors: np.ndarray, quotes: dict[int, np.ndarray]) -> None:
    """Give the passages of an article their vectors and their quotations' (by offset)."""
    from newsquarry.search.core import embedding  # lazy: torch

    for p, v in zip(passages, vectors, strict=True):
        embedding.attach(p, v, [quotes.get(p.start + q.start) for q in p.quotes])


class Enricher:
    """Enriches a stream of (article, passages) with entities and quotations."""

    def __init__(
        self,
        n_process: int = 1,
        batch_size: int = 16,
        backend: str = "pool",
        prefetch: int = 32,
        executor: Executor | None = None,
        embed: bool = False,
    ) -> None:
        if n_process < 1:
            raise ValueError("n_process must be >= 1")
        if backend not in ("pool", "spacy"):
            raise ValueError("backend must be 'pool' or 'spacy'")
        if prefetch < 1:
            raise ValueError("prefetch must be >= 1")
        self.n_process = n_process
        self.batch_size = batch_size
        self.backend = backend
        # chunks queued per worker (pool backend): enough queued work to keep the
        # workers busy while the consumer is away for a Whoosh commit (a commit of
        # 2,000 articles takes ~6 s; 32 x 16 articles per worker is ~7 s of parsing)
        self.prefetch = prefetch
        self.embed = embed  # passage and quotation vectors too (``core.embedding``)
        if executor is None:
            if n_process == 1:
                executor = InProcess()
            else:
                executor = LocalPool(n_process, prefetch, preload=load_nlp)
        self.executor = executor

    def preload(self) -> None:
        """Load the spaCy pipeline now (a process that enriches later: the first write)."""
        load_nlp()

    @property
    def max_ahead(self) -> int:
        """Most articles taken from the input but not yet yielded (executors, not spaCy's pipe)."""
        return self.executor.max_in_flight * self.batch_size

    def enrich(
        self, items: Iterable[tuple[Article, list[Passage]]]
    ) -> Iterator[tuple[Article, list[Passage] | EnrichmentFailed]]:
        """Yield each (article, passages) with entities and quotes filled, in input order.

        An article the rules fail on comes back as (article, EnrichmentFailed).
        """
        if self.backend == "spacy" and self.n_process > 1 and not self.embed:
            yield from self._enrich_spacy(items)
        else:
            yield from self._enrich_chunks(items)

    def _enrich_chunks(
        self, items: Iterable[tuple[Article, list[Passage]]]
    ) -> Iterator[tuple[Article, list[Passage] | EnrichmentFailed]]:
        """Chunks of ``batch_size`` articles: texts to the executor's workers, findings back."""
        iterator = iter(items)

        def jobs() -> Iterator[tuple[list[tuple[Article, list[Passage]]], tuple]]:
            while chunk := list(islice(iterator, self.batch_size)):
                # texts and their sources ("told Reuters" in a Reuters story is no org)
                job: tuple = ([a.text for a, _ in chunk], [a.source for a, _ in chunk])
                if self.embed:
                    job += ([[(p.start, p.end) for p in ps] for _, ps in chunk],
                            [a.title for a, _ in chunk])  # fmt: skip
                yield chunk, job

        results: Any = self.executor.map(_analyse_job, jobs(), self.batch_size)
        try:
            for chunk, found in results:
                if isinstance(found, EnrichmentFailed):  # the whole chunk was lost
                    for article, _ in chunk:
                        yield article, found
                    continue
                for (article, passages), one in zip(chunk, found, strict=True):
                    vectors = None
                    if self.embed:
                        one, *vectors = one
                    done = _assign_or_fail(passages, one)
                    if vectors and not isinstance(done, EnrichmentFailed):
                        _attach(done, *vectors)
                    yield article, done
        finally:
            results.close()  # stop the executor's workers now, not at garbage collection

    def _enrich_spacy(
        self, items: Iterable[tuple[Article, list[Passage]]]
    ) -> Iterator[tuple[Article, list[Passage]]]:
        """spaCy's own ``n_process`` (its workers keep every string they see)."""
        nlp = load_nlp()
        pairs = ((article.text, (article, passages)) for article, passages in items)
        for doc, (article, passages) in nlp.pipe(
            pairs, as_tuples=True, batch_size=self.batch_size, n_process=self.n_process
        ):
            yield article, _assign_or_fail(passages, _analyse_safely(doc, article.source))
