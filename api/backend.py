"""The app's link to the library: settings, the store (opened lazily), the enricher.

The store is opened on first use, not when the app is created, so a server
whose index cannot be opened still starts, answers liveness, reports "not
ready" and 503 on searches, and recovers by itself once the index can be
opened (a new attempt at most every ``RETRY_SECONDS``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from flask import current_app

from newsquarry.search.core.errors import IndexUnavailable
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.enrichproc import EnrichmentProcess
from newsquarry.search.ingest.indexer import default_enricher
from newsquarry.search.query.searching import warm_up

from .caching import ResponseCache

log = logging.getLogger("api.backend")

RETRY_SECONDS = 1.0


class Backend:
    """Everything a view needs from outside Flask."""

    def __init__(
        self,
        settings: dict[str, Any],
        *,
        store: Any = None,
        enricher: Any = None,
    ) -> None:
        self.settings = settings
        self._store = store
        self._enricher = enricher  # injected (tests, callers); None: the spaCy one
        self._writes_enricher: Any = None  # what writes use: see enricher()
        self._lock = threading.Lock()
        self._enrich_lock = threading.Lock()
        self._last_error: str | None = None
        self._last_try = 0.0
        self.cache = ResponseCache(int(settings.get("response_cache_size") or 0))

    # -- the store --------------------------------------------------------
    def store(self) -> Any:
        """The open store; raises IndexUnavailable (503) while it cannot be opened."""
        if self._store is not None:
            return self._store
        with self._lock:
            if self._store is not None:
                return self._store
            now = time.monotonic()
            if self._last_error and now - self._last_try < RETRY_SECONDS:
                raise IndexUnavailable(self._last_error)
            self._last_try = now
            try:
                self._store = WhooshStore(
                    self.settings["index"],
                    create=bool(self.settings.get("create_index", True)),
                    lock_timeout=float(self.settings["lock_timeout"]),
                )
            except IndexUnavailable as exc:
                self._last_error = exc.message
                raise
            self._last_error = None
            try:  # so the first search is as fast as the next ones
                warm_up(self._store, writes=self.writes_enabled)
                if self.writes_enabled:
                    self.start_enrichment()
            except Exception:  # noqa: BLE001 - an optimisation: the searches report errors
                pass
            return self._store

    def readiness(self) -> tuple[bool, str | None, int | None]:
        """(ready, reason when not, generation when ready)."""
        try:
            store = self.store()
            verify = getattr(store, "verify_readable", None)
            if verify is not None:
                verify()  # damage found here makes the worker not ready until repaired
            return True, None, int(store.generation)
        except IndexUnavailable as exc:
            log.warning("not ready: %s", exc.message)  # the path is for the log, not clients
            return False, "the index cannot be opened; the server log says why", None
        except Exception as exc:  # noqa: BLE001 - a broken index must not break health checks
            log.warning("not ready: cannot read the index: %s", exc)
            return False, "the index cannot be read; the server log says why", None

    # -- writes -----------------------------------------------------------
    def enricher(self) -> Any:
        """The enricher writes use (the spaCy one unless one was injected), made once.

        With ``enrich_process`` (the default) it runs in a child process of this worker
        (``ingest.enrichproc``): the NLP of a write never holds this process's interpreter
        lock, so the searches its threads answer meanwhile do not wait for it.
        """
        if self._writes_enricher is None:
            with self._enrich_lock:  # not self._lock: store() starts it while holding that
                if self._writes_enricher is None:
                    self._writes_enricher = self._make_enricher()
        return self._writes_enricher

    def _make_enricher(self) -> Any:
        source = self._enricher if self._enricher is not None else default_enricher
        if self.settings.get("enrich_process", True):
            return EnrichmentProcess(source)
        return source() if source is default_enricher else source

    def start_enrichment(self) -> None:
        """Start the enrichment process now (it loads the model while the server warms up)."""
        enricher = self.enricher()
        if isinstance(enricher, EnrichmentProcess):
            enricher.start()

    @property
    def writes_enabled(self) -> bool:
        return bool(self.settings.get("write_token"))


def backend() -> Backend:
    """The current app's backend."""
    return current_app.extensions["newsquarry"]
