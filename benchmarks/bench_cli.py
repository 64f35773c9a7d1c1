"""Whole-process time of CLI commands against ``newsquarry --help`` (the floor).

Usage::

    python -m benchmarks.bench_cli --index /tmp/reuters-16 --rounds 10
    python -m benchmarks.bench_cli --index /tmp/reuters-16 --baseline /tmp/base/pkg

Each round runs every command once as a new process, in the same order
(``--help`` first), so machine noise hits them alike; the figures are the
median wall time per command over the rounds, the ratio of that median to the
median of ``--help``, and the median CPU time (user + system of the process,
robust to other load). The index is read as written by ``newsquarry index``:
doc values come from the segments' ``.dv`` files. Bytecode is compiled first
(``compileall``), as a ``pip install`` does: with ``PYTHONDONTWRITEBYTECODE``
set, a worktree would otherwise recompile every module in every process.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILTERS = ["--place", "U.S.", "--since", "1987-03"]  # two filters


def commands(index: str, query: str) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "newsquarry.search.cli"]
    facets = [a for f in ("person", "org", "place", "date") for a in ("--facet", f)]
    return {
        "--help": [*cli, "--help"],
        "search": [*cli, "--index", index, "search", query, *FILTERS, *facets, "--json"],
        "quotes": [*cli, "--index", index, "quotes", query, *FILTERS, "--json"],
        "facets": [*cli, "--index", index, "facets", "person", "-q", query, *FILTERS, "--json"],
    }


def run_once(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of one process."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode()[-500:]}")
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--query", default="oil")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", help="also write the figures to this JSON file")
    ap.add_argument(
        "--baseline",
        help="a PYTHONPATH folder holding another newsquarry (e.g. a `git archive` of main "
        "under DIR/newsquarry/): its commands (--help too) run too, interleaved, as 'base ...' "
        "rows",
    )
    args = ap.parse_args(argv)
    compileall.compile_dir(str(ROOT / "search"), quiet=1)
    cmds = commands(args.index, args.query)
    envs: dict[str, dict[str, str] | None] = {name: None for name in cmds}
    if args.baseline:
        base_env = {**os.environ, "PYTHONPATH": args.baseline}
        # the other revision reads its own copy: derived files it writes (saved cluster links
        # under other rules, say) would otherwise be rewritten by each revision in turn, and
        # both would rebuild them in every process
        base_index = args.index.rstrip("/") + "-baseline"
        if not os.path.isdir(base_index):
            shutil.copytree(args.index, base_index)
        for name, cmd in commands(base_index, args.query).items():
            # the other revision's --help too: the floor may have moved (ratios stay
            # against this revision's --help)
            cmds[f"base {name}"] = cmd
            envs[f"base {name}"] = base_env
    for name, cmd in cmds.items():  # warm the page cache once, not measured
        run_once(cmd, envs[name])
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(args.rounds):
        for name, cmd in cmds.items():
            wall, cpu = run_once(cmd, envs[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
    floor = statistics.median(walls["--help"])
    floor_cpu = statistics.median(cpus["--help"])
    rows = []
    print("| command | median wall ms | x --help | median CPU ms | x --help (CPU) |")
    print("|---|---:|---:|---:|---:|")
    for name in cmds:
        w, c = statistics.median(walls[name]), statistics.median(cpus[name])
        rows.append({"command": name, "wall_ms": w * 1000, "ratio": w / floor,
                     "cpu_ms": c * 1000, "cpu_ratio": c / floor_cpu})  # fmt: skip
        print(
            f"| `{name}` | {w * 1000:.0f} | {w / floor:.2f} | {c * 1000:.0f} | {c / floor_cpu:.2f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
