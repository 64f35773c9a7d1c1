"""`--url`: the CLI against a real served API prints what it prints locally."""

from __future__ import annotations

import json
import re

import pytest
from api_support import LiveServer
from click.testing import CliRunner

from newsquarry.search.cli.app import cli

SEED_ID = "000_e23b3335c9472580"


@pytest.fixture(scope="module")
def served(tmp_path_factory, seed_file):
    import shutil

    root = tmp_path_factory.mktemp("remote")
    (root / "corpus").mkdir()
    shutil.copy(seed_file, root / "corpus" / seed_file.name)
    index = str(root / "index")
    r = CliRunner().invoke(cli, ["--index", index, "index", str(root / "corpus")])
    assert r.exit_code == 0, r.output
    server = LiveServer("newsquarry.api.wsgi:app", {"NEWSQUARRY_INDEX": index})
    yield index, server.url
    server.stop()


def _strip_timing(text: str) -> str:
    return re.sub(r"\d+ ms", "N ms", text)


def _no_timing(data):
    if isinstance(data, dict):
        return {k: _no_timing(v) for k, v in data.items() if k not in ("took_ms", "time_limit")}
    if isinstance(data, list):
        return [_no_timing(v) for v in data]
    return data


CASES = [
    ["search", "Guaido", "-n", "3"],
    ["search", "torture", "--speaker", "Harry Solano", "--facet", "person", "--facet", "speaker"],
    ["search", "army OR soldiers", "--sort", "-date", "--page", "2", "-n", "2"],
    ["quotes", "torture"],
    ["search", "", "--person", "Harry Solano", "--person", "Juan Guaidó", "--all-of", "person"],
    ["quotes", "--speaker", "Alvarenga", "--kind", "direct"],
    ["facets", "person", "--prefix", "gua"],
    ["facets", "place", "-q", "Venezuela"],
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a))
@pytest.mark.parametrize("fmt", [None, "--json", "--jsonl", "--csv"])
def test_remote_output_is_local_output(served, args, fmt):
    index, url = served
    extra = [fmt] if fmt else []
    runner = CliRunner()
    local = runner.invoke(cli, ["--index", index, *args, *extra], env={"NO_COLOR": "1"})
    remote = runner.invoke(cli, ["--index", index, *args, *extra, "--url", url],
                           env={"NO_COLOR": "1"})  # fmt: skip
    assert local.exit_code == remote.exit_code == 0, (local.output, remote.output)
    if fmt == "--json":
        assert _no_timing(json.loads(remote.stdout)) == _no_timing(json.loads(local.stdout))
    else:
        assert _strip_timing(remote.stdout) == _strip_timing(local.stdout)


def test_remote_errors_and_exit_codes_match_local(served):
    index, url = served
    runner = CliRunner()
    for args, code in ((["search", "zeppelin"], 1), (["search", '"safe harbor'], 2),
                       (["show", "nope", "--url", url], 3)):  # fmt: skip
        r = runner.invoke(cli, ["--index", index, *args, "--url", url])
        assert r.exit_code == code, r.output
    r = runner.invoke(cli, ["--index", index, "show", f"{SEED_ID}#p4", "--json", "--url", url])
    local = runner.invoke(cli, ["--index", index, "show", f"{SEED_ID}#p4", "--json"])
    assert json.loads(r.stdout) == json.loads(local.stdout)
    r = runner.invoke(cli, ["search", "x", "--url", "http://127.0.0.1:9"])
    assert r.exit_code == 5 and r.stderr.startswith("Error: cannot reach")


@pytest.mark.parametrize("fmt", ["--csv", "--jsonl"])
def test_remote_all_is_local_all(served, fmt):
    index, url = served
    runner = CliRunner()
    args = ["--index", index, "quotes", "--speaker", "Harry Solano", "--all", fmt]
    local = runner.invoke(cli, args)
    remote = runner.invoke(cli, [*args, "--url", url])
    assert local.exit_code == remote.exit_code == 0, (local.output, remote.output)
    assert remote.stdout_bytes == local.stdout_bytes and local.stdout_bytes.count(b"\n") > 4


def test_remote_errors_name_the_options_typed(served):
    index, url = served
    runner = CliRunner()
    r = runner.invoke(cli, ["quotes", "-n", "1000", "--url", url])
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: -n/--limit: ") and "per_page" not in r.stderr
    r = runner.invoke(cli, ["search", "x", "--since", "yesterday", "--url", url])
    assert r.exit_code == 2 and r.stderr.startswith("Error: --since: 'yesterday' is not a date")


def test_a_wrong_address_on_a_newsquarry_server_is_not_newsquarry(served):
    _, url = served
    r = CliRunner().invoke(cli, ["search", "torture", "--url", url + "/docs"])
    assert r.exit_code == 5
    assert r.stderr == (
        f"Error: not a newsquarry server at {url}/docs (it answered HTTP 404 to GET /v1/search)\n"
    )


def test_a_hit_cut_by_the_api_says_so_and_a_whole_one_looks_local():
    from newsquarry.search.cli.remote import _drop_text_bounds

    whole = {"text": "Short.", "text_start": 0, "text_length": 6}
    assert _drop_text_bounds(whole) == {"text": "Short."}
    cut = {"text": "part of it", "text_start": 40, "text_length": 5000}
    assert _drop_text_bounds(dict(cut)) == cut
