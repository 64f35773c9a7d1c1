"""Search requests and results: plain dataclasses the API and CLI share.

These are the library's public shapes. ``SearchResult.to_dict()`` is what the
HTTP API returns and what ``newsquarry search --json`` prints, so the two
stay identical.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SORTS = ("relevance", "date", "-date")  # "date" = oldest first, "-date" = newest first
MODES = ("passages", "quotes")
DATE_INTERVALS = ("year", "month", "day")
# how plain words combine: see ``query.parse_query``. "most" is the default because a
# question typed as people type questions ("what did Trump say about Venezuela") must
# find passages: requiring every word (stop words included) finds nothing, while
# "any" lets "what" or "did" decide a match.
MATCHES = ("most", "all", "any")
# "article": the best hit of each article, with its others; "cluster" (quotes only): the
# best hit of each quotation cluster (``quoteclusters``), with its other matching copies
# "story": the best hit of each story (an article and its syndicated copies, ``stories``)
GROUPS = ("none", "article", "cluster", "story")
# "story": facet values counted once per story, however many copies carry them
DEDUPES = ("none", "story")
# how passages are found (``query.semantic``): by their words, by meaning (nearest vectors
# above a similarity floor), or both fused by reciprocal rank; "auto": hybrid when the
# index has vectors and the semantic extra is installed, else keyword
RETRIEVALS = ("auto", "keyword", "semantic", "hybrid")

# the documents each search mode finds (``SearchRequest.mode``)
DOCTYPE_FOR_MODE = {"passages": "passage", "quotes": "quote"}


@dataclass
class SearchRequest:
    """Everything a search can ask for. Validated by the library, not only by the API."""

    q: str = ""
    filters: dict[str, list[str]] = field(default_factory=dict)  # facet name -> values (ORed)
    # facets whose filter values are ANDed ("all of"): passages naming every one of them
    all_of: list[str] = field(default_factory=list)
    date_from: str | None = None  # inclusive, "YYYY", "YYYY-MM" or "YYYY-MM-DD"
    date_to: str | None = None  # inclusive
    facets: list[str] = field(default_factory=list)
    facet_size: int = 10
    date_interval: str = "month"
    page: int = 1
    per_page: int = 10
    sort: str = "relevance"
    highlight: bool = True
    mode: str = "passages"
    suggest: bool = True
    time_limit: float | None = None  # seconds; None = the library default
    match: str = "most"  # most, all, any (MATCHES)
    group: str = "none"  # none, article, cluster, story (GROUPS)
    dedupe: str = "none"  # none, story (DEDUPES): facet counts once per story
    retrieval: str | None = None  # RETRIEVALS; None: the ``retrieval`` setting
    similar_to: str = ""  # by meaning, near this text (``q``, if given, must match too)


@dataclass
class FacetValue:
    value: str  # display form (most common written form of the folded key)
    count: int
    selected: bool = False
    label: str | None = None  # a human label where the value is an id (article titles)


@dataclass
class FacetResult:
    name: str
    values: list[FacetValue]
    other: int = 0  # documents counted under values left out of ``values``
    more: int = 0  # number of distinct values left out


@dataclass
class Hit:
    """A passage hit (mode "passages")."""

    id: str
    article_id: str
    position: int
    start: int
    end: int
    text: str
    title: str
    score: float
    source: str | None = None
    date: str | None = None
    url: str | None = None
    snippet: str | None = None  # safe HTML: escaped text, matches in <mark>
    matches: list[list[int]] = field(default_factory=list)  # [start, length] into ``text``
    entities: list[dict[str, Any]] = field(default_factory=list)
    quotes: list[dict[str, Any]] = field(default_factory=list)
    speakers: list[str] = field(default_factory=list)
    # group="article": the article's other matching passages (best first)
    more_count: int = 0
    more_ids: list[str] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)  # its article's declared fields
    story: str | None = None  # its story: the id of the story's first article
    copies: int = 0  # other articles carrying the same story (syndicated copies)
    # why it matched: "words", "meaning" or "both" (a search by meaning), else None
    matched_by: str | None = None
    similarity: float | None = None  # cosine similarity to the query (by meaning)


@dataclass
class QuoteHit:
    """A quotation hit (mode "quotes")."""

    id: str
    passage_id: str
    article_id: str
    text: str
    kind: str
    score: float
    speaker: str | None = None
    speaker_mention: str | None = None
    cue: str | None = None
    start: int = 0  # offsets into the passage text
    end: int = 0
    article_start: int | None = None  # offsets into the article text
    article_end: int | None = None
    title: str | None = None
    source: str | None = None
    date: str | None = None
    snippet: str | None = None
    matches: list[list[int]] = field(default_factory=list)
    # group="article" ("cluster"): the article's (the cluster's) other matching quotes
    more_count: int = 0
    more_ids: list[str] = field(default_factory=list)
    cluster: str | None = None  # its quotation cluster (``Index.quote_cluster``)
    cluster_articles: int = 1  # articles carrying this quotation or a near-duplicate of it
    # the cluster's first-seen quotation: {"id", "article_id", "date", "source", "title"}
    first_seen: dict[str, Any] | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # its article's declared fields
    story: str | None = None  # its article's story: the id of the story's first article
    copies: int = 0  # other articles carrying the same story (syndicated copies)
    matched_by: str | None = None  # "words", "meaning" or "both" (a search by meaning)
    similarity: float | None = None  # cosine similarity to the query (by meaning)


@dataclass
class Interpretation:
    """A reading of the query the user may want: a filter it names, never applied silently.

    ``kind``: "filter" (a person, organisation, place or speaker named in the query,
    offered as a filter) or "quotes" (a speaker named in a question: the quotes
    view, ``q`` the query without the name, filtered by that speaker).
    """

    kind: str
    facet: str  # person, org, place or speaker
    value: str  # the facet value as displayed (canonical name)
    matched: str  # the words of the query that name it
    q: str  # the query to run with the filter (the name removed for "quotes")
    mode: str  # passages or quotes
    count: int  # hits of that search
    label: str  # "Quotes by Donald Trump matching venezuela"


@dataclass
class SearchResult:
    request: SearchRequest
    total: int
    hits: list[Hit | QuoteHit]
    facets: dict[str, FacetResult] = field(default_factory=dict)
    suggestion: str | None = None  # "did you mean"
    took_ms: float = 0.0
    partial: bool = False  # True when the time limit cut the search short
    # what it cut ("highlights", "suggestion", "interpretations"); the hits and totals are whole
    cut_short: list[str] = field(default_factory=list)
    generation: int = 0  # index generation the result was computed on
    total_articles: int = 0  # distinct articles among the ``total`` hits
    interpretations: list[Interpretation] = field(default_factory=list)
    suggestion_total: int | None = None  # hits of ``suggestion``
    total_clusters: int = 0  # group="cluster": distinct quotation clusters among the hits
    total_stories: int = 0  # group="story": distinct stories among the hits
    retrieval: str = "keyword"  # how the hits were found (``SearchRequest.retrieval``)

    @property
    def page(self) -> int:
        return self.request.page

    @property
    def per_page(self) -> int:
        return self.request.per_page

    @property
    def total_pages(self) -> int:
        n = {
            "article": self.total_articles,
            "cluster": self.total_clusters,
            "story": self.total_stories,
        }.get(self.request.group, self.total)
        return -(-n // self.per_page) if self.per_page else 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(page=self.page, per_page=self.per_page, total_pages=self.total_pages)
        return d
