"""Exceptions of the newsquarry library.

Every error a user can cause is one of these. The HTTP API maps them to
problem+json responses (``status`` is the suggested HTTP status) and the CLI to
one line on stderr and an exit code (``exit_code``).
"""

from __future__ import annotations

import pickle
import struct
import zlib

# What Whoosh raises when it reads a damaged file that no checksum caught first (an
# index made before checksums): each is turned into IndexDamaged, never a traceback.
# (An EOFError left to click would become "Aborted!" and exit 1, "found nothing".)
READ_DAMAGE: tuple[type[BaseException], ...] = (
    EOFError,
    zlib.error,
    struct.error,
    pickle.UnpicklingError,
)


class NewsquarryError(Exception):
    """Base class: a clear message, an HTTP status and a CLI exit code."""

    status = 400
    exit_code = 2
    title = "Bad request"

    def __init__(self, message: str, *, field: str | None = None, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details

    def __str__(self) -> str:
        return self.message


class QueryError(NewsquarryError):
    """A query that cannot be parsed or run; ``position`` says where, when known."""

    title = "Invalid query"

    def __init__(self, message: str, *, position: int | None = None, **kw: object) -> None:
        super().__init__(message, **kw)
        self.position = position


class QueryTooLong(QueryError):
    """A query longer than ``max_query_length`` characters, refused before any work.

    Parsing, spelling suggestions and interpretations all grow with the query's
    words (a 1,000-character query cost up to 6.5 s of CPU in them): the cap keeps
    every query's work bounded before the time limit is even needed.
    """

    title = "Query too long"


class UnknownFacet(NewsquarryError):
    """A facet or filter name the index does not know."""

    title = "Unknown facet"


class InvalidRequest(NewsquarryError):
    """A search request with out-of-range or contradictory options."""

    title = "Invalid request"


class NotFound(NewsquarryError):
    """An article or passage id that is not in the index."""

    status = 404
    exit_code = 3
    title = "Not found"


class InvalidArticle(NewsquarryError):
    """An article that cannot be indexed (no text, bad id, wrong types)."""

    title = "Invalid article"


class ReadError(NewsquarryError):
    """A file that cannot be read as an article: the reason names why."""

    title = "Unreadable file"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class IndexBusy(NewsquarryError):
    """Another writer held the index lock for longer than the timeout.

    ``message`` names the index folder and the holder (pid, command) for the
    command line and the logs; ``public_message`` leaves them out, for API clients.
    """

    status = 503
    exit_code = 4
    title = "Index busy"

    def __init__(self, message: str, *, public_message: str | None = None, **kw: object) -> None:
        super().__init__(message, **kw)
        self.public_message = public_message or message


class IndexUnavailable(NewsquarryError):
    """The index cannot be opened (missing, unreadable, or corrupt)."""

    status = 503
    exit_code = 5
    title = "Index unavailable"


class NoIndex(IndexUnavailable):
    """No index exists in the folder given (nothing was created there)."""


class IndexDamaged(IndexUnavailable):
    """A file of the index is missing, cut short or does not match its checksum.

    ``files`` names the damaged files (names inside the index folder); the
    message says to run ``newsquarry check`` and ``newsquarry repair``.
    """

    title = "Index damaged"

    def __init__(self, message: str, *, files: list[str] | None = None, **kw: object) -> None:
        super().__init__(message, **kw)
        self.files = list(files or [])


class SemanticUnavailable(NewsquarryError):
    """A search by meaning (``retrieval`` semantic or hybrid, ``similar_to``) that cannot
    run: the ``semantic`` extra is not installed (status 501), or the index holds no
    vectors yet (status 409: run ``newsquarry embed``). The message says how to enable it.
    """

    status = 501
    exit_code = 2
    title = "Search by meaning unavailable"

    def __init__(self, message: str, *, status: int = 501, **kw: object) -> None:
        super().__init__(message, **kw)
        self.status = status


class NotEnoughSpace(NewsquarryError):
    """A merge or a repair would need more free disk space than there is."""

    status = 507
    exit_code = 7
    title = "Not enough disk space"


class SearchTimeout(NewsquarryError):
    """A search ran past its time limit."""

    status = 503
    exit_code = 6
    title = "Search timed out"


class EnrichmentFailed(NewsquarryError):
    """The NLP step failed on one article: that article is reported, the others go on."""

    title = "Enrichment failed"


class EnrichmentUnavailable(NewsquarryError):
    """The process that enriches a server's writes stopped (or failed) during a write.

    Nothing of that write was committed; the next write starts a new process.
    """

    status = 503
    exit_code = 5
    title = "Enrichment unavailable"


class ClusterError(NewsquarryError):
    """The Dask cluster enrichment runs on cannot be reached, lost every worker, or cannot run it."""

    status = 503
    exit_code = 5
    title = "Cluster unavailable"
