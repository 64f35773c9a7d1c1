"""Whole-process time of CLI commands against ``newsquarry --help`` (the floor).

Usage::

    python -m benchmarks.bench_cli --index /tmp/reuters-16 --rounds 10
    python -m benchmarks.bench_cli --index /tmp/reuters-16 --baseline /tmp/base/pkg

Commands run as the ``newsquarry`` script runs them (``search.cli.launch``). Each round runs
every command once as a new process, in the same order (``--help`` first), so machine
noise hits them alike; the figures are the median wall time per command over the
rounds, the ratio of that median to the median of ``--help``, and the median CPU time
(user + system). Rows:

- ``search``, ``quotes``, ``facets``: as a user's second and later commands run, in the
  resident searcher (``search.cli.daemon``, started by a first command before the rounds,
  in a runtime folder of the bench's own). Their CPU counts the client process and the
  resident searcher's child that ran the command (from ``/proc``);
- ``... (own process)``: the same commands with ``NEWSQUARRY_DAEMON=0``, as the first
  command (or any, with the resident searcher off) runs: everything in a new process;
- ``base ...`` (``--baseline``): another revision, in-process (``newsquarry.search.cli``).

Also printed: the first command (no resident searcher yet) and how long until the
resident searcher holds the index. The index is read as written by
``newsquarry index``. Bytecode is compiled first (``compileall``), as a ``pip install``
does: with ``PYTHONDONTWRITEBYTECODE`` set, a worktree would otherwise recompile every
module in every process.
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
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLACE = "U.S."  # the place filter: spaCy's name on a `newsquarry index` build of Reuters


def commands(
    index: str, query: str, module: str = "newsquarry.search.cli.launch", place: str = PLACE
) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", module]
    filters = ["--place", place, "--since", "1987-03"]  # the two filters every command gets
    facets = [a for f in ("person", "org", "place", "date") for a in ("--facet", f)]
    return {
        "--help": [*cli, "--help"],
        "search": [*cli, "--index", index, "search", query, *filters, *facets, "--json"],
        "quotes": [*cli, "--index", index, "quotes", query, *filters, "--json"],
        "facets": [*cli, "--index", index, "facets", "person", "-q", query, *filters, "--json"],
    }


def proc_cpu(pid: int | None) -> float:
    """CPU seconds of a process and its reaped children (``/proc/PID/stat``), 0 if none."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def run_once(cmd: list[str], env: dict[str, str] | None = None,
             daemon_pid: int | None = None) -> tuple[float, float]:  # fmt: skip
    """(wall s, CPU s) of one process (and of the resident searcher's work for it)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    d0 = proc_cpu(daemon_pid)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode()[-500:]}")
    own = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return wall, own + proc_cpu(daemon_pid) - d0


def daemon_status(env: dict[str, str]) -> dict | None:
    done = subprocess.run([sys.executable, "-m", "newsquarry.search.cli.launch", "daemon", "status",
                           "--json"], cwd=ROOT, env=env, capture_output=True, text=True)  # fmt: skip
    return json.loads(done.stdout) if done.returncode == 0 else None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--query", default="oil")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--place", default=PLACE, help="the place filter ('usa' on an index of "
                    "Reuters' own tags, as bench_search builds)")  # fmt: skip
    ap.add_argument("--json", help="also write the figures to this JSON file")
    ap.add_argument(
        "--baseline",
        help="a PYTHONPATH folder holding another newsquarry (e.g. a `git archive` of main "
        "under DIR/newsquarry/): its commands (--help too) run too, interleaved, as 'base ...' "
        "rows",
    )
    args = ap.parse_args(argv)
    compileall.compile_dir(str(ROOT / "search"), quiet=1)
    runtime = tempfile.mkdtemp(prefix="nq-bench-cli-")  # a resident searcher of its own
    resident_env = {**os.environ, "XDG_RUNTIME_DIR": runtime, "NEWSQUARRY_DAEMON": "1"}
    own_env = {**resident_env, "NEWSQUARRY_DAEMON": "0"}
    cmds = commands(args.index, args.query, place=args.place)
    envs: dict[str, dict[str, str] | None] = {name: resident_env for name in cmds}
    for name, cmd in list(cmds.items()):
        if name != "--help":
            cmds[f"{name} (own process)"] = cmd
            envs[f"{name} (own process)"] = own_env
    if args.baseline:
        base_env = {**os.environ, "PYTHONPATH": args.baseline}
        # the other revision reads its own copy: derived files it writes (saved cluster links
        # under other rules, say) would otherwise be rewritten by each revision in turn, and
        # both would rebuild them in every process
        base_index = args.index.rstrip("/") + "-baseline"
        if not os.path.isdir(base_index):
            shutil.copytree(args.index, base_index)
        for name, cmd in commands(
            base_index, args.query, "newsquarry.search.cli", args.place
        ).items():
            # the other revision's --help too: the floor may have moved (ratios stay
            # against this revision's --help)
            cmds[f"base {name}"] = cmd
            envs[f"base {name}"] = base_env
    for name, cmd in cmds.items():  # warm the page cache once, not measured; in own
        # processes: the first command that may use it starts the resident searcher, below
        run_once(cmd, own_env if envs[name] is resident_env else envs[name])
    first, _ = run_once(cmds["search"], resident_env)
    t0 = time.perf_counter()
    while not (st := daemon_status(resident_env)) or not st["indexes"]:
        time.sleep(0.05)
    print(f"first search (no resident searcher yet): {first * 1000:.0f} ms; the resident "
          f"searcher held the index {time.perf_counter() - t0:.1f} s later")  # fmt: skip
    pid = st["pid"]
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    try:
        for _ in range(args.rounds):
            for name, cmd in cmds.items():
                wall, cpu = run_once(cmd, envs[name], pid if envs[name] is resident_env else None)
                walls[name].append(wall)
                cpus[name].append(cpu)
        served = daemon_status(resident_env)
    finally:
        subprocess.run([sys.executable, "-m", "newsquarry.search.cli.launch", "daemon", "stop"],
                       cwd=ROOT, env=resident_env, capture_output=True)  # fmt: skip
    print(f"resident searcher: {served['served'] if served else '?'} commands served")
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
