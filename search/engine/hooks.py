"""How features plug their derived data into the engine, which knows none of them.

The engine writes documents, segments and commits. What a feature derives from them, such
as the alias table (``archive.aliases``), quotation signatures per segment and their
clusters (``archive.quoteclusters``) or the display form of stored records and the search
itself (``query``), is registered here as a ``Feature``, and every ``WhooshStore`` calls
its features at fixed points:

- ``open(store)``: the store opened; a feature returns the attributes it lends the store
  (``store.aliases`` is the alias feature's table, for example);
- ``writer_opened(writer)``: a Whoosh writer was made; a feature that keeps per-segment files
  wraps it so new and merged segments get them (``segment_exts`` lists their extensions, so
  the engine removes them with their segment);
- ``put`` / ``delete`` (per article in a write session), ``prepare_commit`` (before the
  commit, under the lock: returns what to install once it landed), ``abort_commit``,
  ``committed`` (after it);
- ``merge_source`` / ``write_merged``: carry a segment's derived data through a merge;
- ``wait(store, timeout)``: background work the feature runs after commits is done;
- ``stats(store, searcher)``: entries the feature adds to ``store.stats()``;
- ``verify(folder)`` / ``rebuild(folder, searcher)``: the feature's files that answers depend
  on but no commit's manifest lists (written after the commit, or by a background process)
  are checked by ``newsquarry check`` through ``verify`` and rebuilt by ``repair`` through
  ``rebuild``, from the index as stored.

Features come from modules named in ``plug`` (the package's root does this: it is the one
place that knows every layer); they are imported when the first store opens, so a process
that never opens an index never pays for them. Services are single functions a higher layer
provides (``search``, ``record_view``), looked up by name.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Finding:
    """What ``Feature.verify`` found about one of its files: damage, or a note."""

    file: str
    text: str
    damage: bool = True


class Feature:
    """Derived data a feature keeps beside the index; every hook does nothing by default."""

    name = ""
    segment_exts: tuple[str, ...] = ()  # per-segment files, removed with their segment
    # per-segment files (checksummed by the commit's manifest) that ``rebuild`` re-derives
    # from their segment: damage to one is repaired without re-reading the articles
    rebuilt_exts: tuple[str, ...] = ()

    def open(self, store: Any) -> dict[str, Any]:
        """The store opened: the attributes this feature lends it (name -> value)."""
        return {}

    def writer_opened(self, writer: Any) -> None:
        """A Whoosh writer was made for a commit or a merge (wrap it to write segment files)."""

    def put(self, session: Any, article: Any, passages: list[Any]) -> None:
        """An article was put in a write session."""

    def delete(self, session: Any, article_id: str) -> None:
        """An article was deleted in a write session."""

    def prepare_commit(self, store: Any, session: Any) -> Callable[[], None] | None:
        """Before a session commits (under the write lock): what to install once it landed."""
        return None

    def abort_commit(self, store: Any) -> None:
        """The commit prepared for failed: drop what ``prepare_commit`` wrote."""

    def committed(self, store: Any) -> None:
        """A commit of this process landed (background work may be requested here)."""

    def key_resolver(self, store: Any) -> Any:
        """The mapping of name keys to canonical keys this feature provides, or None."""
        return None

    def merge_source(self, folder: Any, segment: Any, reader: Any) -> Any:
        """A source segment's derived data, read before the merge (None: nothing to carry)."""
        return None

    def write_merged(
        self, work: Any, merged: Any, sources: list[Any], data: list[Any], maps: Any
    ) -> None:
        """Write the merged segment's derived data from its sources' (``merge_source``)."""

    def survivor(
        self, folder: Any, segment: Any
    ) -> Callable[[dict[str, int], list[Any]], None] | None:
        """What the feature keeps of an intact segment's documents that their stored records
        do not hold, to put back on them when a rebuild writes them again (``repair``): a
        function called per article with its documents' ids -> local docnums and its
        passages, or None (nothing to carry)."""
        return None

    def wait(self, store: Any, timeout: float | None) -> bool:
        """Wait until the feature's background work for past commits is done."""
        return True

    def verify(self, folder: Any) -> list[Finding]:
        """Check the feature's files in ``folder`` that no manifest lists (``check``)."""
        return []

    def rebuild(self, folder: Any, searcher: Any) -> None:
        """Rebuild the files ``verify`` found damaged from the index read by ``searcher``
        (``repair``, under the write lock)."""

    def stats(self, store: Any, searcher: Any) -> dict[str, Any]:
        """What the feature adds to ``store.stats()`` (name -> value)."""
        return {}

    def close(self, store: Any) -> None:
        """The store closes."""


_lock = threading.Lock()
_modules: list[str] = []  # modules whose import registers features (``plug``)
_loaded: set[str] = set()
_features: list[Feature] = []
_services: dict[str, Callable[..., Any]] = {}


def plug(*modules: str) -> None:
    """Name modules that register features or services when imported (loaded on first use)."""
    with _lock:
        for m in modules:
            if m not in _modules:
                _modules.append(m)


def register(feature: Feature) -> Feature:
    """Add a feature (called by a plugged module at import)."""
    with _lock:
        if all(f.name != feature.name for f in _features):
            _features.append(feature)
    return feature


def provide(name: str, fn: Callable[..., Any]) -> None:
    """Provide a service (``search``, ``record_view``) for the engine to call."""
    _services[name] = fn


def _load() -> None:
    for m in list(_modules):
        if m not in _loaded:
            importlib.import_module(m)  # registers its features and services
            _loaded.add(m)


def features() -> list[Feature]:
    """Every registered feature, in registration order (plugged modules loaded first)."""
    _load()
    return list(_features)


def service(name: str) -> Callable[..., Any] | None:
    """A provided service, or None."""
    _load()
    return _services.get(name)


def segment_exts() -> tuple[str, ...]:
    """The extensions of every feature's per-segment files."""
    return tuple(e for f in features() for e in f.segment_exts)
