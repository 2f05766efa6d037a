"""First-run cost: how long a fresh process takes to get a game going, with and without numba's cache.

For every game of ``tarot_env.GAMES`` and each of the two entry points

* ``make_vec``: ``import tarot_env; v = tarot_env.make_vec(game, N); v.reset(); v.step(...)``
* ``aec``:      ``import tarot_env.envs.<game>; env = <module>.env(); env.reset(seed=0); env.step(...)``

it starts a fresh Python process twice: first with an empty ``NUMBA_CACHE_DIR`` (``cold``: every
``@njit(cache=True)`` function the path needs is compiled), then with the cache that run left
(``warm``: compiled code is loaded from the cache). Each process times its own phases (the import,
building the env, ``reset``, one ``step``); the table also gives the whole process's wall time
(interpreter start included) and the numba cache entries (``*.nbi`` index files: one per compiled
function) the cold run wrote. The step plays the first legal action of every row; ``--more-steps``
further steps (seeded random legal actions, timed apart, column ``more``) reach the card play,
whose compiled kernels the first step (a discard, an *a monte* answer) may not call yet.

    tarot-bench first-run                       # every game, make_vec(game, 8) and env()
    tarot-bench first-run --games partita --num-envs 1024 --repeats 3
    taskset -c 0 tarot-bench first-run --json first_run.json

Nothing here depends on how the engines are written: it only uses ``make_vec``, ``reset``,
``step`` and the env modules' ``env()``. Not a test: the numbers depend on the machine and its load.
``--json`` writes ``num_envs``, ``repeats``, ``python`` and ``results`` (``<game>/<path>`` -> ``cold``
and ``warm`` seconds per phase, ``cache_entries``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._common import ROOT, csv_list, games_arg

HELP = "seconds of a fresh process to import, make, reset and step each game, cold and warm numba cache"

# Runs in the fresh process: argv = game, path ("make_vec" | "aec"), num_envs, more steps. Prints one
# JSON line.
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
game, path, n, more = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import numpy as np
if path == "make_vec":
    import tarot_env
    t1 = time.perf_counter()
    v = tarot_env.make_vec(game, n, seed=0)
    t2 = time.perf_counter()
    out = v.reset()
    t3 = time.perf_counter()
    out = v.step(np.asarray(out.mask).argmax(1))
    t4 = time.perf_counter()
    rng = np.random.default_rng(0)
    for _ in range(more):
        m = np.asarray(out.mask)
        out = v.step((rng.random(m.shape) * m).argmax(1))
else:
    import importlib
    mod = importlib.import_module(f"tarot_env.envs.{game}")
    t1 = time.perf_counter()
    env = mod.env()
    t2 = time.perf_counter()
    env.reset(seed=0)
    t3 = time.perf_counter()
    mask = env.observe(env.agent_selection)["action_mask"]
    env.step(int(np.flatnonzero(mask)[0]))
    t4 = time.perf_counter()
    rng = np.random.default_rng(0)
    for _ in range(more):
        if not env.agents:
            env.reset()
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
        else:
            env.step(int(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"]))))
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "make": t2 - t1, "reset": t3 - t2, "step": t4 - t3, "total": t4 - t0,
                  "more": t5 - t4}))
"""

PATHS = ("make_vec", "aec")
PHASES = ("import", "make", "reset", "step", "total", "more", "process")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--games", default="all", help="comma-separated games, or all")
    ap.add_argument("--paths", default=",".join(PATHS), help="comma-separated entry points: make_vec, aec")
    ap.add_argument("--num-envs", type=int, default=8, help="rows of make_vec")
    ap.add_argument("--more-steps", type=int, default=100,
                    help="steps after the first, timed apart (column 'more'): they reach the card play, whose "
                         "compiled kernels a first step may not touch")
    ap.add_argument("--repeats", type=int, default=1, help="cold/warm pairs per cell (medians reported)")
    ap.add_argument("--python", default=sys.executable, help="interpreter of the fresh processes")
    ap.add_argument("--json", default=None, help="also write the results here")


def run_child(python: str, game: str, path: str, num_envs: int, more: int, cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    t0 = time.perf_counter()
    r = subprocess.run([python, "-c", CHILD, game, path, str(num_envs), str(more)], env=env, cwd=ROOT,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-6:])
        return {"error": f"exit {r.returncode}: {tail}"}
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["process"] = wall
    return out


def cache_entries(cache_dir: str) -> int:
    return sum(1 for _ in Path(cache_dir).rglob("*.nbi"))


def measure(python: str, game: str, path: str, num_envs: int, more: int, repeats: int) -> dict:
    """Median phases of ``repeats`` cold runs (each on a new empty cache) and of the warm run after each."""
    cold, warm, entries = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as d:
            c = run_child(python, game, path, num_envs, more, d)
            entries.append(cache_entries(d))
            w = run_child(python, game, path, num_envs, more, d)
        if "error" in c or "error" in w:
            return {"error": c.get("error") or w.get("error")}
        cold.append(c)
        warm.append(w)

    def med(rows):
        return {k: statistics.median(r[k] for r in rows) for k in PHASES}

    return {"cold": med(cold), "warm": med(warm), "cache_entries": max(entries)}


def run(args: argparse.Namespace, ap: argparse.ArgumentParser) -> dict:
    paths = csv_list(args.paths)
    for p in paths:
        if p not in PATHS:
            ap.error(f"unknown path {p!r}; choose from {', '.join(PATHS)}")
    if not paths:
        ap.error(f"--paths: choose from {', '.join(PATHS)}")
    if args.num_envs < 1 or args.repeats < 1 or args.more_steps < 0:
        ap.error("--num-envs and --repeats must be at least 1, --more-steps at least 0")
    import tarot_env  # only the list of the games (the measured processes import it afresh)

    games = games_arg(args.games, list(tarot_env.GAMES), ap)

    results = {}
    for game in games:
        for path in paths:
            r = measure(args.python, game, path, args.num_envs, args.more_steps, args.repeats)
            results[f"{game}/{path}"] = r
            print(f"{game:10s} {path:8s} " + (r["error"].splitlines()[-1] if "error" in r else
                  f"cold {r['cold']['process']:6.2f} s  warm {r['warm']['process']:6.2f} s"),
                  file=sys.stderr, flush=True)

    what = {"make_vec": f"make_vec(game, {args.num_envs}) + reset + step", "aec": "envs.<game>.env() + reset + step"}
    print(f"\nFresh processes, {args.repeats} cold/warm pair(s) per row (medians); seconds. cold: empty "
          "NUMBA_CACHE_DIR; warm: the cache the cold run wrote. `total` = import + make + reset + step; "
          f"`more`: the next {args.more_steps} steps (random legal actions, seeded); `process`: the whole process, "
          "interpreter start included.\n")
    print("| game | path | cache | import | make | reset | step | total | more | process | numba cache entries |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key, r in results.items():
        game, path = key.split("/")
        if "error" in r:
            print(f"| {game} | {what[path]} | — | error: {r['error'].splitlines()[-1]} ||||||||")
            continue
        for cache in ("cold", "warm"):
            p = r[cache]
            entries = str(r["cache_entries"]) if cache == "cold" else ""
            print(f"| {game} | {what[path]} | {cache} | " + " | ".join(f"{p[k]:.2f}" for k in PHASES) +
                  f" | {entries} |")
    result = {"num_envs": args.num_envs, "repeats": args.repeats, "python": args.python, "results": results}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result
