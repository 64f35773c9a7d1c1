"""The command line, driven through click's CliRunner and real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from search.cli import cli

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
        [sys.executable, "-m", "search.cli", "index", str(corpus_dir)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "1 added" in p.stdout
    # not a terminal: no progress bar escape codes on stderr
    assert "\x1b[" not in p.stderr
