"""Fixtures: real Whoosh indexes under tmp_path, built from hand-annotated articles.

The seed article (corpus/000_...) is read with the real reader and split with
the real passage splitter; entities and quotes are annotated by hand below (the
spaCy enricher is another module), so the tests know the truth independently
of the engine.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from newsquarry.search.core.models import Article, Entity, Passage, Quote
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.ingest.readers import read_paths

ROOT = Path(__file__).resolve().parent.parent
# commands the tests run as new processes run there, not in a resident searcher left
# from another test or by the user (tests/test_daemon.py turns it on for itself)
os.environ["NEWSQUARRY_DAEMON"] = "0"
# indexing computes no vectors unless a test asks (tests/test_semantic.py): loading torch in
# every enrichment worker of every test would cost ~7 s each; the default ("auto") is the
# semantic tests' business
os.environ.setdefault("NEWSQUARRY_EMBED", "0")
SEED = ROOT / "corpus" / "000_e23b3335c9472580.txt"

# surface form -> (canonical name, type); longest forms are matched first
ENTITIES = {
    "Harry Solano": ("Harry Solano", "person"),
    "Solano": ("Harry Solano", "person"),
    "President Nicolás Maduro": ("Nicolás Maduro", "person"),
    "Maduro": ("Nicolás Maduro", "person"),
    "Juan Guaidó": ("Juan Guaidó", "person"),
    "Guaidó": ("Juan Guaidó", "person"),
    "Hugo Chávez": ("Hugo Chávez", "person"),
    "Donald Trump": ("Donald Trump", "person"),
    "Raúl Daniel Alvarenga": ("Raúl Daniel Alvarenga", "person"),
    "Alvarenga": ("Raúl Daniel Alvarenga", "person"),
    "National Guard": ("National Guard", "org"),
    "PDVSA": ("PDVSA", "org"),
    "DCGIM": ("DCGIM", "org"),
    "Florida International University": ("Florida International University", "org"),
    "Venezuela": ("Venezuela", "place"),
    "Caracas": ("Caracas", "place"),
    "Cotiza": ("Cotiza", "place"),
    "Colombia": ("Colombia", "place"),
    "Cucuta": ("Cucuta", "place"),
    "United States": ("United States", "place"),
    "Washington": ("Washington", "place"),
    "Miami": ("Miami", "place"),
}

# (passage position, quoted words as written, speaker, kind)
QUOTES = [
    (4, "Normal soldiers, people like me, suffer like everyone else,", "Harry Solano", "direct"),
    (4, "It's the fear that keeps the ranks lower", "Harry Solano", "partial"),
    (
        5,
        "Cucuta, the Colombian border town where he hides, has infiltrated spies",
        "Harry Solano",
        "indirect",
    ),
    (10, "her niece was raped and tortured by DCGIM", "Harry Solano", "indirect"),
    (
        12,
        "They [the authorities] are a mafia that controls people only with violence, ",
        "Harry Solano",
        "direct",
    ),
    (
        12,
        (
            "They already know that the people in their hearts are with Guaidó and must therefore "
            "resort to barbarism."
        ),
        "Harry Solano",
        "direct",
    ),
    (
        16,
        (
            "You will not find any safe harbor, no easy way out and no way out. You will lose "
            "everything, "
        ),
        "Donald Trump",
        "direct",
    ),
    (
        16,
        "We are seeking a peaceful transition of power, but all options are open,",
        "Donald Trump",
        "direct",
    ),
    (18, "My escape in Colombia was like a movie,", "Raúl Daniel Alvarenga", "direct"),
    (
        18,
        "It's naïve to think that people will change sides in the face of such intimidation.",
        "Raúl Daniel Alvarenga",
        "direct",
    ),
    (19, "he was still living on the nerves", "Raúl Daniel Alvarenga", "indirect"),
    (19, "I'm always ready,", "Raúl Daniel Alvarenga", "direct"),
    (
        19,
        (
            "Unfortunately, in Venezuela, if they catch you, they will torture you physically and "
            "psychologically."
        ),
        "Raúl Daniel Alvarenga",
        "direct",
    ),
]


def annotate(passages: list[Passage], entities=ENTITIES, quotes=QUOTES) -> list[Passage]:
    """Add the hand-made entities and quotes to passages (in place)."""
    forms = sorted(entities, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(re.escape(f) for f in forms) + r")\b")
    for p in passages:
        for m in pattern.finditer(p.text):
            name, type_ = entities[m.group(1)]
            p.entities.append(Entity(m.group(1), name, type_, m.start(), m.end()))
    by_pos = {p.position: p for p in passages}
    for pos, words, speaker, kind in quotes:
        p = by_pos[pos]
        start = p.text.index(words)
        p.quotes.append(Quote(words, start, start + len(words), kind, speaker=speaker, cue="say"))
    return passages


class PassThrough:
    """The enricher protocol without NLP: yields items unchanged."""

    def __init__(self, annotations: dict | None = None) -> None:
        self.annotations = annotations or {}

    def enrich(self, items):
        for article, passages in items:
            extra = self.annotations.get(article.id)
            if extra:
                annotate(passages, *extra)
            yield article, passages


def seed_article() -> Article:
    return next(a for a in read_paths([SEED]) if isinstance(a, Article))


def seed_items() -> tuple[Article, list[Passage]]:
    a = seed_article()
    return a, annotate(split_passages(a))


SMALL = [
    # id, date, source, title, text, entities (surface -> canonical,type), quotes
    (
        "a-2017",
        "2017-05-02",
        "Daily Planet",
        "Oil prices in Caracas",
        (
            "Oil prices fell again in Caracas, where Juan Guaido spoke to reporters.\n\n"
            '"We will not give up," Guaido said at the rally in Caracas on Tuesday evening.'
        ),
        {
            "Juan Guaido": ("Juan Guaido", "person"),
            "Guaido": ("Juan Guaido", "person"),
            "Caracas": ("Caracas", "place"),
        },
        [(2, "We will not give up,", "Juan Guaido", "direct")],
    ),
    (
        "a-2019",
        "2019-03-15",
        "Daily Planet",
        "Blackout in Venezuela",
        (
            "A blackout left Venezuela in darkness for days, and hospitals struggled to cope.\n\n"
            "Officials in Caracas blamed sabotage while the opposition blamed years of neglect."
        ),
        {"Venezuela": ("Venezuela", "place"), "Caracas": ("Caracas", "place")},
        [],
    ),
    (
        "a-2018",
        "2018-11-20",
        "The Courier",
        "Exiles in Colombia",
        (
            "Thousands of exiles crossed into Colombia, many of them soldiers fleeing torture.\n\n"
            "Harry Solano met them at the border near Cucuta and listened to their stories."
        ),
        {
            "Colombia": ("Colombia", "place"),
            "Cucuta": ("Cucuta", "place"),
            "Harry Solano": ("Harry Solano", "person"),
        },
        [],
    ),
]


def small_items() -> list[tuple[Article, list[Passage]]]:
    out = []
    for aid, date, source, title, text, ents, quotes in SMALL:
        a = Article(id=aid, title=title, text=text, source=source, date=date)
        out.append((a, annotate(split_passages(a, min_chars=10), ents, quotes)))
    return out


def build(path: Path, items) -> WhooshStore:
    store = WhooshStore(path)
    with store.writer() as w:
        for article, passages in items:
            w.put(article, passages)
    return store


@pytest.fixture(scope="session")
def seed_store(tmp_path_factory):
    """The seed article alone (read-only: do not write to it in tests)."""
    store = build(tmp_path_factory.mktemp("seed"), [seed_items()])
    yield store
    store.close()


@pytest.fixture(scope="session")
def corpus_store(tmp_path_factory):
    """The seed article plus three small dated articles (read-only)."""
    store = build(tmp_path_factory.mktemp("corpus"), [seed_items(), *small_items()])
    yield store
    store.close()


@pytest.fixture
def fresh_store(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    yield store
    store.close()


@pytest.fixture
def seed_passages():
    return seed_items()[1]


__all__ = ["PassThrough", "annotate", "build", "index_articles", "seed_items", "small_items"]


# --- fixtures of the foundation tests (readers, passages, store, CLI) ----------
SEED_ID = "000_e23b3335c9472580"


@pytest.fixture(scope="session")
def seed_file() -> Path:
    from newsquarry.search.ingest.corpus import bundled_corpus_path

    return bundled_corpus_path() / f"{SEED_ID}.txt"


@pytest.fixture(scope="session")
def seed_doc(seed_file) -> Article:
    """The seed article as the plain-text reader reads it."""
    (article,) = list(read_paths([seed_file]))
    return article


@pytest.fixture(scope="session")
def enricher():
    """The real spaCy enricher, loaded once per test session."""
    from newsquarry.search.ingest.indexer import default_enricher

    return default_enricher()


@pytest.fixture()
def corpus_dir(tmp_path, seed_file) -> Path:
    """A folder holding a copy of the seed article."""
    import shutil

    d = tmp_path / "corpus"
    d.mkdir()
    shutil.copy(seed_file, d / seed_file.name)
    return d


@pytest.fixture(scope="session")
def seed_index(tmp_path_factory, seed_file, enricher) -> WhooshStore:
    """A real index of the seed article with real enrichment, built once (read-only)."""
    from newsquarry.search.ingest.indexer import index_paths

    store = WhooshStore(tmp_path_factory.mktemp("seed-index"))
    index_paths(store, [str(seed_file)], enricher=enricher)
    return store


# --- a small real disk, for the full-disk tests ------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs (root only; skipped where mounting is not allowed)."""
    import subprocess

    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill_disk(disk, leave: int):
    """Fill the disk up to ``leave`` bytes free; returns the filler file (delete it to free)."""
    import errno
    import os
    import shutil

    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as fh:  # unbuffered: close() has nothing to flush
        try:
            while True:
                fh.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    free = shutil.disk_usage(disk).free
    os.truncate(filler, max(0, filler.stat().st_size + free - leave))
    return filler
