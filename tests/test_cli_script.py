"""The command line as a script tool: exports, errors that name the options typed,
index folders, --index/--url after the command, keys, progress and plurals.

The index is real (Whoosh under tmp_path) and the API is the real app (Flask's test
client, or gunicorn through ``api_support.LiveServer``); quotations come from the
dictionary tagger of ``api_support`` so no spaCy model is loaded.
"""

from __future__ import annotations

import csv
import http.server
import io
import json
import re
import threading

import pytest
from api_support import ARTICLES, TagEnricher
from click.testing import CliRunner

from newsquarry.api import create_app
from newsquarry.search.cli.app import cli
from newsquarry.search.cli.commands.write import ProgressReporter
from newsquarry.search.cli.output import make_console, plural, print_facet
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import Progress, index_articles
from newsquarry.search.ingest.readers import article_from_mapping
from newsquarry.search.query.export import PASSAGE_COLUMNS, QUOTE_COLUMNS

N_STATEMENTS = 120  # more than one export page (max_per_page = 100)
STATEMENTS = [
    {
        "id": f"statement-{i:03d}",
        "title": f"Statement {i}",
        "source": "Wire" if i % 2 else "=cmd|' /C calc'!A0",  # a formula-like cell, quoted
        "date": f"2021-{1 + i % 12:02d}-{1 + i % 28:02d}",
        "text": f'"Point {i} of the statement stands," said Harry Solano in Caracas, '
        f"where the National Guard watched the crowd of supporters on day {i}.",
    }
    for i in range(N_STATEMENTS)
]


@pytest.fixture(scope="module")
def ix(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("script") / "index"
    store = WhooshStore(path)
    articles = [article_from_mapping(a) for a in ARTICLES + STATEMENTS]
    index_articles(store, articles, enricher=TagEnricher())
    store.close()
    return str(path)


def cli_run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


def api_get(ix: str, url: str) -> bytes:
    resp = create_app({"index": ix}).test_client().get(url)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_data()


# -- --all: every record, the API's export byte for byte --------------------------------


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_quotes_all_is_the_api_export_byte_for_byte(ix, fmt):
    r = cli_run("--index", ix, "quotes", "--speaker", "Harry Solano", "--all", f"--{fmt}")
    assert r.exit_code == 0, r.output
    api = api_get(ix, f"/v1/quotes?speaker=Harry%20Solano&format={fmt}&export=true")
    assert r.stdout_bytes == api
    lines = r.stdout_bytes.decode("utf-8").splitlines()
    assert len(lines) == N_STATEMENTS + 1 + (fmt == "csv")  # and the one in solano-exile
    assert r.stderr == ""  # nothing left out: no note


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_search_all_is_the_api_export_byte_for_byte(ix, fmt):
    r = cli_run("--index", ix, "search", "statement", "-n", "all", f"--{fmt}")
    assert r.exit_code == 0, r.output
    assert r.stdout_bytes == api_get(ix, f"/v1/search?q=statement&format={fmt}&export=true")
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(r.stdout_bytes.decode("utf-8"))))
        assert len(rows) == N_STATEMENTS
        assert len({row["id"] for row in rows}) == N_STATEMENTS
        assert {row["source"] for row in rows} == {"Wire", "'=cmd|' /C calc'!A0"}


def test_all_with_filters_and_sort_matches_the_api(ix):
    args = ["quotes", "statement", "--speaker", "Harry Solano", "--since", "2021-06",
            "--sort", "-date", "--all", "--csv"]  # fmt: skip
    r = cli_run("--index", ix, *args)
    assert r.exit_code == 0, r.output
    url = ("/v1/quotes?q=statement&speaker=Harry%20Solano&date_from=2021-06&sort=-date"
           "&format=csv&export=true")  # fmt: skip
    assert r.stdout_bytes == api_get(ix, url)
    assert r.stdout_bytes.count(b"\r\n") > 10


def test_all_that_finds_nothing_exits_1_with_a_header(ix):
    r = cli_run("--index", ix, "quotes", "zeppelin", "--all", "--csv")
    assert r.exit_code == 1
    assert r.stdout_bytes == (",".join(QUOTE_COLUMNS) + "\r\n").encode()


def test_all_needs_a_record_format(ix):
    for extra in ([], ["--json"]):
        r = cli_run("--index", ix, "quotes", "--all", *extra)
        assert r.exit_code == 2 and "--all writes --jsonl or --csv" in r.stderr
    r = cli_run("--index", ix, "search", "x", "--all", "--csv", "--page", "2")
    assert r.exit_code == 2 and "leave out --page" in r.stderr


# -- a page of records: the API's columns, and a note when it is not all ----------------


def test_csv_columns_are_the_api_records(ix):
    r = cli_run("--index", ix, "search", "Guaidó", "--csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout_bytes.decode("utf-8"))))
    assert tuple(rows[0]) == PASSAGE_COLUMNS
    assert {"position", "url", "people", "orgs", "places"} <= set(rows[0])
    solano = next(row for row in rows if row["article_id"] == "solano-exile")
    assert "Juan Guaidó" in solano["people"] and solano["url"] == "https://example.org/solano"
    assert r.stdout_bytes == api_get(ix, "/v1/search?q=Guaid%C3%B3&format=csv")
    r = cli_run("--index", ix, "quotes", "--speaker", "Harry Solano", "--csv", "-n", "3")
    rows = list(csv.DictReader(io.StringIO(r.stdout_bytes.decode("utf-8"))))
    assert tuple(rows[0]) == QUOTE_COLUMNS and len(rows) == 3
    assert all(row["title"] and row["date"] and row["source"] for row in rows)


def test_a_page_that_is_not_everything_says_so_on_stderr(ix):
    total = N_STATEMENTS + 1
    r = cli_run("--index", ix, "quotes", "--speaker", "Harry Solano", "--csv")
    assert r.exit_code == 0
    assert r.stdout_bytes.count(b"\r\n") == 11  # header + the default 10
    assert r.stderr == (
        f"Note: 10 of {total} quotations written (page 1 of 13); --all writes every one.\n"
    )
    r = cli_run("--index", ix, "search", "statement", "--jsonl", "-n", "100", "--page", "2")
    assert "Note: 20 of 120 passages written (page 2 of 2)" not in r.stderr  # the last page
    assert r.stderr == "" and len(r.stdout_bytes.splitlines()) == 20
    r = cli_run("--index", ix, "search", "statement", "--json", "-n", "5")
    assert "Note: 5 of 120 passages written (page 1 of 24)" in r.stderr
    assert json.loads(r.stdout)["total"] == 120  # stdout stays the record


# -- errors name the options typed -------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["quotes", "-n", "1000"],
         "Error: -n/--limit: must be between 1 and 100, got 1000; --all writes every result"),
        (["search", "x", "--since", "yesterday"],
         "Error: --since: 'yesterday' is not a date; use YYYY, YYYY-MM or YYYY-MM-DD"),
        (["quotes", "--until", "2019-13"], "Error: --until: '2019-13' is not a valid date"),
        (["search", "x", "--page", "200", "-n", "100"], "Error: --page: page 200 with -n 100 goes past result 10000"),
        (["search", "x", "--facet", "nope"], "Error: --facet: unknown facet 'nope'"),
        (["search", "x", "--facet", "person", "--facet-size", "500"],
         "Error: --facet-size: must be between 1 and 100, got 500"),
        (["facets", "person", "-n", "500"], "Error: -n/--limit: must be between 1 and 100"),
        (["facets", "nope"], "Error: FACET: unknown facet 'nope'"),
        (["quotes", "-n", "0"], "Invalid value for '-n' / '--limit': 0 is not 1 or more"),
        (["quotes", "-n", "many"], "'many' is not a number nor 'all'"),
    ],
)  # fmt: skip
def test_errors_name_the_options_typed(ix, args, expected):
    r = cli_run("--index", ix, *args)
    assert r.exit_code == 2, r.output
    assert expected in r.stderr
    for field in ("per_page", "date_from", "date_to", "facet_size"):
        assert f"{field} must" not in r.stderr and f"{field}:" not in r.stderr


# -- index folders: only the default one is made on first use ----------------------------


@pytest.mark.parametrize(
    "args",
    [["search", "torture"], ["quotes"], ["facets", "person"], ["show", "x#p1"], ["stats"],
     ["delete", "x"], ["optimize"]],
)  # fmt: skip
def test_a_mistyped_index_is_an_error_not_a_new_index(tmp_path, args):
    typo = tmp_path / "indx"
    for how in (["--index", str(typo)], []):
        env = {"NEWSQUARRY_INDEX": str(typo), "XDG_DATA_HOME": str(tmp_path / "data")}
        r = cli_run(*how, *args, env=env)
        assert r.exit_code == 5, r.output
        assert r.stderr == (
            f"Error: no index at {typo} (make one with: newsquarry index FILES --index {typo})\n"
        )
        assert r.stdout == "" and not typo.exists()


def test_index_after_the_command(ix, tmp_path):
    before = cli_run("--index", ix, "search", "Guaidó", "--jsonl")
    after = cli_run("search", "Guaidó", "--jsonl", "--index", ix)
    assert after.exit_code == 0 and after.stdout_bytes == before.stdout_bytes
    # after the command it wins over the environment and the option before it
    env = {"NEWSQUARRY_INDEX": str(tmp_path / "nothing")}
    r = cli_run("--index", str(tmp_path / "no"), "stats", "--json", "--index", ix, env=env)
    assert r.exit_code == 0 and json.loads(r.stdout)["articles"] == len(ARTICLES) + N_STATEMENTS
    r = cli_run("index", str(tmp_path / "none.jsonl"), "--index", str(tmp_path / "new"))
    assert r.exit_code == 2 and (tmp_path / "new").is_dir()  # `index` makes it where told
    assert "newsquarry search x --index DIR" in cli_run("--help").stdout


def test_url_only_for_commands_that_ask_a_server(ix):
    r = cli_run("--url", "http://127.0.0.1:9", "index", "x")
    assert r.exit_code == 2 and "--url: `index` works on a local index only" in r.stderr
    r = cli_run("--url", "http://127.0.0.1:9", "--index", ix, "search", "x")
    assert r.exit_code == 5 and r.stderr.startswith("Error: cannot reach http://127.0.0.1:9")


# -- --url at something that is not newsquarry --------------------------------------------


class _NotNewsquarry(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if self.path.startswith("/json/"):
            body, ctype, status = b'{"hello": "world"}', "application/json", 200
        else:
            body, ctype, status = b"<html>Not Found</html>", "text/html", 404
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def other_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotNewsquarry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "args", [["search", "x"], ["quotes", "--all", "--csv"], ["facets", "person"], ["stats"],
             ["show", "a#p1"]],
)  # fmt: skip
def test_url_that_is_not_newsquarry(other_server, args):
    for base in (other_server, other_server + "/json"):
        r = cli_run(*args, "--url", base)
        assert r.exit_code == 5, r.output
        assert r.stderr.startswith(f"Error: not a newsquarry server at {base} ("), r.stderr
        assert "HTTP 404" not in r.stderr or "it answered HTTP 404" in r.stderr


# -- keys and the server secret ----------------------------------------------------------


def test_key_reads_the_server_secret_like_the_server():
    from newsquarry.search.query.keys import verify_key

    secret = "a-server-secret-of-32-characters"
    r = cli_run("key", "--speaker", "Harry Solano", "--expires-in", "30d",
                env={"NEWSQUARRY_SECRET": secret})  # fmt: skip
    assert r.exit_code == 0, r.output
    assert verify_key(secret, r.stdout.strip()).filters == {"speaker": ["Harry Solano"]}
    r = cli_run("key", "--speaker", "x", env={"NEWSQUARRY_SECRET": ""})
    assert r.exit_code == 2 and r.stderr == (
        "Error: no server secret: set NEWSQUARRY_SECRET to the server's secret, or pass --secret\n"
    )


SHORT = "the server secret (NEWSQUARRY_SECRET) must be at least 16 characters long, not 9"


def test_a_short_secret_is_refused_by_key_and_at_server_start(tmp_path):
    from newsquarry.search.query.keys import KeyRefused

    r = cli_run("key", "--speaker", "x", env={"NEWSQUARRY_SECRET": "123456789"})
    assert r.exit_code == 2 and r.stderr == f"Error: {SHORT}\n"
    env = {"NEWSQUARRY_SECRET": "123456789", "NEWSQUARRY_INDEX": str(tmp_path / "ix")}
    r = cli_run("serve", "--port", "1", env=env)  # refused before any port or index
    assert r.exit_code == 2 and r.stderr == f"Error: {SHORT}\n"
    assert not (tmp_path / "ix").exists()
    with pytest.raises(KeyRefused, match=r"at least 16 characters long, not 9"):
        create_app({"index": str(tmp_path / "ix"), "secret": "123456789"})


# -- progress, help, plurals ----------------------------------------------------------------


def test_progress_has_a_rate_and_eta_before_the_first_commit(tmp_path, capsys):
    store = WhooshStore(tmp_path / "ix")
    articles = [article_from_mapping(a) for a in STATEMENTS[:40]]
    seen: list[tuple[int, int, float, float | None]] = []
    reporter = ProgressReporter(interval=0.0)
    reporter.tty = False

    def record(progress: Progress, report) -> None:
        seen.append((progress.commits, progress.enriched, progress.rate, progress.eta))
        reporter.update(progress, report)

    index_articles(store, articles, enricher=TagEnricher(), commit_every=1000,
                   on_progress=record, total=40)  # fmt: skip
    before_commit = [s for s in seen if s[0] == 0]
    assert before_commit[-1][1] == 40  # every article enriched, none committed yet
    assert all(rate > 0 and eta is not None for _, n, rate, eta in before_commit if n)
    lines = capsys.readouterr().err.splitlines()
    first = next(line for line in lines if "· 0 committed" in line and " 5/40 " in line)
    # a rate of zero, not one that ends in zero ("2630.0 articles/s")
    assert not re.search(r"(?<![\d.])0\.0 articles/s", first)
    assert "ETA …" not in first and " 5/40 " in first
    store.close()


def test_index_help_shows_the_commit_every_default():
    r = cli_run("index", "--help")
    assert "[env var: NEWSQUARRY_COMMIT_EVERY; default: 2000; x>=1]" in " ".join(r.stdout.split())


def test_plurals():
    assert plural(1, "article") == "1 article" and plural(2, "article") == "2 articles"
    assert plural(0, "passage") == "0 passages" and plural(1, "match", "matches") == "1 match"
    buf = io.StringIO()
    console = make_console()
    console.file = buf
    print_facet(console, {"name": "person", "values": [{"value": "A", "count": 2}], "more": 1})
    assert "… 1 more value\n" in buf.getvalue()
    print_facet(console, {"name": "person", "values": [{"value": "A", "count": 2}], "more": 3})
    assert "… 3 more values\n" in buf.getvalue()


def test_url_after_the_command_and_before_it_are_the_same(ix):
    r1 = cli_run("--url", "http://127.0.0.1:9", "stats")
    r2 = cli_run("stats", "--url", "http://127.0.0.1:9")
    assert r1.exit_code == r2.exit_code == 5 and r1.stderr == r2.stderr
    # NEWSQUARRY_URL still applies, and a --url before the command wins over it
    r3 = cli_run("--url", "http://127.0.0.1:9", "stats", env={"NEWSQUARRY_URL": "http://x.invalid"})
    assert r3.stderr == r1.stderr


def test_the_progress_line_fits_80_columns_with_rate_and_eta_first(capsys):
    from types import SimpleNamespace

    from newsquarry.search.engine.store import WriteReport

    # a long import, two thirds done: six-digit counts, a rate in the hundreds
    progress = SimpleNamespace(
        total=234_567, processed=123_456, read=123_456, enriched=123_456, committed=120_000,
        rate=312.5, eta=3555.0, skipped_files=[],
    )  # fmt: skip
    report = WriteReport()
    report.failed = [{"path": "x", "reason": "y"}] * 12
    reporter = ProgressReporter(interval=0.0)
    reporter.tty = False
    reporter.update(progress, report)
    (line,) = capsys.readouterr().err.splitlines()
    assert len(line) <= 80, line
    first, second = line.split(" · ")[:2]
    assert first == "312.5 articles/s" and second == "ETA 00:59:15"
    assert "120000 committed" in line and "12 failed" in line and "unchanged" not in line
