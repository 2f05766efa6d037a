"""Test-wide settings.

Hypothesis' per-example deadline (200 ms by default) is a wall-clock assertion: on a busy 2-core CI
machine, or when an example is the first to load a compiled kernel from the numba cache, a correct
example can exceed it. The tests assert behaviour, never time (docs/testing.md), so it is off.

The suite runs in one worker process per core (pytest-xdist, ``-n auto`` in pyproject.toml's addopts;
``pytest -n 0`` runs it in one process). Each worker, and the commands the tests start, then use one
thread for torch's and numpy's maths (``OMP_NUM_THREADS=1``, set before torch is imported): two workers
with two threads each on a 2-core machine would only fight over the cores.

A whole-suite run (no test paths on the command line) first compiles the kernels once, in parallel
(:func:`warm_kernels`, issue #33): with a cold numba cache (a fresh clone, or any edit of ``tarot_env``:
``tarot_env/_numba_cache.py``) each worker would otherwise compile every kernel it meets, and the two
workers meet the same kernels at the same time, so most were compiled twice. ``TAROT_WARM=0`` skips it.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import settings

if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

settings.register_profile("tarocchini", deadline=None)
settings.load_profile("tarocchini")

ROOT = Path(__file__).resolve().parent.parent
# the games of each warm-up process (python -m agents.players.warm), split to balance their compile times
WARM_SPLIT = (("millone",), ("ottocento", "partita"))
WARM_STAMP = "warmed"  # written into the numba cache directory once the warm-up has filled it
WARM_TIMEOUT = 1800  # seconds; a warm-up still running then is stopped (the tests compile what it left)


def _finished(p: subprocess.Popen) -> str | None:
    """Wait for a warm-up process; None if it succeeded, else its error output."""
    try:
        _, err = p.communicate(timeout=WARM_TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        return f"stopped after {WARM_TIMEOUT} s\n" + (p.communicate()[1] or "")
    return None if p.returncode == 0 else err


def pytest_configure(config):
    if hasattr(config, "workerinput") or config.option.file_or_dir or os.environ.get("TAROT_WARM") == "0":
        return  # a worker, a run of some tests only, or asked not to
    warm_kernels(config)


def warm_kernels(config) -> None:
    """Compile every game's kernels (``python -m agents.players.warm``) in ``len(WARM_SPLIT)`` processes at once,
    unless the cache directory says it was done for this source already."""
    import tarot_env  # points NUMBA_CACHE_DIR at the cache of this source, for the processes started here

    cache = Path(os.environ.get("NUMBA_CACHE_DIR") or tarot_env.NUMBA_CACHE_DIR)
    if (cache / WARM_STAMP).exists():
        return
    t0 = time.perf_counter()
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    procs = [subprocess.Popen([sys.executable, "-m", "agents.players.warm", *games], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for games in WARM_SPLIT]
    failed = [(p.args[3:], _finished(p)) for p in procs]
    failed = [(games, err) for games, err in failed if err is not None]
    for games, err in failed:  # the tests then compile what is missing, and fail on their own if it is wrong
        print(f"warm-up of {', '.join(games)} failed:\n{err[-2000:]}", file=sys.__stderr__)
    if not failed:
        cache.mkdir(parents=True, exist_ok=True)
        (cache / WARM_STAMP).write_text(f"python -m agents.players.warm in {len(procs)} processes: "
                                        f"{time.perf_counter() - t0:.1f} s\n")
