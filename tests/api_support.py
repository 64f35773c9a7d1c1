"""Shared helpers of the API tests: a small tagged corpus and a dictionary enricher.

The enricher is a real component, not a mock: it tags known names with
regular expressions and finds ``"...", X said`` quotations, so facets and
quote search have something to count without loading spaCy.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import requests

from newsquarry.search.core.models import Article, Entity, Passage, Quote

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "s3cret-token-for-tests"
NAMES = {
    "Harry Solano": "person",
    "Nicolás Maduro": "person",
    "Juan Guaidó": "person",
    "Ana Ruiz": "person",
    "National Guard": "org",
    "PDVSA": "org",
    "Reuters": "org",
    "Venezuela": "place",
    "Caracas": "place",
    "Colombia": "place",
}
QUOTE_RE = re.compile(r"[\"“]([^\"”]+)[\"”],? (?:said|says) ([A-Z]\w+(?: [A-Z]\w+)?)")


class TagEnricher:
    """Dictionary entity tagger plus a ``"...", Name said`` quote finder."""

    def enrich(
        self, items: Iterable[tuple[Article, list[Passage]]]
    ) -> Iterator[tuple[Article, list[Passage]]]:
        for article, passages in items:
            for p in passages:
                p.entities = [
                    Entity(text=m.group(0), name=name, type=type_, start=m.start(), end=m.end())
                    for name, type_ in NAMES.items()
                    for m in re.finditer(re.escape(name), p.text)
                ]
                p.entities.sort(key=lambda e: e.start)
                p.quotes = [
                    Quote(
                        text=m.group(1),
                        start=m.start(1),
                        end=m.end(1),
                        kind="direct",
                        speaker=_full(m.group(2)),
                        speaker_mention=m.group(2),
                        cue="said",
                    )
                    for m in QUOTE_RE.finditer(p.text)
                ]
            yield article, passages


def _full(mention: str) -> str:
    for name, type_ in NAMES.items():
        if type_ == "person" and (mention == name or name.endswith(" " + mention)):
            return name
    return mention


ARTICLES = [
    {
        "id": "solano-exile",
        "title": "Soldiers risk a false trip",
        "source": "News from the world",
        "date": "2019-02-20",
        "url": "https://example.org/solano",
        "text": (
            "Harry Solano was a sergeant of the National Guard in Venezuela. He is now an exile "
            "in Colombia who meets opposition members in hotels across the border.\n\n"
            '"They will torture you and kill you and your family," said Harry Solano. The '
            "National Guard denied it. Nicolás Maduro still commands the levers of power in "
            "Caracas.\n\n"
            'Juan Guaidó has the support of dozens of countries. "The army must choose," '
            "said Guaidó, speaking in Caracas to a crowd of supporters on Saturday."
        ),
    },
    {
        "id": "oil-output",
        "title": "PDVSA output falls again",
        "source": "Reuters",
        "date": "2019-03-05",
        "text": (
            "PDVSA, the state oil company of Venezuela, pumped less crude in February than in any "
            "month for decades, according to figures gathered by Reuters.\n\n"
            '"Production will recover when sanctions ease," said Ana Ruiz, an analyst in '
            "Caracas who follows the oil industry and its <script>alert(1)</script> problems."
        ),
    },
    {
        "id": "border-aid",
        "title": "Aid waits at the Colombian border",
        "source": "News from the world",
        "date": "2018-12-01",
        "text": (
            "Trucks of humanitarian aid waited in Colombia near the bridge to Venezuela while "
            "Juan Guaidó asked the National Guard to let them pass.\n\n"
            "Nicolás Maduro called the aid a show and said the border would stay closed to "
            "protect the country from an invasion."
        ),
    },
]

for i in range(30):  # filler articles for paging
    ARTICLES.append(
        {
            "id": f"filler-{i:02d}",
            "title": f"Market report {i}",
            "source": "Reuters",
            "date": f"2020-{1 + i % 12:02d}-{1 + i % 27:02d}",
            "text": f"Oil prices moved in report number {i}. Traders in Caracas watched PDVSA.",
        }
    )


def build_index(path: Path) -> None:
    """Index ``ARTICLES`` into ``path`` with the tag enricher."""
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.indexer import index_articles
    from newsquarry.search.ingest.readers import article_from_mapping

    store = WhooshStore(path)
    index_articles(store, [article_from_mapping(a) for a in ARTICLES], enricher=TagEnricher())
    store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """gunicorn serving the app on a free loopback port, in a subprocess."""

    def __init__(
        self,
        app: str,
        env: dict[str, str],
        workers: int = 2,
        threads: int = 4,
        extra: list[str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = dict(os.environ, **env, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests'}")
        # a file, not a pipe: an unread pipe fills up and blocks the server's logging
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                str(ROOT / "api" / "gunicorn_conf.py"),
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                *(extra or []),
                app,
            ],
            cwd=ROOT,
            env=full_env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self._wait()

    def _wait(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("gunicorn exited:\n" + self.logs())
            try:
                requests.get(self.url + "/health/live", timeout=5)
                return
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("gunicorn did not start in time")

    def stop(self) -> str:
        """Stop the server; returns what it logged."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.logs()

    def logs(self) -> str:
        """What the server logged so far."""
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")


# one quotation carried, edited, by four articles of three sources (quotation clusters)
CLUSTER_QUOTE = (
    "We will not accept any agreement that leaves the farmers of this country without "
    "a fair price for their wheat"
)
CLUSTER_COPIES = [  # (id, date, source, wording), the first seen second
    ("wheat-late", "2020-03-05", "Daily Post", CLUSTER_QUOTE),
    ("wheat-first", "2020-03-01", "Wire", CLUSTER_QUOTE.replace("agreement", "deal")),
    ("wheat-cut", "2020-03-07", "Evening News", CLUSTER_QUOTE.split(" that ")[1]),
    ("wheat-dots", "2020-03-08", "Wire", CLUSTER_QUOTE.replace("any agreement that", "...")),
]


def cluster_articles() -> list[dict]:
    """The four copies of ``CLUSTER_QUOTE`` (quoted from Ana Ruiz) and four articles
    quoting her on other matters."""
    out = [
        {"id": aid, "title": f"Wheat talks ({source})", "source": source, "date": date,
         "text": f"Farm talks went on in Caracas.\n\n\u201c{words},\u201d said Ana Ruiz."}
        for aid, date, source, words in CLUSTER_COPIES
    ]  # fmt: skip
    for i, topic in enumerate(("coffee", "sugar", "rice", "cotton")):
        out.append({
            "id": f"crop-{topic}", "title": f"{topic.title()} harvest", "source": "Wire",
            "date": f"2020-04-0{i + 1}",
            "text": f"A report on {topic}.\n\n\u201cThe {topic} harvest in the west will be "
                    f"late again this year because of the rain in {2000 + i},\u201d said Ana Ruiz.",
        })  # fmt: skip
    return out


def build_cluster_index(path: Path) -> None:
    """Index ``cluster_articles()`` into ``path``, in two commits."""
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.indexer import index_articles
    from newsquarry.search.ingest.readers import article_from_mapping

    store = WhooshStore(path)
    arts = [article_from_mapping(a) for a in cluster_articles()]
    index_articles(store, arts[:2] + arts[4:], enricher=TagEnricher())
    index_articles(store, arts[2:4], enricher=TagEnricher())
    store.close()


CRASH_MARK = "CRASH-THE-ENRICHER"


class CrashingEnricher(TagEnricher):
    """The tag enricher, whose process dies (SIGKILL, as the kernel's OOM killer does) on a
    text holding ``CRASH_MARK``: a real crash of the process that enriches."""

    def enrich(
        self, items: Iterable[tuple[Article, list[Passage]]]
    ) -> Iterator[tuple[Article, list[Passage]]]:
        for article, passages in super().enrich(items):
            if CRASH_MARK in article.text:
                os.kill(os.getpid(), signal.SIGKILL)
            yield article, passages
