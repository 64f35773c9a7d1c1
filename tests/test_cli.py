"""The command line, driven through click's CliRunner and real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from newsquarry.search.cli.app import cli
from tests._signals import default_sigint

SEED_ID = "000_e23b3335c9472580"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def runner():
    return CliRunner()


@pytest.fixture()
def index_dir(tmp_path):
    return str(tmp_path / "index")


def run(runner, index_dir, *args, env=None):
    return runner.invoke(cli, ["--index", index_dir, *args], env=env, catch_exceptions=False)


def test_index_summary_and_idempotence(runner, index_dir, corpus_dir):
    r = run(runner, index_dir, "index", str(corpus_dir))
    assert r.exit_code == 0, r.output
    assert "1 added, 0 replaced, 0 unchanged, 0 skipped, 0 failed; 19 passages written." in r.stdout
    r = run(runner, index_dir, "index", str(corpus_dir))
    assert r.exit_code == 0
    assert "0 added, 0 replaced, 1 unchanged" in r.stdout


def test_unchanged_reindex_and_missing_delete_commit_nothing(runner, index_dir, corpus_dir):
    assert run(runner, index_dir, "index", str(corpus_dir)).exit_code == 0

    def generation() -> int:
        r = run(runner, index_dir, "stats", "--json")
        return json.loads(r.stdout)["generation"]

    before = generation()
    toc = sorted(p.name for p in Path(index_dir).iterdir() if p.name.endswith(".toc"))
    assert "1 unchanged" in run(runner, index_dir, "index", str(corpus_dir)).stdout
    r = run(runner, index_dir, "delete", "no-such-article")
    assert r.exit_code == 3 and "no such article: no-such-article" in r.stderr
    assert generation() == before
    assert sorted(p.name for p in Path(index_dir).iterdir() if p.name.endswith(".toc")) == toc


def test_index_reports_bad_files_and_exit_code(runner, index_dir, corpus_dir, tmp_path):
    (corpus_dir / "bin.txt").write_bytes(b"\x00binary")
    (corpus_dir / "empty.txt").write_bytes(b"")
    (corpus_dir / "bad.txt").write_bytes(b"T\n\n\xff\xfe")
    r = run(runner, index_dir, "index", str(corpus_dir))
    # some good articles: the bad files are reported but the run succeeds
    assert r.exit_code == 0
    assert "failed: " in r.stderr and "bin.txt: binary file" in r.stderr
    assert "empty.txt: empty file" in r.stderr and "bad.txt: invalid UTF-8" in r.stderr
    assert "1 added" in r.stdout and "3 failed" in r.stdout
    # nothing indexable at all: non-zero
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "empty.txt").write_bytes(b"")
    r = run(runner, index_dir, "index", str(only_bad))
    assert r.exit_code == 2
    assert "Error: nothing could be indexed" in r.stderr


def test_stats_and_delete(runner, index_dir, corpus_dir):
    run(runner, index_dir, "index", str(corpus_dir))
    r = run(runner, index_dir, "stats", "--json")
    data = json.loads(r.stdout)
    assert (data["articles"], data["passages"]) == (1, 19) and data["quotes"] > 5
    r = run(runner, index_dir, "delete", SEED_ID)
    assert r.exit_code == 0 and f"deleted {SEED_ID}" in r.stdout
    r = run(runner, index_dir, "delete", SEED_ID)
    assert r.exit_code == 3 and "no such article" in r.stderr
    assert json.loads(run(runner, index_dir, "stats", "--json").stdout)["articles"] == 0


def test_show_passage_and_article(runner, index_dir, corpus_dir):
    run(runner, index_dir, "index", str(corpus_dir))
    r = run(runner, index_dir, "show", f"{SEED_ID}#p18", "--json")
    rec = json.loads(r.stdout)
    assert rec["speakers"] == ["Raúl Daniel Alvarenga"]
    r = run(runner, index_dir, "show", f"{SEED_ID}#p18", env={"NO_COLOR": "1"})
    assert "My escape in Colombia was like a movie" in r.stdout
    assert "— Raúl Daniel Alvarenga (direct)" in r.stdout
    assert "\x1b[" not in r.stdout
    r = run(runner, index_dir, "show", SEED_ID)
    assert r.stdout.count(f"[{SEED_ID}#p") == 19
    r = run(runner, index_dir, "show", "nope")
    assert r.exit_code == 3 and r.stderr.strip() == "Error: no article with id 'nope'"


def test_missing_index_is_a_clear_error(runner, tmp_path):
    r = run(runner, str(tmp_path / "none"), "stats")
    assert r.exit_code == 5 and r.stderr.startswith("Error: no index at")


def test_index_dir_from_environment(runner, tmp_path, corpus_dir):
    env = {"NEWSQUARRY_INDEX": str(tmp_path / "env-index")}
    r = runner.invoke(cli, ["index", str(corpus_dir)], env=env)
    assert r.exit_code == 0
    assert (tmp_path / "env-index").is_dir()


def test_help_has_examples_for_every_command(runner):
    for name, _command in cli.commands.items():
        r = runner.invoke(cli, [name, "--help"])
        assert r.exit_code == 0
        assert "Example" in r.output, name


def test_console_script_runs(tmp_path, corpus_dir):
    env = dict(os.environ, NEWSQUARRY_INDEX=str(tmp_path / "ix"), PYTHONPATH=str(ROOT))
    p = subprocess.run(
        [sys.executable, "-m", "newsquarry.search.cli", "index", str(corpus_dir)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "1 added" in p.stdout
    # not a terminal: no progress bar escape codes on stderr
    assert "\x1b[" not in p.stderr


def _many_articles(path: Path, seed_text: str, n: int) -> None:
    paras = [p for p in seed_text.split("\n\n")[1:] if p.strip()]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            text = "\n\n".join(paras[(i + k) % len(paras)] for k in range(3))
            fh.write(json.dumps({"id": f"art-{i:04d}", "title": f"Story {i}", "text": text}) + "\n")


def test_ctrl_c_during_indexing_keeps_committed_articles(tmp_path, seed_file):
    import signal

    from tests._writegate import FirstCommitGate

    feed = tmp_path / "feed.jsonl"
    _many_articles(feed, seed_file.read_text(encoding="utf-8"), 120)
    env = dict(os.environ, NEWSQUARRY_INDEX=str(tmp_path / "ix"), PYTHONPATH=str(ROOT),
               NEWSQUARRY_LOCK_TIMEOUT="600")  # fmt: skip
    cmd = [sys.executable, "-m", "newsquarry.search.cli", "index", str(feed), "--commit-every", "5"]
    # the run waits for the write lock after its first commit until the signal has been sent
    # (by state: the signal sent when the first commit's line was read once came too late)
    with FirstCommitGate(tmp_path / "ix") as gate:
        with default_sigint():
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)  # fmt: skip
        gate.let_one_commit_through(proc)
        lines = []
        for line in proc.stderr:  # its line for that commit
            lines.append(line)
            if " 5 committed" in line:
                break
        assert proc.poll() is None, "".join(lines)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(lines) + err
    assert "Interrupted: " in err and "the index is intact" in err
    assert "Traceback" not in err
    done = int(err.split("Interrupted: ")[1].split()[0])
    assert 5 <= done < 120 and done % 5 == 0
    # the index opens and holds exactly the committed articles, each with all its passages
    r = CliRunner().invoke(cli, ["--index", str(tmp_path / "ix"), "stats", "--json"])
    stats = json.loads(r.stdout)
    assert stats["articles"] == done
    # the same command again completes the rest, with no duplicate
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"{120 - done} added" in p.stdout and f"{done} unchanged" in p.stdout
    stats = json.loads(
        CliRunner().invoke(cli, ["--index", str(tmp_path / "ix"), "stats", "--json"]).stdout
    )
    assert stats["articles"] == 120


def _wait_for_first_commit(proc: subprocess.Popen) -> list[str]:
    """The progress lines up to the first one reporting a commit (plain lines on a pipe:
    one after every commit): the process has committed once when this returns."""
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if " committed" in line and "· 0 committed" not in line:
            return lines
    raise AssertionError("the index run ended before its first commit:\n" + "".join(lines))


@pytest.mark.parametrize("group", [False, True], ids=["process", "process-group"])
def test_sigterm_during_indexing_keeps_committed_articles(tmp_path, seed_file, group):
    """SIGTERM (systemd, docker stop, timeout) stops `index` as Ctrl-C does: the commits
    kept, one line, exit 143; sent to the whole group too (systemd's default), workers
    included. It was exit 143 with the workers' four tracebacks and no summary."""
    import signal

    feed = tmp_path / "feed.jsonl"
    _many_articles(feed, seed_file.read_text(encoding="utf-8"), 120)
    env = dict(os.environ, NEWSQUARRY_INDEX=str(tmp_path / "ix"), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "newsquarry.search.cli", "index", str(feed), "--commit-every",
           "5", "--processes", "2"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=group)  # fmt: skip
    try:
        before = _wait_for_first_commit(proc)
        if group:
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, "".join(before) + err
    assert "Traceback" not in err and "Error" not in err, err
    # one line besides progress lines written before the signal was handled
    said = [line for line in err.splitlines() if "articles/s" not in line]
    assert len(said) == 1 and said[0].startswith("Terminated: "), err
    assert "the index is intact" in said[0] and out == ""
    done = int(said[0].split("Terminated: ")[1].split()[0])
    assert 5 <= done < 120 and done % 5 == 0
    stats = json.loads(
        CliRunner().invoke(cli, ["--index", str(tmp_path / "ix"), "stats", "--json"]).stdout
    )
    assert stats["articles"] == done


@pytest.fixture()
def seeded(runner, index_dir, corpus_dir):
    r = run(runner, index_dir, "index", str(corpus_dir))
    assert r.exit_code == 0
    return index_dir


def test_search_exit_codes_like_grep(runner, seeded):
    r = run(runner, seeded, "search", "Chavez")
    assert r.exit_code == 0 and "Hugo Chávez" in r.stdout
    r = run(runner, seeded, "search", "zeppelin")
    assert r.exit_code == 1 and r.stdout == "" and "No matches." in r.stderr
    r = run(runner, seeded, "search", '"safe harbor')
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and "Traceback" not in r.output
    r = run(runner, seeded, "search", "x", "--facet", "nope")
    assert r.exit_code == 2 and r.stderr.startswith("Error: ")


def test_a_query_past_400_characters_is_one_error_line(runner, tmp_path):
    """The query cap (issue 33): one line on stderr, exit code 2, nothing searched."""
    from newsquarry.search.core.models import Article, Passage
    from newsquarry.search.engine.store import WhooshStore

    path = str(tmp_path / "ix")
    store = WhooshStore(path)
    a = Article(id="a", title="Oil", text="Oil prices fell in Caracas.")
    with store.writer() as w:
        w.put(a, [Passage(id="a#p1", article_id="a", position=1, start=0, end=len(a.text),
                          text=a.text)])  # fmt: skip
    store.close()
    q = ("oil caracas venezuela " * 20)[:401]
    for command in ("search", "quotes"):
        r = run(runner, path, command, q)
        assert r.exit_code == 2, r.output
        assert r.stderr == (  # the argument named as the help names it
            "Error: QUERY: the query is 401 characters long; the limit is 400 (at character 400)\n"
        )
        assert r.stdout == ""
    assert run(runner, path, "search", q[:400]).exit_code == 0


def test_search_output_formats_are_the_same_records(runner, seeded):
    import csv
    import io

    whole = json.loads(run(runner, seeded, "search", "Guaido", "--json", "-n", "3").stdout)
    assert whole["total"] == 6 and len(whole["hits"]) == 3
    lines = run(runner, seeded, "search", "Guaido", "--jsonl", "-n", "3").stdout.splitlines()
    assert [json.loads(x) for x in lines] == whole["hits"]
    rows = list(csv.DictReader(io.StringIO(run(runner, seeded, "search", "Guaido", "--csv",
                                               "-n", "3").stdout)))  # fmt: skip
    assert [r["id"] for r in rows] == [h["id"] for h in whole["hits"]]
    assert rows[0]["text"] == whole["hits"][0]["text"]


def test_search_flags_filters_facets_and_paging(runner, seeded):
    r = run(runner, seeded, "search", "", "--speaker", "Harry Solano", "--json")
    data = json.loads(r.stdout)
    assert data["total"] > 0
    assert all("Harry Solano" in h["speakers"] for h in data["hits"])
    r = run(runner, seeded, "search", "Guaido", "--facet", "person", "-n", "2", "--page", "2")
    assert r.exit_code == 0
    assert "page 2 of 3" in r.stdout and "person" in r.stdout and "Juan Guaidó" in r.stdout


def test_all_of_asks_for_both_values_of_one_filter(runner, seeded):
    either = json.loads(run(runner, seeded, "search", "", "--person", "Harry Solano",
                            "--person", "Juan Guaidó", "--json").stdout)  # fmt: skip
    r = run(runner, seeded, "search", "", "--person", "Harry Solano", "--person", "Juan Guaidó",
            "--all-of", "person", "--json")  # fmt: skip
    both = json.loads(r.stdout)
    assert 0 < both["total"] < either["total"]
    for hit in both["hits"]:
        assert {"Harry Solano", "Juan Guaidó"} <= {e["name"] for e in hit["entities"]}
    bad = run(runner, seeded, "search", "", "--person", "x", "--all-of", "nope")
    assert bad.exit_code == 2 and "all_of" in bad.stderr and "Traceback" not in bad.output


def test_quotes_command_lists_speakers(runner, seeded):
    r = run(runner, seeded, "quotes", "torture", "--speaker", "Raúl Daniel Alvarenga", "--json")
    data = json.loads(r.stdout)
    assert data["total"] == 1
    (q,) = data["hits"]
    assert q["speaker"] == "Raúl Daniel Alvarenga" and q["kind"] == "direct"
    assert "they will torture you physically" in q["text"]
    assert q["passage_id"] == f"{SEED_ID}#p19" and q["article_id"] == SEED_ID


def test_facets_command(runner, seeded):
    r = run(runner, seeded, "facets", "person", "--prefix", "gua", "--json")
    data = json.loads(r.stdout)
    assert [v["value"] for v in data["values"]] == ["Juan Guaidó"]
    r = run(runner, seeded, "facets", "nope")
    assert r.exit_code == 2 and "Error:" in r.stderr


def test_who_is_quoted_most_counts_quotations_not_passages(runner, seeded):
    """`facets speaker --mode quotes` and `quotes --facet speaker` count quotations (the
    API's /v1/facets/speaker?mode=quotes): a speaker quoted twice in one passage counts 2."""

    def counts(data):
        return {v["value"]: v["count"] for v in data}

    out = run(runner, seeded, "quotes", "--speaker", "Harry Solano", "--all", "--jsonl").stdout
    quotes = [json.loads(line) for line in out.splitlines()]
    passages = counts(
        json.loads(run(runner, seeded, "facets", "speaker", "--json").stdout)["values"]
    )
    by_quotes = counts(
        json.loads(run(runner, seeded, "facets", "speaker", "--mode", "quotes", "--json").stdout)[
            "values"
        ]
    )
    assert by_quotes["Harry Solano"] == len(quotes) > passages["Harry Solano"]
    r = run(runner, seeded, "quotes", "--facet", "speaker", "--json")
    facet = json.loads(r.stdout)["facets"]["speaker"]["values"]
    assert counts(facet)["Harry Solano"] == len(quotes)


def test_colour_only_on_terminal_and_never_with_no_color(runner, seeded):
    # CliRunner is not a terminal: plain text
    r = run(runner, seeded, "search", "Guaido")
    assert "\x1b[" not in r.stdout
    # a real pseudo-terminal gets colour, unless NO_COLOR is set
    import pty

    env = dict(os.environ, NEWSQUARRY_INDEX=seeded, PYTHONPATH=str(ROOT), COLUMNS="100")
    for no_color, expect in ((None, True), ("1", False)):
        if no_color:
            env["NO_COLOR"] = no_color
        out = _run_in_pty(
            pty, [sys.executable, "-m", "newsquarry.search.cli", "search", "Guaido"], env
        )
        assert "Guaidó" in out
        assert ("\x1b[" in out) is expect, out[:200]


def _run_in_pty(pty, argv, env) -> str:
    pid, fd = pty.fork()
    if pid == 0:  # child
        os.execve(argv[0], argv, env)
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode("utf-8", "replace")


def test_human_output_off_a_terminal_is_never_cut(runner, seeded):
    r = run(runner, seeded, "quotes", "torture", "--speaker", "Alvarenga")
    assert r.exit_code == 0
    assert "they will torture you physically and psychologically.”" in r.stdout
    assert f"{SEED_ID}#p19" in r.stdout


def test_search_match_group_and_interpretations(runner, index_dir, corpus_dir):
    assert run(runner, index_dir, "index", str(corpus_dir)).exit_code == 0
    # a question typed as a sentence finds passages in the default mode ...
    r = run(runner, index_dir, "search", "soldiers tortured in Venezuela", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["total"] > 0
    # ... and nothing with every word required, with a line saying what to try
    r = run(runner, index_dir, "search", "soldiers tortured in Venezuela", "--match", "all")
    assert r.exit_code == 1
    assert "no passage holds every word" in r.stderr and "--match most" in r.stderr
    r = run(runner, index_dir, "search", "army torture", "--group", "article", "--json")
    body = json.loads(r.stdout)
    assert len(body["hits"]) == body["total_articles"] == 1
    assert body["hits"][0]["more_count"] == body["total"] - 1 > 0
    r = run(runner, index_dir, "search", "army torture", "--group", "article")
    assert "more matches in this article" in r.stdout and "in 1 article" in r.stdout
    r = run(runner, index_dir, "search", "what did Solano say about torture")
    assert r.exit_code == 0
    assert "Also: Quotes by Harry Solano" in r.stderr
    assert "newsquarry quotes torture --speaker 'Harry Solano'" in r.stderr
    r = run(runner, index_dir, "search", "x", "--match", "some")
    assert r.exit_code == 2


def test_quotes_group_cluster(runner, tmp_path):
    try:
        from tests.api_support import CLUSTER_COPIES, build_cluster_index
    except ModuleNotFoundError:
        from api_support import CLUSTER_COPIES, build_cluster_index

    ix = str(tmp_path / "ix")
    build_cluster_index(Path(ix))
    r = run(runner, ix, "quotes", "farmers wheat", "--group", "cluster", "--json")
    assert r.exit_code == 0, r.output
    body = json.loads(r.stdout)
    assert body["total"] == 4 and body["total_clusters"] == 1 and len(body["hits"]) == 1
    hit = body["hits"][0]
    assert hit["more_count"] == 3 and hit["cluster_articles"] == 4
    assert hit["first_seen"]["article_id"] == "wheat-first"
    r = run(runner, ix, "quotes", "farmers wheat", "--group", "cluster")
    assert r.exit_code == 0, r.output
    first = CLUSTER_COPIES[1]
    assert (f"also in 3 other articles, first seen {first[1]} in {first[2]} ({first[0]})"
            in r.stdout)  # fmt: skip
    assert "+ 3 more matches in this cluster" in r.stdout
    assert "4 matches in 1 quotation" in r.stdout
    # every hit says where its quotation was first seen, grouped or not
    r = run(runner, ix, "quotes", "farmers wheat")
    assert r.stdout.count("also in 3 other articles") == 4
    r = run(runner, ix, "search", "wheat", "--group", "cluster")
    assert r.exit_code != 0 and "mode=quotes" in r.output and "Traceback" not in r.output
    r = run(runner, ix, "quotes", "--group", "cluster", "--all")
    assert r.exit_code == 2 and "--group" in r.output


def test_a_query_error_says_where_once(runner, seeded):
    r = run(runner, seeded, "search", "foo AND (bar")
    assert r.exit_code == 2
    assert r.stderr.count("8") == 1 and "position 8" in r.stderr


def test_stats_names_the_size_in_the_unit_it_prints(runner, seeded):
    r = run(runner, seeded, "stats")
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("size")]
    assert line.split()[0] == "size" and line.endswith(" MB")
    assert "size_bytes" in json.loads(run(runner, seeded, "stats", "--json").stdout)
