"""Shared fixtures: the bundled seed article, real indexes under tmp_path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from search.corpus import bundled_corpus_path
from search.readers import read_paths

SEED_ID = "000_e23b3335c9472580"


@pytest.fixture(scope="session")
def seed_file() -> Path:
    return bundled_corpus_path() / f"{SEED_ID}.txt"


@pytest.fixture(scope="session")
def seed_article(seed_file):
    (article,) = list(read_paths([seed_file]))
    return article


@pytest.fixture(scope="session")
def enricher():
    """The real spaCy enricher, loaded once per test session."""
    from search.indexer import default_enricher

    return default_enricher()


@pytest.fixture()
def corpus_dir(tmp_path, seed_file) -> Path:
    """A folder holding a copy of the seed article."""
    d = tmp_path / "corpus"
    d.mkdir()
    shutil.copy(seed_file, d / seed_file.name)
    return d


@pytest.fixture(scope="session")
def seed_index(tmp_path_factory, seed_file, enricher):
    """A real index of the seed article, built once (read-only for tests)."""
    from search.indexer import index_paths
    from search.store import WhooshStore

    path = tmp_path_factory.mktemp("seed-index")
    store = WhooshStore(path)
    index_paths(store, [str(seed_file)], enricher=enricher)
    return store
