"""Query understanding: names in the query that are facet values, offered, never applied.

When consecutive words of the query name a person, organisation, place or
speaker known to the index (its canonical name as folded, or a run of its
whole words at the end such as a surname: "Trump" for "Donald Trump", "Solano"
for "Harry Solano"), the result carries an ``Interpretation``: the search with
that value as a filter and the name taken out of the query, with its hit count.
A speaker named in a question about what was said ("what did Trump say about
Venezuela") is offered as the quotes view instead: "Quotes by Donald Trump
matching Venezuela". The query itself is never rewritten.

A name is matched whole, never by one of its words: a run of query words inside a longer
run that names someone is not looked up again ("Tony Blair" is not also "Ian Blair"); a
surname alone names a person only when one full name of the facet ends with it and the
query word before it is not part of another name ("Michael Howard" is not "George
Michael"); a capitalised word followed by a capitalised word that names nothing known is
the first name of someone the index lacks ("Harry Solano" is not "Harry"); a place or an
organisation is not offered as a speaker. The offered search keeps
the query's operators ("Maduro NOT Guaido" offers Maduro's passages NOT matching Guaido), so
its link returns what its label says.

Bounded work: the runs looked up grow with the query's words (``MAX_WORDS`` per
word), which ``max_query_length`` caps; each run's count shares the search's
deadline, and past it the readings found so far are offered and the search says
``partial`` (``cut_short``: "interpretations").
"""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np

from newsquarry.search.core.errors import QueryError, SearchTimeout
from newsquarry.search.core.requests import DOCTYPE_FOR_MODE, Interpretation
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.views import View
from newsquarry.search.query.facets import FilterSet, filter_mask
from newsquarry.search.query.parse import STOP_WORDS, loose_tokens, parse_query
from newsquarry.search.query.postings import match_mask

FACETS = ("speaker", "person", "org", "place")
SPEECH_WORDS = frozenset(
    """say says said saying tell tells told think thinks thought claim claims claimed
    quote quotes quoted speak speaks spoke comment comments commented talk talks talked
    mention mentions mentioned state states stated""".split()
)
MAX_WORDS = 4  # longest name looked for, in words
MAX_OFFERED = 3
_WORD = re.compile(r"\w+")
NAMES_KEPT = 512  # word tables kept per facet


def _names(view: View, facet: str, last: str) -> dict[tuple[str, ...], list[int]]:
    """Folded word sequence -> key ids, over the keys of ``facet`` that contain the
    string ``last``: the whole value and its trailing runs of words (surnames) for
    people and speakers, the whole value for organisations and places.

    A run of query words can only name a key that contains its last word, so a
    lookup of ``run`` needs only ``_names(view, facet, run[-1])``. Building the
    table for every key instead took ~0.4 s per view on Reuters (every CLI search,
    and a server's first search after each commit); a substring scan of the keys
    takes about a millisecond. Tables are kept with the field's key registry, which
    every view of the store shares and which only grows: a view after a commit
    scans only the keys added since (ids beyond the view's own keys are skipped by
    the caller). A bounded number is kept.
    """
    view.nkeys[facet]  # resolves the view's keys of the field (registers them)
    registry = view.registries[facet]
    cache = registry.derived
    done, got = cache.get(("names", last), (0, None))
    keys = registry.keys
    n = len(keys)
    if got is None or done < n:
        got = {run: list(gids) for run, gids in (got or {}).items()}  # copy: others read it
        index = cache.get(WORD_INDEX)
        if index is not None:  # a server's index of the keys' words (index_words)
            words_of = _word_index(index, registry, n)
            found = [g for g in words_of.get(last, ()) if done <= g < n]
        else:  # a one-shot process: a scan costs less than building the index
            found = [g for g, k in enumerate(keys[done:n], start=done) if last in k]
        for gid in found:
            words = tuple(_WORD.findall(keys[gid]))
            if not words:
                continue
            runs = [words]
            if facet in ("person", "speaker"):
                runs += [words[i:] for i in range(1, len(words))]
            for run in runs:
                if run[-1] != last or all(w in STOP_WORDS for w in run):
                    continue
                got.setdefault(run, []).append(gid)
        if len(cache) >= NAMES_KEPT:
            index = cache.get(WORD_INDEX)
            cache.clear()
            if index is not None:
                cache[WORD_INDEX] = index
        cache[("names", last)] = (n, got)
    return got


WORD_INDEX = "word index"


def index_words(registry: Any) -> None:
    """Keep an index of the words of a field's keys (word -> key ids) with its registry.

    A server calls this when it warms up (``searching.warm_up``): a query word
    then finds the keys holding it at once, where a scan of every key cost a
    first search with a new word 4-25 ms on Reuters. A one-shot process (the CLI)
    does not: for one query the scan is cheaper than the index. Extended with
    the keys each commit adds (the registry only grows).
    """
    with registry.lock:
        n = len(registry.keys)
    index = registry.derived.setdefault(WORD_INDEX, (threading.Lock(), [0], {}))
    _word_index(index, registry, n)


def _word_index(index: tuple, registry: Any, n: int) -> dict[str, list[int]]:
    """A registry's word index (``index_words``), extended to its first ``n`` keys."""
    lock, done, words_of = index
    if done[0] < n:
        with lock:
            keys = registry.keys
            for gid in range(done[0], n):
                for w in set(_WORD.findall(keys[gid])):
                    words_of.setdefault(w, []).append(gid)
            done[0] = max(done[0], n)
    return words_of


def interpretations(prep: Any) -> list[Interpretation]:
    """The readings of ``prep``'s query (a ``searching._Prepared``), most hits first."""
    r = prep.request
    if prep.parsed.empty:
        return []
    tokens = prep.parsed.tokens
    word_ks, _ = loose_tokens(tokens)
    words = [(k, fold(tokens[k].text)) for k in word_ks]
    words = [(k, w) for k, w in words if _WORD.fullmatch(w)]
    offered: list[Interpretation] = []
    seen: set[tuple[str, int]] = set()
    text = prep.parsed.text
    asks_speech = any(w in SPEECH_WORDS for _, w in words)
    named: set[int] = set()  # query words of a longer run that names someone
    for n in range(min(MAX_WORDS, len(words)), 0, -1):
        if _out_of_time(prep):
            break
        for i in range(len(words) - n + 1):
            if _out_of_time(prep):
                break
            run = words[i : i + n]
            if any(run[j + 1][0] != run[j][0] + 1 for j in range(n - 1)):
                continue  # not consecutive in the query
            if all(k in named for k, _ in run):
                continue  # part of a longer name the query gives
            seq = tuple(w for _, w in run)
            before = tokens[run[0][0] - 1] if run[0][0] else None
            # the word before is a capitalised word: this run is the end of another name
            in_other_name = (
                before is not None and before.kind == "word" and before.text[:1].isupper()
            )
            if n == 1 and _first_name_of_unknown(prep, tokens, run[0][0]):
                continue
            for facet in FACETS:
                if facet == "speaker" and r.mode == "passages" and not asks_speech:
                    continue
                if facet != "speaker" and r.mode == "quotes":
                    continue
                # in key order, not id order: ids follow the order segments registered
                # their keys (the segment history, or a merged key table), and equal counts
                # keep this order in what is offered
                keys = prep.view.registries[facet].keys
                gids = sorted(_names(prep.view, facet, seq[-1]).get(seq, []), key=keys.__getitem__)
                gids = [g for g in gids if g < prep.view.nkeys[facet]]
                whole = [g for g in gids if len(_WORD.findall(keys[g])) == len(seq)]
                partial = [g for g in gids if g not in whole]
                # a surname names a person only alone and unambiguously
                if len(partial) > 1 or in_other_name:
                    partial = []
                gids = whole + partial
                if gids:
                    named.update(k for k, _ in run)
                for gid in gids:
                    if (facet, gid) in seen or gid >= prep.view.nkeys[facet]:
                        continue
                    seen.add((facet, gid))
                    value = prep.view.display(facet, gid)
                    if fold(value) in {fold(v) for v in r.filters.get(facet, [])}:
                        continue
                    if facet == "speaker" and _place_or_org(prep.view, keys[gid]):
                        continue
                    start, end = tokens[run[0][0]].start, tokens[run[-1][0]].end
                    kind = "quotes" if facet == "speaker" else "filter"
                    rest = _without(text, start, end, drop_speech=kind == "quotes", tokens=tokens)
                    mode = "quotes" if kind == "quotes" else r.mode
                    count = _count(prep, rest, mode, facet, value, parse_query, match_mask)
                    if not count and kind == "quotes" and rest:  # all that speaker's quotes
                        rest = ""
                        count = _count(prep, rest, mode, facet, value, parse_query, match_mask)
                    if not count:
                        continue
                    if kind == "quotes":
                        label = f"Quotes by {value}" + (f" matching {rest}" if rest else "")
                    else:
                        what = {"person": "mentioning", "org": "mentioning", "place": "in"}
                        label = (
                            f"Only passages {what[facet]} {value}"
                            if r.mode == "passages"
                            else (f"Only quotes mentioning {value}")
                        )
                        if rest:
                            label += f" matching {rest}"
                    offered.append(
                        Interpretation(
                            kind, facet, value, text[start:end], rest, mode, count, label
                        )  # fmt: skip
                    )
    offered.sort(key=lambda it: (it.kind != "quotes", -it.count))
    return offered[:MAX_OFFERED]


def _first_name_of_unknown(prep: Any, tokens: list, k: int) -> bool:
    """Whether query word ``k``, capitalised, is followed by a capitalised word that names
    nothing the index knows: together they name someone the index does not know ("Harry
    Solano" on an archive without him), so "Harry" alone is another person, not him.

    A next word that is itself a known name ("Blair Iraq") is a second name, not a surname.
    """
    after = tokens[k + 1] if k + 1 < len(tokens) else None
    if not (
        tokens[k].text[:1].isupper()
        and after is not None
        and after.kind == "word"
        and after.text[:1].isupper()
        and after.start <= tokens[k].end + 1
    ):
        return False
    w = fold(after.text)
    if not _WORD.fullmatch(w) or w in STOP_WORDS:
        return False
    for facet in FACETS:
        known = _names(prep.view, facet, w).get((w,), [])
        if any(g < prep.view.nkeys[facet] for g in known):
            return False
    return True


def _out_of_time(prep: Any) -> bool:
    """Whether the search's deadline has passed (said once in ``prep.cut_short``)."""
    if "interpretations" in prep.cut_short:
        return True
    if prep.deadline is not None and prep.deadline.expired():
        prep.cut_short.append("interpretations")
        return True
    return False


def _place_or_org(view: View, key: str) -> bool:
    """Whether a speaker's key is known as a place or an organisation and not as a person
    (a country "said" is the tagger's reading of a government, not someone to quote)."""

    def known(facet: str) -> bool:
        view.nkeys[facet]  # registers the view's keys of the field
        return key in view.registries[facet].ids

    return (known("place") or known("org")) and not known("person")


OPERATORS = frozenset({"AND", "OR", "NOT"})


def _without(text: str, start: int, end: int, *, drop_speech: bool, tokens: list) -> str:
    """The query without the name (and, for the quotes view, the question words); its
    operators, signs, fields and quotation marks kept, so "NOT x" stays "NOT x"."""
    rest = text[:start] + " " * (end - start) + text[end:]
    keep = []
    for w in rest.split():
        if w in OPERATORS or w[:1] in '+-("' or ":" in w:
            keep.append(w)
            continue
        f = fold(w.strip("?.,!"))
        if f and f not in STOP_WORDS and not (drop_speech and f in SPEECH_WORDS):
            keep.append(w.strip("?.,!"))
    return " ".join(keep)


def _count(prep: Any, q: str, mode: str, facet: str, value: str, parse_query: Any,
           match_mask: Any) -> int:  # fmt: skip
    """Hits of the offered search (the request's other filters kept)."""
    r = prep.request
    # one name is often offered under several facets (a place and an org): the rest
    # of the query is parsed and matched once per search
    cache = prep.interpretation_bases
    base = cache.get((q, mode))
    if base is None:
        try:
            parsed = parse_query(
                q, searcher=prep.searcher, view=prep.view, mode=mode,
                max_expansion=prep.settings["max_term_expansion"],
                max_length=prep.settings["max_query_length"], deadline=prep.deadline,
                match=r.match,
            )  # fmt: skip
            base = prep.view.doctype_mask(DOCTYPE_FOR_MODE[mode])
            if not parsed.empty:
                base = base & match_mask(
                    prep.searcher, prep.view, parsed.query, prep.deadline, prep.postings
                )
        except QueryError:
            base = False
        except SearchTimeout:
            base = False
            _out_of_time(prep)
        cache[(q, mode)] = base
    if base is False:
        return 0
    # the request's filters (masks built once per search), this facet's replaced by the value

    masks = {**prep.filters.masks, facet: filter_mask(prep.view, facet, [value])}
    fs = FilterSet(masks=masks, always=prep.filters.always)
    return int(np.count_nonzero(fs.combined(base)))
