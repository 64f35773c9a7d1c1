"""The README's command-line examples run as written, on a fresh index of the bundled corpus.

Every line of the ```sh blocks under "The command line" runs in bash, in order, as a
new user would type it: ``newsquarry`` is this checkout's CLI, the index is the
default folder (under a temporary ``XDG_DATA_HOME``, named by ``NEWSQUARRY_INDEX`` as
well), ``~`` is a temporary home holding ``~/news/my-article.md``, and the server
secret is set. Each example must find something and exit 0.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from newsquarry.search.query.export import QUOTE_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
MY_ARTICLE = """---
title: Power cuts in Caracas
date: 2024-05-01
source: My notes
---

Power cuts left Caracas in the dark again on Tuesday, and hospitals ran on generators.

"We cannot work like this," said Ana Ruiz, a nurse at a hospital in the city centre.
"""


def readme_cli_examples() -> list[str]:
    """The command lines of the ```sh blocks in the README's "The command line" section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## The command line\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_has_the_examples():
    lines = readme_cli_examples()
    assert len(lines) >= 10 and all(line.startswith("newsquarry ") for line in lines)


def test_readme_cli_examples_run_as_written(tmp_path):
    home = tmp_path / "home"
    (home / "news").mkdir(parents=True)
    (home / "news" / "my-article.md").write_text(MY_ARTICLE, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "newsquarry"
    shim.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m newsquarry.search.cli "$@"\n'
    )
    shim.chmod(0o755)
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEWSQUARRY_")}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(data),
        NEWSQUARRY_INDEX=str(data / "newsquarry" / "index"),
        NEWSQUARRY_SECRET="readme-test-secret-0123456789",
        NO_COLOR="1",
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    )
    outputs = {}
    for line in readme_cli_examples():
        p = subprocess.run(["bash", "-c", line], cwd=home, env=env, capture_output=True,
                           text=True, timeout=300)  # fmt: skip
        assert p.returncode == 0, f"{line}\nexit {p.returncode}\n{p.stderr}"
        assert "Traceback" not in p.stderr, line
        outputs[line] = p
    first = next(iter(outputs.values()))
    assert "indexing the bundled corpus" in first.stderr
    assert "Indexed 1 article, 19 passages." in first.stderr
    csv_lines = (home / "solano.csv").read_text(encoding="utf-8").splitlines()
    assert csv_lines[0] == ",".join(QUOTE_COLUMNS) and len(csv_lines) > 2
    deleted = next(p for line, p in outputs.items() if line.startswith("newsquarry delete"))
    assert deleted.stdout == "deleted my-article\n"
    key = next(p for line, p in outputs.items() if line.startswith("newsquarry key"))
    assert key.stdout.startswith("nqk_")
