"""Canonical entity names across the archive: the alias table.

Enrichment gives each mention the fullest name *its article* knows ("Volcker"
-> "Paul Volcker" when the article names him in full). Across the archive one
entity still has many values: "EC" and "European Community", "Carl C. Icahn"
and "Carl Icahn", "Fed" and "Federal Reserve", "Reagan" in an article that never
says "Ronald". This module maps each value to one canonical value, at query
and facet time, so that an alias learnt today applies to every passage already
indexed: nothing is re-indexed when the table changes.

Evidence (kept per article, so a replaced or deleted article takes its
evidence with it) is the set of name values of each article, in the facets
``person``, ``org``, ``place`` and ``speaker``. From it, with no list of names:

* **Spelling variants** share a normal form: dots dropped ("U.S" / "U.S." /
  "US"), a middle initial dropped from a person's name ("Carl C. Icahn" /
  "Carl Icahn"), trailing corporate suffixes dropped from any name ("Trans
  World Airlines Inc" / "Trans World Airlines"), and a trailing "Board" or
  "System" of a name of two words or more ("Federal Reserve Board"). They are one value, shown in
  its most common written form.
* **Short forms** of a longer name found in the *same article*: an acronym
  whose letters are the initials of the name's words ("SEC" / "Securities and
  Exchange Commission", "S and P" / "Standard and Poor's Corp"; the same
  letters in another order count too, "USDA" / "U.S. Agriculture
  Department"), or, between organisation names, a short clipping of its
  first word ("Fed" / "Federal Reserve"; not "Brazil" / "Brazilian Coffee
  Institute") or its first word alone as owner or head ("Moody's" / "Moody's
  Investors Service", "House" / "House of Representatives"; not "House" / "House
  Banking Committee", nor an acronym: "GATT" / "GATT Council").
  Each article holding both is a vote; the short form joins the name with the
  most votes (at least two for reordered letters and clippings, one for exact
  initials) when that name holds most of its votes. An acronym whose letters
  occur in order in a one-word org name, from its first letter ("VW" /
  "Volkswagen AG"), is one vote too.
  Precision over recall (issue 32): an acronym word inside the longer name
  counts with all its letters (IRA does not spell "IRB Rugby Aid"); a name
  that extends the acronym with a digit or letters is another entity ("BBC2",
  "ITV1"); an acronym never stands for a person; the short and the long form
  agree in the archive's type (told by two stories or more: "Gateshead", a
  town, is not "Gateshead's Sage Centre"); a short form named beside other
  bodies (not variants of its own name) in a third of the stories where it
  meets a longer name is contradicted, and withdrawn; an acronym spelt out in
  one story only needs a second when four stories or more use it alone ("NEC").
* **A surname alone** ("Reagan") joins the one full name of a person the
  archive knows with that surname: never a word that begins the names of two
  people or more, named in as many stories as the names it ends (a first name:
  "Charles", "Bill"), nor an acronym ("AK");
  the full name (written as a name: not "rang Lucy") in two stories or more
  and in 90% of the stories naming someone of that surname in full ("A
  Keller" of a results table counts for Anna Keller; "Brown" joins nobody);
  and the stories saying the surname alone share a name with the stories of
  the full name more often than not (names of more than 5% of the stories,
  and more than three, tell nothing): the Liverpool substitute "Carson" is
  not Johnny Carson. When the other bearers are each named in one story, the
  stories saying the surname alone decide: each goes to the full name whose
  stories share most names with it, and five or more and 90% for one person
  join it ("Reagan" in wire copy: 278 for Ronald Reagan, 2 for Nancy Reagan).
* **A place before an org name** ("U.S. Treasury" / "Treasury"): the short
  name is the longer one without a leading name the archive knows as a place,
  seen together in an article (two votes needed); shown in the form the archive
  writes more often.
* **An abbreviation** written with a final dot ("Calif.") joins the one longer
  one-word name of the same type that it starts ("California").
* **An acronym never written beside its name** ("ATT", in three stories or
  more) joins the one org name of the archive (three stories or more) whose
  initials it is exactly ("American Telephone and Telegraph Co").
* **Types**: a canonical name the archive types as person, org or place in at
  least two thirds of the stories naming it (three or more) is counted in that
  facet wherever it was tagged otherwise ("Dome", a place in one story, is Dome
  Petroleum, an org). A one-word name tagged person in some stories and org in
  at least two (and a fifth of its tags) that no person of the archive is
  called (no full person name starts or ends with it) is an org: "Labour",
  "Chelsea", "Yukos". A name with a corporate suffix is not a spelling of a
  bare word the archive tags as anything but an org ("Eton Corporation").
* **Evidence**: every alias carries its rule and the number of articles
  behind it (``Resolver.evidence``, ``AliasTable.mappings`` and ``listing``,
  ``newsquarry aliases --weakest N``); it is computed from the evidence file
  when the table is learnt, not stored in the table file, whose format is
  unchanged.
* **Overrides**, in the user-editable file ``aliases.txt`` in the index
  folder, win over everything: ``alias = canonical`` (one per line, ``#``
  comments); ``name = name`` keeps a name to itself.

The table is applied to folded keys (``textnorm.fold``), the keys facets use;
``AliasTable.resolver()`` returns a ``Resolver`` (key -> canonical key and its
display form) that the doc-values view applies to every name facet.

On disk (``AliasStore``), in the index folder: ``aliases-evidence.json`` (the
names of each article; only writers, the learner and ``newsquarry aliases`` read
it) with ``aliases-evidence.jsonl``, a journal to which each commit appends the
names of the articles it put and the ids it deleted (one line), folded into the
evidence file when it passes a quarter of it, so a commit writes in proportion to
what it changes; ``aliases.json`` (the learnt mapping, small, read by searches),
rewritten only when it changes; and the override file, read at the next search
after it changes.

When: on an archive of fewer than ``BACKGROUND_FROM`` (1,000) articles each
commit learns the table itself, under the write lock (its sums are kept per
process and updated article by article). On a larger one learning takes about a
second and a half of CPU per commit (Reuters: 32,186 name keys), which a server's writing
thread would take from its searches (one GIL): the commit only appends its names,
and an ``AliasLearner`` process (``python -m newsquarry.search.archive.aliases FOLDER``,
at niceness +10) learns the table from the saved evidence, one run for all the
commits made meanwhile. Until it is done, searches use the table as it was: a
name new to the archive counts as indexed for a few seconds.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from newsquarry.search.archive.aliasnames import (
    CORPORATE,
    ENTITY_FACETS,
    LINK_WORDS,
    _acronym_form,
    _acronym_of,
    _alike,
    _clips,
    _dominant,
    _leads,
    _letters_in,
    _persons_retyped,
    _place_prefix,
    _spelt_initials,
    _suffixed,
    _words,
    _written_as_name,
    normal_form,
    short_letters,
)
from newsquarry.search.archive.aliasresolve import (  # noqa: F401 - (re-exported)
    BACKGROUND_FROM,
    EVIDENCE_FILE,
    JOURNAL_FILE,
    JOURNAL_MIN,
    JOURNAL_SHARE,
    LEARN_LOCK,
    LEARNER_DUTY,
    NAME_FACETS,
    OVERRIDE_FILE,
    TABLE_FILE,
    Resolver,
    parse_overrides,
    with_overrides,
)
from newsquarry.search.core.textnorm import fold

# a surname alone stands for the one person holding this share of the archive's articles
# naming in full someone whose name has that word ("Brown": Gordon Brown in 85% of them, and
# 9 of the 12 stories saying "Brown" alone are about other Browns)
SURNAME_SHARE = 0.9
# an acronym spelt out in one story needs a second when this many stories name it alone
ALONE_MAX = 4
# a name in more than this share of the archive's stories is no clue to a story's subject
CONTEXT_COMMON = 0.05
CONTEXT_MIN = 3  # ... and in more stories than this (in a small archive every name is rare)
# a surname whose other bearers are each named in one story joins the most named one when
# this many of its stories, by the names they share, are about that person
CONTEXT_VOTES = 5
OVERRIDE_HELP = """\
# Aliases for this index: one "alias = canonical" per line; "name = name" keeps a
# name apart from the aliases learnt from the articles. Lines starting with # are
# comments. Changes apply to the next search (no re-indexing).
"""


_fold = lru_cache(maxsize=1 << 16)(fold)


@dataclass(frozen=True)
class Mapping:
    """One alias of the table: a name as written, the name it is shown as, the rule that
    made it (``together``: both forms named in the same articles; ``surname``;
    ``initials``: an acronym of a common name never written beside it; ``abbrev``;
    ``spelling``; ``override``: the override file) and its evidence (articles)."""

    alias: str
    canonical: str
    rule: str
    evidence: int


@dataclass
class _Contribution:
    """What one article adds to the archive's evidence (``AliasTable._totals``)."""

    forms: list[tuple[str, str]] = field(default_factory=list)  # (key, written form)
    types: list[tuple[str, str]] = field(default_factory=list)  # (key, facet)
    votes: list[tuple[str, str, int]] = field(default_factory=list)  # (short, long, votes)
    prefixed: list[tuple[str, str, str]] = field(default_factory=list)  # (short, long, prefix)
    keys: list[str] = field(default_factory=list)  # the article's distinct keys


def _contribution(values: Iterable[Any]) -> _Contribution:
    """One article's [facet, value] names as counts: a sum over articles is the evidence."""
    values = [tuple(v) for v in values]
    c = _Contribution()
    forms, types, votes, prefixed = c.forms, c.types, c.votes, c.prefixed
    keys: dict[str, str] = {}
    for facet, value in values:
        k = _fold(value)
        keys.setdefault(k, facet)
        types.append((k, facet))
        forms.append((k, value))
    c.keys = sorted(keys)
    by_norm = {normal_form(k): k for k in keys}
    written_as = {_fold(v): v for _, v in values}
    for snorm, skey in by_norm.items():
        letters = short_letters(snorm) if _acronym_form(written_as[skey]) else None
        for lnorm in by_norm:
            if lnorm == snorm:
                continue
            lkey = by_norm[lnorm]
            if len(_words(lnorm)) < 2:
                # "VW" / "Volkswagen AG": letters of a word; not "OPEC" / "OAPEC", two
                # acronyms (one with a letter more is another body's)
                if (letters and keys[skey] == keys[lkey] == "org" and _letters_in(letters, lnorm)
                        and not _acronym_form(written_as[lkey])):  # fmt: skip
                    votes.append((snorm, lnorm, 1))
                continue
            if letters and _acronym_of(letters, lkey, written_as[lkey]):
                exact = _spelt_initials(written_as[lkey], lkey) == letters
                votes.append((snorm, lnorm, 2 if exact else 1))
            elif keys[skey] == keys[lkey] == "org":
                if not letters and (_clips(snorm, lnorm) or _leads(snorm, lnorm, lkey)):
                    # not "Brazil" / "Brazilian Coffee Institute" (a place), nor
                    # "GATT" / "GATT Council" (an acronym is a name of its own)
                    rest = [w for w in _words(lnorm)[1:] if w not in LINK_WORDS]
                    # a place after the name makes a branch: checked below
                    prefixed.append((snorm, lnorm, "of " + " ".join(rest)))
                elif prefix := _place_prefix(snorm, lnorm):
                    prefixed.append((snorm, lnorm, prefix))
    return c


def _pairs(values: Iterable[tuple[str, str]]) -> list[list[str]]:
    """One article's evidence as saved: its distinct [facet, value] names, sorted."""
    return [list(p) for p in sorted(
        {(f, v) for f, v in values if f in NAME_FACETS and v and v.strip()}
    )]  # fmt: skip


class _Totals:
    """The contributions of every article summed; zero counts are dropped, so the sums of
    an archive built article by article (adding, replacing, forgetting) equal those of
    the same articles counted at once."""

    def __init__(self) -> None:
        self.forms: dict[str, Counter] = defaultdict(Counter)  # key -> written forms
        self.types: dict[str, Counter] = defaultdict(Counter)  # key -> facets
        self.votes: Counter = Counter()  # (short norm, long norm) -> votes
        self.prefixed: Counter = Counter()  # (short norm, long norm, prefix) -> articles
        self.together: Counter = Counter()  # (short norm, long norm) -> articles voting
        self.articles: Counter = Counter()  # key -> articles naming it

    def add(self, c: _Contribution, sign: int) -> None:
        for table, pairs in ((self.forms, c.forms), (self.types, c.types)):
            for k, v in pairs:
                inner = table[k]
                inner[v] += sign
                if inner[v] <= 0:
                    del inner[v]
                    if not inner:
                        del table[k]
        for snorm, lnorm, n in c.votes:
            self.votes[(snorm, lnorm)] += sign * n
            self.together[(snorm, lnorm)] += sign
            if self.votes[(snorm, lnorm)] <= 0:
                del self.votes[(snorm, lnorm)]
                del self.together[(snorm, lnorm)]
        for k in c.keys:
            self.articles[k] += sign
            if self.articles[k] <= 0:
                del self.articles[k]
        for key in c.prefixed:
            self.prefixed[key] += sign
            if self.prefixed[key] <= 0:
                del self.prefixed[key]


class AliasTable:
    """Evidence per article, and the aliases it gives (see the module docstring)."""

    def __init__(self) -> None:
        self.articles: dict[str, list[list[str]]] = {}  # article id -> [facet, value] pairs
        self.overrides: dict[str, str] = {}  # folded alias -> canonical as written
        self._n = 0  # anonymous articles learnt (benchmarks)
        self._resolver: Resolver | None = None
        self._sums: _Totals | None = None  # the evidence summed, once asked for
        self._learnt: Resolver | None = None  # learnt() of the sums, until they change
        self.version = "0"

    # -- evidence ------------------------------------------------------------
    def learn(self, values: Iterable[tuple[str, str]], article_id: str | None = None) -> None:
        """Record the name values of one article (replacing its earlier evidence)."""
        if article_id is None:
            self._n += 1
            article_id = f"\0{self._n}"
        pairs = _pairs(values)
        if self.articles.get(article_id) == pairs:
            return  # replaced by a version naming the same names: the evidence is the same
        self.forget(article_id)
        self.articles[article_id] = pairs
        if self._sums is not None:
            self._sums.add(_contribution(pairs), 1)
        self._resolver = self._learnt = None

    def forget(self, article_id: str) -> None:
        """Drop the evidence of a deleted article."""
        old = self.articles.pop(article_id, None)
        if old is not None:
            if self._sums is not None:
                self._sums.add(_contribution(old), -1)
            self._resolver = self._learnt = None

    # -- the aliases -----------------------------------------------------------
    def resolver(self) -> Resolver:
        """The mapping for the current evidence and overrides (computed once per change)."""
        if self._resolver is None:
            self._resolver = with_overrides(self.learnt(), self.overrides, self.version)
        return self._resolver

    def canonical(self, facet: str, value: str) -> str:
        """The canonical display form of one value."""
        return self.resolver().name(value)

    def mappings(self, weakest: int | None = None) -> list[Mapping]:
        """Every name key joined to another, as written most often, with the rule and the
        evidence behind it (``Resolver.evidence``); with ``weakest``, only that many of the
        least evidence (the ones to review first), weakest first."""
        r = self.resolver()
        forms = self._totals().forms
        out = []
        for k, c in r.canon.items():
            written = forms.get(k)
            alias = written.most_common(1)[0][0] if written else k
            rule, n = r.evidence.get(k, ("override", 0))
            out.append(Mapping(alias, r.display.get(c, c), rule, n))
        if weakest is not None:
            out.sort(key=lambda m: (m.rule == "override", m.evidence, fold(m.alias)))
            return out[:weakest]
        return sorted(out, key=lambda m: (fold(m.alias), m.alias))

    def listing(
        self, facet: str | None = None, search: str = "", weakest: int | None = None
    ) -> list[tuple[str, str, str, str, int]]:
        """``pairs()`` with each alias's rule and evidence (``Resolver.evidence``): (facet,
        alias as written, canonical, rule, articles), of one facet and naming ``search``
        (accents and case ignored) if given; with ``weakest``, only that many of the least
        evidence, weakest first (overrides last: they are yours)."""
        r = self.resolver()
        want = fold(search)
        rows = []
        for f, alias, canonical in self.pairs():
            if facet is not None and f != facet:
                continue
            if want and want not in fold(alias) and want not in fold(canonical):
                continue
            key = fold(alias)
            # a form of the canonical name itself: the articles writing it
            rule, n = r.evidence.get(key) or ("spelling", self._totals().articles.get(key, 0))
            rows.append((f, alias, canonical, rule, n))
        if weakest is not None:
            rows.sort(key=lambda row: (row[3] == "override", row[4], fold(row[1])))
            rows = rows[:weakest]
        return rows

    def pairs(self) -> list[tuple[str, str, str]]:
        """(facet, alias as written, canonical) for every value that is not its own canonical."""
        r = self.resolver()
        written = self._written()
        out = []
        for (facet, key), forms in sorted(written.items()):
            c = r.key(key)
            if c == key and key not in r.targets:
                continue  # a name with no alias: nothing to list
            shown = r.display.get(c, forms.most_common(1)[0][0])
            for form in sorted(forms):
                if form != shown:
                    out.append((facet, form, shown))
        return out

    def _written(self) -> dict[tuple[str, str], Counter]:
        written: dict[tuple[str, str], Counter] = defaultdict(Counter)
        for values in self.articles.values():
            for facet, value in values:
                written[(facet, fold(value))][value] += 1
        return written

    def _totals(self) -> _Totals:
        """The evidence summed over articles (kept, and updated article by article)."""
        if self._sums is None:
            sums = _Totals()
            for values in self.articles.values():
                sums.add(_contribution(values), 1)
            self._sums = sums
        return self._sums

    def learnt(self) -> Resolver:
        """The aliases the evidence gives, without the overrides (kept until it changes)."""
        if self._learnt is None:
            self._learnt = self._learn_all()
        return self._learnt

    def _contexts(
        self, wanted: set[str], group_of: dict[str, str]
    ) -> tuple[dict[str, list[set[str]]], set[str]]:
        """The names of each story naming one of ``wanted`` (norm -> its stories' name
        sets), and the names that tell nothing of a story's subject: those of more than
        ``CONTEXT_COMMON`` of the archive's stories, and of more than ``CONTEXT_MIN``
        ("UK", "BBC")."""
        names_of: dict[str, list[set[str]]] = defaultdict(list)
        df: Counter = Counter()
        for values in self.articles.values():
            norms = {group_of.get(k, k) for k in {_fold(v) for _, v in values}}
            df.update(norms)
            for norm in norms & wanted:
                names_of[norm].append(norms)
        many = max(CONTEXT_MIN, CONTEXT_COMMON * len(self.articles))
        return names_of, {norm for norm, n in df.items() if n > many}

    def _out_of_context(
        self, surnames: dict[str, tuple[str, int]], contexts: tuple[dict, set[str]]
    ) -> list[str]:
        """The surnames (of ``surnames``: norm -> full name norm) whose stories alone share no
        name with the stories of the full name more often than they share one (a story
        naming nothing else tells nothing)."""
        names_of, common = contexts
        out = []
        for norm, (best, _) in surnames.items():
            world = set().union(*names_of[best]) - common - {norm, best}
            shared = against = 0
            for names in names_of[norm]:
                others = names - common - {norm, best}
                if others & world:
                    shared += 1
                elif others:
                    against += 1
            if against > shared:
                out.append(norm)
        return out

    def _by_context(
        self, disputed: dict[str, tuple[str, int, list[str]]], contexts: tuple[dict, set[str]]
    ) -> dict[str, tuple[str, int]]:
        """Surnames whose full names are shared (``disputed``: norm -> (the most named full
        name, its stories, the others, each named in one story)) decided by their stories:
        each story saying the surname alone goes to the one full name whose stories share
        the most names with it; the surname joins the most named full name when it takes
        ``SURNAME_SHARE`` of the stories that go somewhere, at least ``CONTEXT_VOTES`` of
        them, and these are half of the surname's stories or more. ("Reagan": Ronald
        Reagan takes 278 stories of wire copy, Nancy Reagan 2; "Ronaldo": Cristiano Ronaldo
        4, "Brazilian Ronaldo" 3.)"""
        names_of, common = contexts
        out = {}
        for norm, (best, n, rivals) in disputed.items():
            worlds = {c: set().union(*names_of[c]) - common - {norm, c} for c in (best, *rivals)}
            votes: Counter = Counter()
            for names in names_of[norm]:
                scores = {c: len((names - common) & w) for c, w in worlds.items()}
                top = max(scores.values())
                winners = [c for c, v in scores.items() if v == top]
                if top and len(winners) == 1:
                    votes[winners[0]] += 1
            total = sum(votes.values())
            if (
                votes[best] >= CONTEXT_VOTES
                and votes[best] >= SURNAME_SHARE * total
                and 2 * total >= len(names_of[norm])
            ):
                out[norm] = (best, n)
        return out

    def _learn_all(self) -> Resolver:
        sums = self._totals()
        forms, types = dict(sums.forms), dict(sums.types)  # read only: no keys added
        votes: dict[str, Counter] = defaultdict(Counter)  # short norm -> long norm -> votes
        for (snorm, lnorm), n in sums.votes.items():
            votes[snorm][lnorm] = n
        together: Counter = Counter(sums.together)  # (short, long) -> articles naming both
        prefixed = sums.prefixed
        # 1. spelling variants: one group per normal form
        group_of: dict[str, str] = {k: normal_form(k) for k in forms}
        # ... but a firm's name ("Eton Corporation") is not a bare word the archive types
        # as something else ("Eton", a school and a town): a corporate suffix makes an org
        suffixed = [k for k in types if _suffixed(k)]
        if suffixed:
            firms = {group_of[k] for k in suffixed}
            bare_types: dict[str, Counter] = defaultdict(Counter)
            for k, t in types.items():
                if group_of[k] in firms and not _suffixed(k):
                    bare_types[group_of[k]].update(t)
            for k in suffixed:
                bare = bare_types.get(group_of[k])
                if bare is not None and _dominant(bare) not in (None, "org"):
                    group_of[k] = k
        group_forms: dict[str, Counter] = defaultdict(Counter)
        group_types: dict[str, Counter] = defaultdict(Counter)  # norm -> facet -> articles
        group_articles: Counter = Counter()  # norm -> articles naming it
        for k, c in forms.items():
            group_forms[group_of[k]].update(c)
            group_types[group_of[k]].update(types[k])
            group_articles[group_of[k]] += sums.articles[k]
        full_people = {  # norm of a person's name of two words or more -> articles
            norm: group_articles[norm]
            for norm, t in group_types.items()
            if len(_words(norm)) >= 2
            and _dominant(t) == "person"
            and _written_as_name(group_forms[norm].most_common(1)[0][0])
        }
        retyped = _persons_retyped(group_types, full_people)

        def type_of(norm: str) -> str | None:
            """The archive's type of a name, when two stories or more tell it."""
            t = group_types.get(norm)
            return retyped.get(norm) or (_dominant(t, 2) if t is not None else None)

        # "U.S. Treasury" / "Treasury": the prefix must be a place of the archive
        places = {group_of[k] for k, t in types.items() if t["place"] > t["org"] + t["person"]}
        articles_of: Counter = Counter()  # norm -> articles naming it
        for k, c in forms.items():
            articles_of[group_of[k]] += sum(c.values())
        target: dict[str, str] = {}  # norm -> norm it joins
        why: dict[str, tuple[str, int]] = {}  # norm -> (rule, articles of evidence)
        for (snorm, lnorm, prefix), n in prefixed.items():
            if prefix.startswith("of "):
                # "House" / "House of Representatives"; not "Volkswagen" / "Volkswagen of
                # America" or "Volkswagen U.S. Inc", a branch named after a place
                # nor "Texaco" (mostly written "Texaco Inc": a firm of its own) / "Texaco
                # Pipeline Co"
                tail = prefix[3:]
                gf = group_forms[snorm]
                suffixed = sum(
                    n for f, n in gf.items() if f.split()[-1].rstrip(".").lower() in CORPORATE
                )
                firm = 3 * suffixed >= sum(gf.values())  # mostly written as a firm
                if tail and not firm and tail not in places and tail.split()[-1] not in places:
                    votes[snorm][lnorm] += n
                    together[(snorm, lnorm)] += n
            elif prefix in places:
                # one body; shown under the form the archive writes more often
                if articles_of[snorm] > articles_of[lnorm]:
                    votes[lnorm][snorm] += n
                    together[(lnorm, snorm)] += n
                else:
                    votes[snorm][lnorm] += n
                    together[(snorm, lnorm)] += n
        # 2. short forms by votes (2 = exact initials, 1 = reordered letters or clipping)
        for snorm, cands in votes.items():
            short_type = type_of(snorm)
            acronym = _acronym_form(group_forms[snorm].most_common(1)[0][0])
            agree = Counter()
            for lnorm, n in cands.items():
                long_type = type_of(lnorm)
                if acronym and long_type == "person":
                    continue  # an acronym stands for a body or a thing, not for a person
                if short_type and long_type and short_type != long_type:
                    continue  # "Gateshead" (a town) / "Gateshead's Sage Centre" (a venue)
                agree[lnorm] = n
            if not agree:
                continue
            (best, n), *rest = agree.most_common() + [("", 0)]
            total = sum(cands.values())
            # named beside other bodies (names sharing less than half the words of this
            # one, not its variants) in a third of the stories where it meets a longer
            # name: contradicted, withdrawn
            met = sum(
                together[(snorm, lnorm)]
                for lnorm in cands
                if lnorm == best or not _alike(lnorm, best)
            )
            # one story spelling an acronym out is not enough when four others use it
            # alone: the letters may be another body's there ("NEC", Labour's executive
            # committee in one story, the electronics firm in six)
            alone = group_articles[snorm] - together[(snorm, best)]
            if together[(snorm, best)] < 2 and alone >= ALONE_MAX:
                continue
            if best and n >= 2 and n * 2 > total and 3 * together[(snorm, best)] >= 2 * met:
                target[snorm] = best
                why[snorm] = ("together", together[(snorm, best)])
        # "Calif." / "California": an abbreviation (a word ending in a dot) of the one
        # longer word of the archive of the same type that it starts
        words_of_type: dict[str, dict[str, int]] = defaultdict(dict)
        for k, t in types.items():
            norm = group_of[k]
            if len(_words(norm)) == 1 and articles_of[norm] >= 2:
                words_of_type[t.most_common(1)[0][0]][norm] = articles_of[norm]
        for k, t in types.items():
            written = forms[k].most_common(1)[0][0]
            if not re.fullmatch(r"[A-Z][a-z]{2,}\.", written) or group_of[k] in target:
                continue
            stem = group_of[k]
            longer = [w for w in words_of_type[t.most_common(1)[0][0]] if w.startswith(stem)]
            longer = [w for w in longer if len(w) > len(stem) + 1]
            if len(longer) == 1:
                target[stem] = longer[0]
                why[stem] = ("abbrev", articles_of[longer[0]])
        # an acronym never written beside its expansion ("ATT"): the one org name of the
        # archive with exactly its initials, when both are common (3 articles or more)
        by_initials: dict[str, list[str]] = defaultdict(list)
        for k, t in types.items():
            norm = group_of[k]
            if t["org"] and len(_words(norm)) >= 2 and articles_of[norm] >= 3:
                ini = _spelt_initials(forms[k].most_common(1)[0][0], k)
                if len(ini) >= 3 and norm not in by_initials[ini]:
                    by_initials[ini].append(norm)
        for k, t in types.items():
            norm = group_of[k]
            if norm in target or norm in votes or articles_of[norm] < 3 or not t["org"]:
                continue
            written = forms[k].most_common(1)[0][0]
            letters = short_letters(norm) if _acronym_form(written) else None
            if letters and len(letters) >= 3 and len(by_initials.get(letters, [])) == 1:
                target[norm] = by_initials[letters][0]
                why[norm] = ("initials", min(articles_of[norm], articles_of[target[norm]]))
        # 3. a surname alone -> the one full person name of the archive it stands for
        surnames: dict[str, tuple[str, int]] = {}  # surname norm -> (full name norm, articles)
        disputed: dict[str, tuple[str, int, list[str]]] = {}  # ... whose full names are shared
        by_last: dict[str, Counter] = defaultdict(Counter)  # word -> full names ending so
        by_first: dict[str, Counter] = defaultdict(Counter)  # word -> full names starting so
        for norm, n in full_people.items():
            ws = _words(norm)
            by_last[ws[-1]][norm] = n
            by_first[ws[0]][norm] = n
        for norm, t in group_types.items():
            ws = _words(norm)
            if len(ws) != 1 or norm in target or not (t["person"] or t["speaker"]):
                continue
            if t["org"] + t["place"] > t["person"] + t["speaker"] or norm in retyped:
                continue
            cands = by_last.get(ws[0])
            if not cands:
                continue
            if not _written_as_name(group_forms[norm].most_common(1)[0][0]):
                continue  # "AK" (of "Graz AK"): an acronym is no surname
            given = by_first[ws[0]]
            if len(given) >= 2 and sum(given.values()) >= sum(cands.values()):
                continue  # a first name ("Charles", "Bill"): several people of the archive
            best, n = cands.most_common(1)[0]
            # the other people of that surname; "G Henson" (a results table) is Gavin Henson
            first = _words(best)[0]
            others = sum(
                m
                for name, m in cands.items()
                if name != best and not (len(_words(name)[0]) == 1 and first[0] == name[0])
            )
            if n >= 2 and n >= SURNAME_SHARE * (n + others):
                surnames[norm] = (best, n)
            elif n >= 2 and 2 * n > n + others:
                # the others each named in one story: the stories saying it alone may tell
                rivals = [name for name in cands if name != best and cands[name] < 2]
                if len(rivals) == len(cands) - 1:
                    disputed[norm] = (best, n, rivals)
        # ... and only when the stories saying the surname alone are about the same world as
        # those naming the person in full: a surname alone is understood from its story
        # (the Liverpool substitute "Carson" is not the late TV host Johnny Carson)
        wanted = set(surnames) | {best for best, _ in surnames.values()} | set(disputed)
        for best, _, rivals in disputed.values():
            wanted.update((best, *rivals))
        contexts = self._contexts(wanted, group_of) if wanted else ({}, set())
        for norm in self._out_of_context(surnames, contexts):
            del surnames[norm]
        surnames.update(self._by_context(disputed, contexts))
        for norm, (best, n) in surnames.items():
            target[norm] = best
            why[norm] = ("surname", n)

        def final(norm: str) -> str:
            seen = {norm}
            while norm in target and target[norm] not in seen:
                norm = target[norm]
                seen.add(norm)
            return norm

        r = Resolver()
        display_of_norm: dict[str, str] = {}
        for norm, c in group_forms.items():
            display_of_norm[norm] = min(c, key=lambda f: (-c[f], -len(f), f))
        for k in forms:
            cnorm = final(group_of[k])
            shown = display_of_norm.get(cnorm, k)
            ckey = _fold(shown)
            if ckey != k:
                r.canon[k] = ckey
                r.display[ckey] = shown
        for ckey in set(r.canon.values()):
            r.canon.pop(ckey, None)  # a canonical key is its own
        r.targets = set(r.canon.values())
        for k in r.canon:  # the rule of the first step, the least evidence of any step
            norm = group_of[k]
            if norm not in target:  # a spelling of its canonical name
                r.evidence[k] = ("spelling", sums.articles[k])
                continue
            rule, n = why[norm]
            seen = {norm}
            while norm in target and target[norm] not in seen:
                n = min(n, why[norm][1])
                norm = target[norm]
                seen.add(norm)
            r.evidence[k] = (rule, n)
        # 4. the type of each canonical name: the entity facet of at least two thirds of
        # the articles naming it (or one of its aliases), in three articles or more
        typed: dict[str, Counter] = defaultdict(Counter)
        for k, t in types.items():
            c = r.canon.get(k, k)
            for f in ENTITY_FACETS:
                typed[c][f] += t[f]
        retyped_keys = {r.canon.get(k, k): f for k in types if (f := retyped.get(group_of[k]))}
        for c, t in typed.items():
            f, n = t.most_common(1)[0]
            if c in retyped_keys:  # "Labour", "Yukos": no person is called so
                r.types[c] = retyped_keys[c]
            elif n >= 3 and 3 * n >= 2 * sum(t.values()) and n < sum(t.values()):
                r.types[c] = f
            else:
                continue
            shown = display_of_norm.get(group_of.get(c, ""), "")
            if c not in r.display and shown and _fold(shown) == c:
                r.display[c] = shown
        return r


def article_names(passages: Iterable[Any]) -> list[tuple[str, str]]:
    """The (facet, value) name pairs of one article's passages: its alias evidence."""
    out: set[tuple[str, str]] = set()
    for p in passages:
        for e in p.entities:
            if e.type in NAME_FACETS:
                out.add((e.type, e.name))
        for q in p.quotes:
            if q.speaker:
                out.add(("speaker", q.speaker))
    return sorted(out)
