"""The bundled corpus: the articles shipped in the project's ``corpus/`` folder."""

from __future__ import annotations

from pathlib import Path


def bundled_corpus_path() -> Path:
    """The ``corpus/`` folder beside the ``search`` package (the default corpus)."""
    return Path(__file__).resolve().parent.parent / "corpus"
