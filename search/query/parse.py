"""The query language: text -> Whoosh query, with errors that say where and why.

Syntax (Whoosh's, checked first by our own scanner so that a malformed query
is an error rather than a silently different search):

- words are ANDed by default; ``AND``, ``OR``, ``NOT`` (upper case),
  ``-word`` (exclude), ``+word`` (require) and brackets; ``"phrases"``;
- ``field:value`` for ``text``, ``title``, ``quote``, ``speaker``, ``person``,
  ``org``, ``place``, ``source``, ``article``, ``kind`` (quote kind) and
  ``date`` (``date:2019``, ``date:2019-02``, ``date:[2019-01 TO 2019-03]``,
  ``date:>2019-02-01``);
- ``word*`` (prefix, unstemmed) and ``word~`` / ``word~2`` (fuzzy).

Accents and case never matter: text fields are folded by their analyzer; for
facet fields (which hold names as written) a value is matched on folded words,
so ``person:guaido`` finds "Juan Guaidó" and ``speaker:"raul alvarenga"``
finds "Raúl Daniel Alvarenga". Wildcards and fuzzy terms that expand to more
than ``max_term_expansion`` index terms are refused (``QueryError``) instead
of running for ever.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from whoosh import qparser
from whoosh import query as wq
from whoosh.qparser import (
    FieldAliasPlugin,
    FuzzyTermPlugin,
    GtLtPlugin,
    MultifieldPlugin,
    QueryParser,
)

from newsquarry.search.core.config import SETTINGS_BY_NAME
from newsquarry.search.core.errors import InvalidRequest, QueryError, QueryTooLong
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.schema import text_analyzer
from newsquarry.search.engine.views import View
from newsquarry.search.query.facets import date_bounds

TEXT_FIELDS = ("text", "title", "quote")
VALUE_FIELDS = ("person", "org", "place", "speaker", "source", "quote_kind", "article_id")
# user-facing field name -> index field
USER_FIELDS = {
    "text": "text",
    "title": "title",
    "quote": "quote",
    "speaker": "speaker",
    "person": "person",
    "org": "org",
    "place": "place",
    "source": "source",
    "article": "article_id",
    "kind": "quote_kind",
    "quote_kind": "quote_kind",
    "date": "date",
}
# A passage matches by its own words (text and quotes); the article title only
# adds to the score (see ``ParsedQuery.scoring_terms``), so a title word does not make
# every passage of the article a match. ``title:`` still searches titles.
# A passage's quotations are part of its text, so passages match (and rank) by ``text``
# alone: searching ``quote`` too would count a quotation's words twice. ``quote:``
# still searches the quotations of passages.
DEFAULT_FIELDS = {"passages": ["text"], "quotes": ["quote"], "title": ["title"]}
# How plain words combine (``match``): see ``parse_query``.
MATCHES = ("most", "all", "any")
DEFAULT_MATCH = "most"
BINARY_OPS = {"AND", "OR", "ANDNOT", "ANDMAYBE"}
_FIELD_RE = re.compile(r"(\w+):")
_DATE_RE = re.compile(r"^[0-9]{4}(?:-[0-9]{2}(?:-[0-9]{2})?)?$")  # ASCII digits only
_PREFIX_CLASSES = (wq.Prefix, wq.Wildcard)
_STEMMER = text_analyzer()
_SPELL_WORDS = re.compile(r"\w+").findall
# irregular past forms the Porter stemmer cannot join to their verb ("say" -> "sai",
# "said" -> "said"): a plain word also matches them (news reports speech in the past)
IRREGULAR = {
    "say": ["said"], "says": ["said"], "tell": ["told"], "tells": ["told"],
    "speak": ["spoke", "spoken"], "think": ["thought"], "flee": ["fled"],
    "leave": ["left"], "seek": ["sought"], "fight": ["fought"], "buy": ["bought"],
    "sell": ["sold"], "win": ["won"], "lose": ["lost"], "pay": ["paid"],
    "meet": ["met"], "hold": ["held"], "rise": ["rose", "risen"], "fall": ["fell", "fallen"],
}  # fmt: skip
# English function words (NLTK's list, the most widely used one): in ``most`` mode
# they never decide whether a passage matches, and do not rank.
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will just
    don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn
    mustn needn shan shouldn wasn weren won wouldn""".split()
)


@dataclass
class Token:
    kind: str  # word, phrase, field, op, lparen, rparen, range
    text: str
    start: int
    end: int


@dataclass
class ParsedQuery:
    """A parsed query: the Whoosh query (None = no text query) and what highlights need."""

    text: str
    query: Any
    tokens: list[Token] = field(default_factory=list)
    highlight_terms: set[str] = field(default_factory=set)  # index forms in text fields
    # (field, index form) -> query boost (``word^2``), the terms that rank
    scoring_terms: dict[tuple[str, str], float] = field(default_factory=dict)
    match: str = "all"
    # the plain words of a ``most``/``any`` query, in query order
    loose: list[LooseWord] = field(default_factory=list)

    @property
    def important(self) -> list[LooseWord]:
        """Plain words that decide matching and coordination (not stop words)."""
        return [w for w in self.loose if not w.stop and w.terms]

    @property
    def empty(self) -> bool:
        return self.query is None


@dataclass
class LooseWord:
    """A plain word of the query (no operator, field or wildcard touches it)."""

    text: str
    terms: list[str]  # its index forms (usually one stem)
    stop: bool  # a stop word: never decides a match in ``most`` mode
    start: int = 0


def loose_tokens(tokens: list[Token]) -> tuple[list[int], list[int]]:
    """The plain words of a scanned query, and the brackets that only wrap plain words.

    A word is plain when it has no field before it, no ``+``/``-``/``NOT``
    before it, no ``AND``/``OR`` next to it, no wildcard, fuzzy or boost mark,
    and stands at the top level or in prose brackets: brackets at the top level
    holding only such words ("measurements (made using free-flight models)"),
    which group nothing. Everything else is explicit syntax and stays strict in
    every ``match`` mode. Returns (word indices, bracket indices).
    """

    def plain_here(k: int, first: int, last: int) -> bool:
        prev = tokens[first - 1] if first else None
        nxt = tokens[last + 1] if last + 1 < len(tokens) else None
        if prev is not None and prev.kind in ("field", "plus", "op"):
            return False
        return not (nxt is not None and nxt.kind == "op" and nxt.text in BINARY_OPS)

    def plain_word(tok: Token) -> bool:
        return tok.kind == "word" and not any(c in tok.text for c in "*?~^:")

    words: list[int] = []
    brackets: list[int] = []
    depth = 0
    k = 0
    while k < len(tokens):
        tok = tokens[k]
        if tok.kind == "lparen":
            close = k + 1
            while close < len(tokens) and plain_word(tokens[close]):
                close += 1
            prose = (
                depth == 0
                and close < len(tokens)
                and tokens[close].kind == "rparen"
                and close > k + 1
                and plain_here(k, k, close)
            )
            if prose:
                brackets += [k, close]
                words += range(k + 1, close)
                k = close + 1
                continue
            depth += 1
        elif tok.kind == "rparen":
            depth -= 1
        elif depth == 0 and plain_word(tok) and plain_here(k, k, k):
            words.append(k)
        k += 1
    return words, brackets


_EDGE_QMARK = re.compile(r"(?<!\w)\?+|\?+(?!\w)")


def scan(text: str) -> list[Token]:
    """Split a query into tokens, raising QueryError for unbalanced quotes or brackets."""
    tokens: list[Token] = []
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == '"':
            j = text.find('"', i + 1)
            if j == -1:
                raise QueryError(
                    f'unclosed quotation mark at position {i}: add a closing " or remove this one',
                    position=i,
                )
            if not text[i + 1 : j].strip():
                raise QueryError(f"empty quotation marks at position {i}", position=i)
            tokens.append(Token("phrase", text[i + 1 : j], i, j + 1))
            i = j + 1
            # a phrase may carry a boost or slop suffix: "a b"~2, "a b"^2
            m = re.match(r"[~^][\d.]*", text[i:])
            if m:
                i += m.end()
            continue
        if ch == "(":
            stack.append(i)
            tokens.append(Token("lparen", ch, i, i + 1))
            i += 1
            continue
        if ch == ")":
            if not stack:
                raise QueryError(
                    f"closing bracket ')' at position {i} has no opening '('", position=i
                )
            opened = stack.pop()
            if tokens and tokens[-1].kind == "lparen":
                raise QueryError(f"empty brackets '()' at position {opened}", position=opened)
            tokens.append(Token("rparen", ch, i, i + 1))
            i += 1
            continue
        if ch in "[{":
            close = min((k for k in (text.find("]", i), text.find("}", i)) if k != -1), default=-1)
            if close == -1:
                raise QueryError(
                    f"unclosed range bracket {ch!r} at position {i}: ranges look like "
                    "[2019-01 TO 2019-03]",
                    position=i,
                )
            tokens.append(Token("range", text[i : close + 1], i, close + 1))
            i = close + 1
            continue
        if (
            ch in "+-"
            and (i == 0 or text[i - 1].isspace() or text[i - 1] == "(")
            and i + 1 < n
            and (text[i + 1].isalnum() or text[i + 1] in '"(')
        ):
            # -word excludes, +word requires (words are required anyway)
            tokens.append(
                Token("op" if ch == "-" else "plus", "NOT" if ch == "-" else "+", i, i + 1)
            )
            i += 1
            continue
        if ch in "]}":
            raise QueryError(
                f"closing bracket {ch!r} at position {i} has no opening bracket", position=i
            )
        m = _FIELD_RE.match(text, i)
        if m and not m.group(1).isdigit():
            name = m.group(1)
            if name not in USER_FIELDS:
                known = ", ".join(sorted(set(USER_FIELDS) - {"quote_kind"}))
                raise QueryError(
                    f"unknown field {name!r} at position {i}; fields are: {known}",
                    position=i,
                    field=name,
                )
            j = m.end()
            if j >= n or text[j].isspace() or text[j] == ")":
                raise QueryError(
                    f"field '{name}:' at position {i} has no value after the colon",
                    position=i,
                )
            tokens.append(Token("field", name, i, j))
            i = j
            continue
        j = i
        while j < n and not text[j].isspace() and text[j] not in '()"[]{}':
            j += 1
        word = text[i:j]
        kind = "op" if word in BINARY_OPS or word == "NOT" else "word"
        if kind == "word" and word.strip("*?") == "" and "*" in word:
            raise QueryError(
                f"a lone '*' at position {i} would match every term: type at least one "
                "letter before it, or leave the query empty to browse",
                position=i,
            )
        tokens.append(Token(kind, word, i, j))
        i = j
    if stack:
        raise QueryError(
            f"opening bracket '(' at position {stack[-1]} is never closed", position=stack[-1]
        )
    _check_operators(tokens)
    return tokens


def _check_operators(tokens: list[Token]) -> None:
    """Operators need operands: 'torture AND', 'OR x', 'a AND OR b', 'NOT' are errors."""
    for k, tok in enumerate(tokens):
        if tok.kind != "op":
            continue
        prev = tokens[k - 1] if k else None
        nxt = tokens[k + 1] if k + 1 < len(tokens) else None
        missing_after = (
            nxt is None or nxt.kind == "rparen" or (nxt.kind == "op" and nxt.text in BINARY_OPS)
        )
        if missing_after:
            raise QueryError(
                f"operator {tok.text} at position {tok.start} has nothing after it",
                position=tok.start,
            )
        if tok.text == "NOT" and nxt.kind == "op" and nxt.text == "NOT":
            raise QueryError(  # Whoosh's parser fails on it with an IndexError
                f"NOT NOT at position {tok.start}: a double negation; drop both, or write "
                "NOT (NOT ...)",
                position=tok.start,
            )
        if tok.text in BINARY_OPS and (prev is None or prev.kind in ("lparen", "field", "op")):
            raise QueryError(
                f"operator {tok.text} at position {tok.start} has nothing before it",
                position=tok.start,
            )


class _Parser(QueryParser):
    """Whoosh's parser; prefixes and wildcards on text fields stay unstemmed (only folded)."""

    def term_query(self, fieldname, text, termclass, boost=1.0, tokenize=True, removestops=True):
        if termclass in (wq.Prefix, wq.Wildcard) and fieldname in TEXT_FIELDS + ("spell",):
            return termclass(fieldname, fold(text), boost=boost)
        if fieldname == "date":
            return termclass(fieldname, text, boost=boost)
        return super().term_query(fieldname, text, termclass, boost, tokenize, removestops)


def make_parser(schema: Any, mode: str) -> QueryParser:
    """The Whoosh parser for a search mode (default fields differ): Whoosh's default
    plugins but single quotes and ``*:*`` (never made, rather than made and removed: each
    compiles its regular expression), then ours."""
    defaults = [
        qparser.FieldsPlugin(),
        qparser.WildcardPlugin(),
        qparser.PhrasePlugin(),
        qparser.RangePlugin(),
        qparser.GroupPlugin(),
        qparser.OperatorsPlugin(),
        qparser.BoostPlugin(),
    ]  # (QueryParser.default_set, without SingleQuotePlugin and EveryPlugin)
    p = _Parser(None, schema, plugins=defaults)
    p.add_plugin(MultifieldPlugin(DEFAULT_FIELDS[mode]))
    p.add_plugin(FuzzyTermPlugin())
    p.add_plugin(GtLtPlugin())
    p.add_plugin(
        FieldAliasPlugin({"article_id": ["article"], "quote_kind": ["kind", "quote_kind"]})
    )
    return p


_PARSERS: dict[tuple[int, str], QueryParser] = {}


def _parser(schema: Any, mode: str) -> QueryParser:
    key = (id(schema), mode)
    p = _PARSERS.get(key)
    if p is None:
        p = _PARSERS[key] = make_parser(schema, mode)
    return p


def parse_query(
    text: str,
    *,
    searcher: Any,
    view: View,
    mode: str = "passages",
    max_expansion: int = 1000,
    max_length: int = SETTINGS_BY_NAME["max_query_length"].default,
    deadline: Any = None,
    match: str = "all",
) -> ParsedQuery:
    """Parse and check a query; empty text gives ``ParsedQuery(query=None)``.

    ``deadline`` (a ``docvalues.Deadline``) bounds the expansion of wildcard and
    fuzzy terms, which scans the vocabulary and can take seconds on a big index.

    ``match`` says how the plain words (``loose_tokens``) combine; explicit
    syntax (``AND``, ``OR``, ``+word``, ``-word``, ``"phrases"``, ``field:``,
    brackets, wildcards) is strict in every mode:

    - ``all``: every word must occur (stop words included);
    - ``any``: one word is enough (stop words included), plain BM25F ranking;
    - ``most`` (the default): one *important* word is enough: stop words never
      decide a match and do not rank; passages with more of the important
      words (weighted by rarity) rank first (``scoring.coordination``). A query
      made only of stop words needs them all.

    When the explicit part requires words of the text (``+word``, ``"a phrase"``,
    ``a AND b``, ``title:word``), the plain words beside it only rank, as optional
    clauses do beside required ones in Lucene and Elasticsearch. Facet fields and
    dates (``speaker:alvarenga``, ``date:2019``) narrow like filters and exclusions
    (``-word``) only exclude: beside them the plain words still decide the match.
    """
    if len(text) > max_length:  # before any work: what follows grows with the words
        raise QueryTooLong(
            f"the query is {len(text)} characters long; the limit is {max_length}",
            position=max_length,
            field="q",
        )
    if not text.strip():
        return ParsedQuery(text, None)
    if match not in MATCHES:
        raise ValueError(f"match must be one of {MATCHES}, got {match!r}")
    # a question mark at the edge of a word is punctuation ("Venezuela?"), not the
    # one-character wildcard it would be in Whoosh's syntax ("wom?n" still is)
    original = text
    text = _EDGE_QMARK.sub(lambda m: " " * len(m.group(0)), text)
    if not text.strip():
        return ParsedQuery(original, None)
    parsed = _parse(text, searcher, view, mode, max_expansion, deadline, match)
    parsed.text = original  # the same length: token positions hold for both
    return parsed


def _parse(
    text: str,
    searcher: Any,
    view: View,
    mode: str,
    max_expansion: int,
    deadline: Any,
    match: str,
) -> ParsedQuery:
    tokens = scan(text)
    loose: list[LooseWord] = []
    if match != "all":
        chars = list(text)
        word_ks, bracket_ks = loose_tokens(tokens)
        for k in word_ks:
            tok = tokens[k]
            forms = [tok.text, *IRREGULAR.get(fold(tok.text), [])]
            terms = list(dict.fromkeys(t.text for f in forms for t in _STEMMER(f)))
            stop = all(w in STOP_WORDS for w in _SPELL_WORDS(fold(tok.text)))
            loose.append(LooseWord(tok.text, terms, stop, tok.start))
        for k in word_ks + bracket_ks:
            tok = tokens[k]
            chars[tok.start : tok.end] = " " * (tok.end - tok.start)
        strict_text = "".join(chars)
        if loose:
            keep = set(word_ks + bracket_ks)
            tokens_strict = [t for k, t in enumerate(tokens) if k not in keep]
            parsed = _parse_strict(
                text, strict_text, tokens_strict, searcher, view, mode, max_expansion, deadline
            )
            return _with_loose(parsed, text, tokens, loose, match, mode)
    return _parse_strict(text, text, tokens, searcher, view, mode, max_expansion, deadline)


def _with_loose(
    parsed: ParsedQuery,
    text: str,
    tokens: list[Token],
    loose: list[LooseWord],
    match: str,
    mode: str,
) -> ParsedQuery:
    """Combine the strict part of a query with its plain words (``any``/``most``)."""
    fname = "quote" if mode == "quotes" else "text"
    if match == "any":
        deciding = loose
    else:
        deciding = [w for w in loose if not w.stop]
        if not deciding and parsed.query is None:  # only stop words: they must all occur
            words = [wq.Term(fname, t) for w in loose for t in w.terms]
            q = wq.And(words) if words else None
            out = ParsedQuery(text, q, tokens, match=match, loose=loose)
            for w in loose:
                out.highlight_terms.update(w.terms)
                for t in w.terms:
                    out.scoring_terms[(fname, t)] = 1.0
            _title_terms(out, mode)
            for w in loose:  # they decided the match: count them as important
                w.stop = False
            return out
    terms = sorted({t for w in deciding for t in w.terms})
    q = parsed.query
    if terms and not _requires_something(q):
        anyq = (
            wq.Or([wq.Term(fname, t) for t in terms])
            if len(terms) > 1
            else wq.Term(fname, terms[0])
        )
        q = anyq if q is None else wq.And([q, anyq])
    out = ParsedQuery(
        text, q, tokens, set(parsed.highlight_terms), dict(parsed.scoring_terms), match, loose
    )
    for t in terms:
        out.highlight_terms.add(t)
        out.scoring_terms[(fname, t)] = max(out.scoring_terms.get((fname, t), 0.0), 1.0)
    _title_terms(out, mode)
    return out


def _requires_something(q: Any) -> bool:
    """Whether a strict query requires words of the text (not only excludes, and not
    only narrows by a facet field or a date): then, as optional clauses beside
    required ones in Lucene's and Elasticsearch's bool queries, the plain words
    beside it only rank."""
    if q is None or isinstance(q, wq.Not):
        return False
    if isinstance(q, wq.And):
        return any(_requires_something(sub) for sub in q.subqueries)
    return (
        any(getattr(leaf, "fieldname", None) in TEXT_FIELDS for leaf in q.leaves())
        or getattr(q, "fieldname", None) in TEXT_FIELDS
    )


def _title_terms(parsed: ParsedQuery, mode: str) -> None:
    """In passage mode the article title ranks but never matches on its own: every
    positive word searched in the text also scores in the title (same analyzer)."""
    if mode != "passages":
        return
    for (f, t), b in list(parsed.scoring_terms.items()):
        if f in ("text", "quote"):
            key = ("title", t)
            parsed.scoring_terms[key] = max(parsed.scoring_terms.get(key, 0.0), b)


def _parse_strict(
    text: str,
    parse_text: str,
    tokens: list[Token],
    searcher: Any,
    view: View,
    mode: str,
    max_expansion: int,
    deadline: Any,
) -> ParsedQuery:
    """Whoosh's parse of the explicit part of a query (words ANDed), checked and rewritten."""
    if not parse_text.strip():
        return ParsedQuery(text, None, tokens)
    parser_text = parse_text
    if any(t.kind == "plus" or (t.kind == "op" and t.end - t.start == 1) for t in tokens):
        chars = list(parse_text)
        for t in tokens:
            if t.kind == "plus":
                chars[t.start] = " "
            elif t.kind == "op" and t.end - t.start == 1:
                chars[t.start] = "NOT "
        parser_text = "".join(chars)
        tokens = [t for t in tokens if t.kind != "plus"]
    if mode == "quotes":
        for tok in tokens:
            if tok.kind == "field" and tok.text == "title":
                raise QueryError(
                    f"title: at position {tok.start} is not available in quote search "
                    "(quotes are searched by their own words; use quote: or no field)",
                    position=tok.start,
                )
        text_for_parser = re.sub(r"(?<!\w)text:", "quote:", parser_text)
    else:
        text_for_parser = parser_text
    try:
        q = _parser(searcher.schema, mode).parse(text_for_parser)
    except Exception as exc:  # noqa: BLE001 - Whoosh raises many kinds of error on odd input
        raise QueryError(f"cannot parse the query: {exc}", position=None) from None
    rewriter = _Rewriter(text, tokens, searcher, view, max_expansion, deadline)
    q = rewriter.rewrite(q)
    parsed = ParsedQuery(text, q, tokens, rewriter.highlight, dict(rewriter.scoring))
    _title_terms(parsed, mode)
    return parsed


class _Rewriter:
    """Resolves facet-field values by folded words, checks dates and expansion caps."""

    def __init__(self, text: str, tokens: list[Token], searcher: Any, view: View, cap: int,
                 deadline: Any = None) -> None:  # fmt: skip
        self.deadline = deadline
        self.text = text
        self.tokens = tokens
        self.searcher = searcher
        self.view = view
        self.cap = cap
        self.highlight: set[str] = set()
        self.scoring: dict[tuple[str, str], float] = {}
        self._boost = 1.0  # boost of the leaf being rewritten (its own times its parents')

    def _positive(self, fieldname: str, terms: Any) -> None:
        for t in terms:
            self.highlight.add(t)
            key = (fieldname, t)
            self.scoring[key] = max(self.scoring.get(key, 0.0), self._boost)

    def rewrite(self, q: Any, negated: bool = False, boost: float = 1.0) -> Any:
        err = getattr(q, "error", None)
        if err:
            raise QueryError(f"cannot parse the query: {err}")
        if isinstance(q, wq.Not):
            return wq.Not(self.rewrite(q.query, True, boost), boost=q.boost)
        if isinstance(q, wq.AndNot):
            return wq.AndNot(self.rewrite(q.a, negated, boost), self.rewrite(q.b, True, boost))
        if isinstance(q, wq.AndMaybe):
            return wq.AndMaybe(self.rewrite(q.a, negated, boost), self.rewrite(q.b, negated, boost))
        if not q.is_leaf():
            inner = boost * q.boost
            return q.apply(lambda sub: self.rewrite(sub, negated, inner))
        self._boost = boost * getattr(q, "boost", 1.0)
        fname = getattr(q, "fieldname", None)
        if isinstance(q, wq.Every):
            raise QueryError("'*' alone would match every term: leave the query empty to browse")
        if fname in VALUE_FIELDS:
            return self._value_query(q)
        if fname == "date":
            return self._date_query(q)
        if fname in TEXT_FIELDS:
            if isinstance(q, _PREFIX_CLASSES):
                return self._word_pattern(q, negated)
            if isinstance(q, wq.MultiTerm):
                terms = self._expand(q)
                if not negated:
                    self._positive(fname, terms)
            elif not negated:
                if isinstance(q, wq.Term):
                    self._positive(fname, [q.text])
                elif isinstance(q, wq.Phrase):
                    self._positive(fname, q.words)
        return q

    # -- helpers -----------------------------------------------------------
    def _position(self, needle: str) -> int | None:
        """Where a word of the query starts (patterns first), for error messages."""
        folded = fold(needle)
        words = [t for t in self.tokens if t.kind in ("word", "phrase")]
        patterns = [t for t in words if any(c in t.text for c in "*?~")]
        for tok in patterns:
            if fold(tok.text).startswith(folded):
                return tok.start
        for tok in words:
            if folded and folded in fold(tok.text):
                return tok.start
        return None

    def _expand(self, q: Any) -> list[str]:
        """The index terms a wildcard/fuzzy term stands for; QueryError past the cap."""
        terms = []
        for t in islice(q._btexts(self.searcher.ixreader), self.cap + 1):
            terms.append(t)
            if self.deadline is not None and len(terms) % 64 == 0:
                self.deadline.check()
        if self.deadline is not None:
            self.deadline.check()
        if len(terms) > self.cap:
            shown = q.text + ("*" if isinstance(q, wq.Prefix) else "")
            if isinstance(q, wq.FuzzyTerm):
                shown = f"{q.text}~{q.maxdist}"
            raise QueryError(
                f"{shown!r} matches more than {self.cap} different words; make it more "
                "specific (a longer prefix, or fewer edits)",
                position=self._position(q.text.rstrip("*?")),
            )
        return [t.decode("utf-8") if isinstance(t, bytes) else t for t in terms]

    def _word_pattern(self, q: Any, negated: bool) -> Any:
        """A prefix or wildcard on a stemmed field, matched against whole words.

        The stemmed lexicon holds "spi" for "spies", so ``spie*`` would miss it:
        the pattern is expanded over the unstemmed ``spell`` field, and the words
        found are stemmed back into the field's terms.
        """
        pattern = type(q)("spell", q.text)
        words = self._expand(pattern)
        stems = sorted({t.text for w in words for t in _STEMMER(w)})
        if not negated:
            self._positive(q.fieldname, stems)
        if not stems:
            return wq.NullQuery
        return wq.Or([wq.Term(q.fieldname, s) for s in stems], boost=q.boost)

    def _value_query(self, q: Any) -> Any:
        """field:value on a facet field -> Or of the raw terms whose folded words match."""
        fname = q.fieldname
        raw = self.view.raw_terms(fname)
        keys = self.view.keys[fname]
        if isinstance(q, wq.Phrase):
            wanted = " ".join(q.words)
        else:
            wanted = getattr(q, "text", "")
        wanted_f = fold(str(wanted))
        if isinstance(q, wq.FuzzyTerm):
            match = _fuzzy_matcher(wanted_f, q.maxdist)
        elif isinstance(q, _PREFIX_CLASSES):
            pattern = wanted_f if isinstance(q, wq.Wildcard) else wanted_f + "*"
            match = _glob_matcher(pattern)
        elif isinstance(q, wq.TermRange):
            raise QueryError(f"ranges are only for date:, not {fname}:")
        else:
            match = _words_matcher(wanted_f, exact=fname in ("article_id", "quote_kind"))
        chosen: list[str] = []
        if fname in self.view.canon:
            # a name matches with all its aliases ("speaker:fed" finds "Federal Reserve"),
            # also through a canonical name no passage writes as such
            matched = [gid for gid, key in enumerate(keys) if match(key)]
            for gid in dict.fromkeys(m for g in matched for m in self.view.members(fname, g)):
                chosen.extend(raw.get(gid, []))
            chosen = list(dict.fromkeys(chosen))
        else:
            for gid, terms in raw.items():
                if match(keys[gid]):
                    chosen.extend(terms)
        if len(chosen) > self.cap:
            raise QueryError(
                f"{fname}:{wanted} matches more than {self.cap} values; make it more specific",
                position=self._position(str(wanted)),
            )
        if not chosen:
            return wq.NullQuery
        return wq.Or([wq.Term(fname, t) for t in chosen], boost=q.boost)

    def _date_query(self, q: Any) -> Any:
        def check(value: str | None) -> None:
            if value is not None and not _DATE_RE.match(value):
                raise QueryError(
                    f"date:{value} is not a date: use YYYY, YYYY-MM or YYYY-MM-DD",
                    position=self._position(value),
                )
            if value is not None:
                try:  # a real date, as the date_from/date_to parameters require
                    date_bounds(value, what="date")
                except InvalidRequest:
                    raise QueryError(
                        f"date:{value} is not a valid date (no such month or day)",
                        position=self._position(value),
                    ) from None

        if isinstance(q, wq.Term):
            check(q.text)
            return q if len(q.text) == 10 else wq.Prefix("date", q.text)
        if isinstance(q, wq.TermRange):
            start, end = q.start, q.end
            check(start)
            check(end)
            # partial dates: "2019-03" as an inclusive end means up to 2019-03-31
            if start is not None and len(start) < 10 and q.startexcl:
                start = start + "\uffff"
            if end is not None and len(end) < 10 and not q.endexcl:
                end = end + "\uffff"
            return wq.TermRange("date", start, end, q.startexcl, q.endexcl)
        if isinstance(q, wq.Prefix):
            return q
        raise QueryError("date: accepts a date, a partial date or a range")


def _words_matcher(wanted: str, exact: bool = False):
    """Matches a folded value equal to ``wanted`` or containing its words in sequence."""
    words = wanted.split()

    def match(key: str) -> bool:
        if key == wanted:
            return True
        if exact or not words:
            return False
        kw = key.split()
        n = len(words)
        return any(kw[i : i + n] == words for i in range(len(kw) - n + 1))

    return match


def _glob_matcher(pattern: str):
    """Matches a folded value, or one of its words, against a glob (``guai*``)."""

    def match(key: str) -> bool:
        return fnmatch.fnmatchcase(key, pattern) or any(
            fnmatch.fnmatchcase(w, pattern) for w in key.split()
        )

    return match


def _fuzzy_matcher(wanted: str, maxdist: int):
    def match(key: str) -> bool:
        return any(edit_distance(w, wanted, maxdist) <= maxdist for w in [key, *key.split()])

    return match


def edit_distance(a: str, b: str, cap: int = 3) -> int:
    """Levenshtein distance, stopping early once it exceeds ``cap``."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) > cap:
            return cap + 1
        prev = cur
    return prev[-1]
