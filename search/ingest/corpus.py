"""The bundled corpus: the articles shipped in the project's ``corpus/`` folder.

Installed, the folder is the data package ``newsquarry.corpus`` (a namespace package: it
holds articles only, no code), found through the import system so that a wheel, an sdist
and an editable install all answer with the same folder.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from newsquarry.search.core.errors import IndexUnavailable


def bundled_corpus_path() -> Path:
    """The folder of the bundled articles (the default corpus)."""
    spec = importlib.util.find_spec("newsquarry.corpus")
    for entry in (spec.submodule_search_locations or []) if spec else []:
        # an editable install adds a path-hook placeholder beside the real folder
        if Path(entry).is_dir():
            return Path(entry)
    raise IndexUnavailable("the bundled corpus is missing from this installation")
