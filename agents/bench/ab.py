"""A/B speed of a batched engine: this working tree against an earlier git revision.

On a shared machine two separate runs of ``tarot-bench batched`` can differ by ±20%, more than most changes.
This exports ``tarot_env`` at the revision once (``git archive``, renamed ``tarot_env_old``), then
runs **one subprocess per measurement**, alternating the two versions (new, old, old, new, ...): each
builds its engine, steps it ``--warmup`` times with uniformly random legal actions, then times ``--steps``
steps in thread CPU time. It reports the median of the paired ratios (new / old) with their quartiles.
A first, untimed pair compiles both versions' kernels into their numba caches, so every timed process
loads them from disk as a user's would.

Why not both engines in one process (what the A/B script did until 2026-12-03): there the version exported
from git compiled its kernels in the same process as the cached working tree ran, and ran about 1.2–1.6×
slower than the same code loaded from its cache. The same source against itself gave ratios of 1.19
(Millone) and 1.60 (Ottocento). Separate processes give identical code a ratio of 1 within noise, about
±10% on the shared development machine (``--self-check`` runs the working tree against itself: read a
change smaller than its spread as no change).

    taskset -c 1 tarot-bench ab HEAD --game ottocento --pairs 8
    taskset -c 1 tarot-bench ab HEAD~3 --game millone --pairs 8 --steps 248
    taskset -c 1 tarot-bench ab HEAD --game ottocento --self-check
    taskset -c 1 tarot-bench ab main --game ottocento --obs none      # masks only (observe=False); --obs sparse

``--obs`` picks what each step writes besides the masks: the dense observation (the default),
``obs_format="sparse"``, or none (``observe=False``).

Prints one line (the medians of both versions and the paired ratio); ``--json`` also writes ``game``,
``batch``, ``obs``, ``against``, ``new_decisions_per_s``, ``old_decisions_per_s`` (every process), ``ratios``,
``median_ratio``, ``quartiles``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ._common import ROOT

HELP = "paired A/B decisions/s of a batched engine: the working tree against a git revision, one process each"

# One measurement, run as ``python -c MEASURE <package root> <package name> <game> <batch> <warmup> <steps>
# <seed> <obs>``: prints {"decisions_per_s": ...} (thread CPU time of the ``steps`` timed steps).
MEASURE = """
import importlib, json, sys, time
import numpy as np
root, name, game, batch, warmup, steps, seed, obs = sys.argv[1:9]
sys.path.insert(0, root)
vec = importlib.import_module(name + ".vector")
batch, warmup, steps, seed = int(batch), int(warmup), int(steps), int(seed)
kw = {"dense": {}, "sparse": {"obs_format": "sparse"}, "none": {"observe": False}}[obs]
env = vec.make_vec(game, batch, seed=seed, **kw)
out = env.reset()
rng = np.random.default_rng(seed)
t = 0.0
for i in range(warmup + steps):
    act = (rng.random(out.mask.shape, dtype=np.float32) * out.mask).argmax(1)
    t0 = time.thread_time()
    out = env.step(act, validate=False)
    if i >= warmup:
        t += time.thread_time() - t0
print(json.dumps({"decisions_per_s": steps * batch / max(t, 1e-9)}))
"""


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("revision", nargs="?", default=None,
                    help="git revision to compare against (e.g. HEAD~1, a commit id); not needed with --self-check")
    ap.add_argument("--game", default="partita", help="the game whose batched engine is timed")
    ap.add_argument("--batch", type=int, default=2048, help="num_envs of the engine")
    ap.add_argument("--pairs", type=int, default=8, help="timed process pairs")
    ap.add_argument("--warmup", type=int, default=60, help="untimed steps at the start of each process")
    ap.add_argument("--steps", type=int, default=240, help="timed steps per process (span whole hands: "
                    "Partita 54 decisions, Millone 62, Ottocento about 60)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the engine and of the random play")
    ap.add_argument("--obs", choices=("dense", "sparse", "none"), default="dense",
                    help="the observation each step writes: dense, obs_format='sparse', or none (observe=False: "
                         "the masks only)")
    ap.add_argument("--self-check", action="store_true",
                    help="compare the working tree against itself (the ratio should be 1 within noise)")
    ap.add_argument("--json", default=None, help="also write the figures to this file")


def old_package(revision: str) -> Path:
    """``tarot_env`` at ``revision``, renamed ``tarot_env_old`` (imports rewritten), in a temp folder."""
    dst = Path(tempfile.mkdtemp(prefix="tarot_ab_"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "tarot_env"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dst)], input=archive, check=True)
    (dst / "tarot_env").rename(dst / "tarot_env_old")
    for f in (dst / "tarot_env_old").rglob("*.py"):
        f.write_text(re.sub(r"\btarot_env\b", "tarot_env_old", f.read_text()))
    return dst


def measure(root: Path, name: str, a: argparse.Namespace, warmup: int, steps: int) -> float:
    """Decisions per second of one fresh process running package ``name`` found under ``root``."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", MEASURE, str(root), name, a.game, str(a.batch), str(warmup),
                        str(steps), str(a.seed), a.obs], capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        raise SystemExit(f"tarot-bench ab: the measurement of {name} under {root} failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])["decisions_per_s"]


def run(a: argparse.Namespace, ap: argparse.ArgumentParser) -> dict:
    if a.pairs < 1 or a.steps < 1 or a.warmup < 0 or a.batch < 1:
        ap.error("--pairs, --steps and --batch must be >= 1 and --warmup >= 0")
    if a.revision is None and not a.self_check:
        ap.error("give a git revision to compare against (e.g. HEAD~1), or --self-check")
    import tarot_env

    if a.game not in tarot_env.GAMES:
        ap.error(f"--game: unknown game {a.game!r}; choose from {', '.join(tarot_env.GAMES)}")
    if not a.self_check:
        ok = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{a.revision}^{{commit}}"],
                            capture_output=True, text=True, check=False)
        if ok.returncode != 0:
            ap.error(f"{a.revision!r} is not a git revision of {ROOT}")
    import numpy as np

    versions = {"new": (ROOT, "tarot_env")}
    versions["old"] = versions["new"] if a.self_check else (old_package(a.revision), "tarot_env_old")
    speed: dict[str, list[float]] = {"new": [], "old": []}
    try:
        for root, name in versions.values():  # compile (or load) each version's kernels once, untimed
            measure(root, name, a, 1, 1)
        for i in range(a.pairs):
            for k in (("new", "old") if i % 2 == 0 else ("old", "new")):
                speed[k].append(measure(*versions[k], a, a.warmup, a.steps))
    finally:
        if not a.self_check:
            shutil.rmtree(versions["old"][0], ignore_errors=True)
    ratios = [n / o for n, o in zip(speed["new"], speed["old"])]
    q1, q3 = (float(q) for q in np.quantile(ratios, [0.25, 0.75]))
    against = "itself" if a.self_check else a.revision
    print(f"{a.game}@{a.batch} ({a.obs}) vs {against}: new {statistics.median(speed['new']):,.0f} dec/s, "
          f"old {statistics.median(speed['old']):,.0f} dec/s (thread CPU time, one process each); "
          f"paired ratio median {statistics.median(ratios):.3f} (quartiles {q1:.3f}-{q3:.3f}, {a.pairs} pairs)")
    result = {"game": a.game, "batch": a.batch, "obs": a.obs, "against": against, "new_decisions_per_s": speed["new"],
              "old_decisions_per_s": speed["old"], "ratios": ratios, "median_ratio": statistics.median(ratios),
              "quartiles": [q1, q3]}
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))
    return result
