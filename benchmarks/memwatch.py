"""Peak memory of a process tree, sampled from /proc (no psutil).

``resource.getrusage`` only gives the largest single process (``ru_maxrss``),
not the sum over the parent and its worker processes, which is what a user's
machine must hold. ``TreeMemory`` samples every ``interval`` seconds, in a
thread, the sum over this process and all its descendants of RSS and of PSS
(proportional set size: pages shared after ``fork`` counted once in total, so
the PSS sum is the honest total).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Self


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text()
            out.extend(int(c) for c in text.split())
    except OSError:
        pass
    return out


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants."""
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(_children(pid))
    return pids


def _rollup(pid: int) -> tuple[int, int]:
    """(rss, pss) of one process in bytes; (0, 0) if it is gone."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds (user + system) used so far by a process tree's live processes."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in tree_pids(root or os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def tree_anon(root: int | None = None, field: str = "Pss_Anon") -> int:
    """Sum of anonymous PSS (``Pss_Anon``) in bytes over a process tree.

    PSS also counts pages of mapped files (Whoosh maps its index files), which
    the kernel can drop at any time; anonymous memory (heaps, arrays) is what
    a process really holds. ``field="Anonymous"`` counts each process's
    anonymous pages whole, shared copy-on-write pages included.
    """
    total = 0
    for pid in tree_pids(root or os.getpid()):
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith(field + ":"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def tree_memory(root: int | None = None) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) in bytes over a process tree."""
    rss = pss = 0
    for pid in tree_pids(root or os.getpid()):
        r, p = _rollup(pid)
        rss += r
        pss += p
    return rss, pss


class TreeMemory:
    """Context manager sampling the peak tree memory in a background thread.

    Reading ``smaps_rollup`` costs the reader a few ms of CPU per large process
    (kernel time walking its page tables), and the samples are taken in this
    process: ``cpu_s`` is what the sampling itself cost, for a benchmark to take
    out of this process's CPU time. Without that, a run with more processes
    (a Dask cluster: scheduler, workers, nannies) and a longer wall time is
    charged for the instrument.
    """

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.peak_rss = 0
        self.peak_pss = 0
        self.cpu_s = 0.0  # CPU seconds spent sampling (user + system, this thread's)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        c0 = time.thread_time()
        rss, pss = tree_memory()
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_pss = max(self.peak_pss, pss)
        self.cpu_s += time.thread_time() - c0

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> Self:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
