#!/usr/bin/env python3
"""A/B speed of a batched engine: this working tree against an earlier git revision, in one process.

On a shared machine two separate runs of ``bench_batched.py`` can differ by ±20%, more than most changes.
This script builds the same engine from both versions in one process (the old ``tarot_env`` is
exported with ``git archive`` and imported as ``tarot_env_old``), steps them alternately in chunks of
``--chunk`` steps with uniformly random legal actions, times each chunk in thread CPU time, and
reports the median of the paired ratios (new / old) with its quartiles. Use a chunk that spans whole
hands when rows stay in phase (Partita: 54 decisions, Millone: 62) so that every chunk holds the same
mix of plays and hand ends.

    taskset -c 0 python scripts/bench_ab.py 76ebbce --game ottocento --batch 4096 --rounds 12 --chunk 15
    taskset -c 0 python scripts/bench_ab.py HEAD~3 --game millone --batch 4096 --rounds 16 --chunk 62
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("revision", help="git revision to compare against (e.g. HEAD~1, a commit id)")
    ap.add_argument("--game", default="partita")
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=16, help="chunk pairs")
    ap.add_argument("--chunk", type=int, default=54, help="steps per timed chunk")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(old_package(a.revision)))
    sys.path.insert(0, str(ROOT))
    import tarot_env_old.vector as old_vec

    import tarot_env.vector as new_vec

    engines = {"new": new_vec.make_vec(a.game, a.batch, seed=a.seed),
               "old": old_vec.make_vec(a.game, a.batch, seed=a.seed)}
    outs = {k: v.reset() for k, v in engines.items()}
    rngs = {k: np.random.default_rng(a.seed) for k in engines}

    def run(k: str, steps: int) -> float:
        venv, out, rng, t = engines[k], outs[k], rngs[k], 0.0
        for _ in range(steps):
            act = (rng.random(out.mask.shape, dtype=np.float32) * out.mask).argmax(1)
            t0 = time.thread_time()
            out = venv.step(act, validate=False)
            t += time.thread_time() - t0
        outs[k] = out
        return steps * a.batch / t

    for k in engines:  # warm-up
        run(k, 2 * a.chunk)
    speed: dict[str, list[float]] = {"new": [], "old": []}
    for i in range(a.rounds):
        for k in (("new", "old") if i % 2 == 0 else ("old", "new")):
            speed[k].append(run(k, a.chunk))
    ratios = [n / o for n, o in zip(speed["new"], speed["old"])]
    q1, q3 = np.quantile(ratios, [0.25, 0.75])
    print(f"{a.game}@{a.batch} vs {a.revision}: new {statistics.median(speed['new']):,.0f} dec/s, "
          f"old {statistics.median(speed['old']):,.0f} dec/s (thread CPU time); "
          f"paired ratio median {statistics.median(ratios):.3f} (quartiles {q1:.3f}-{q3:.3f}, {a.rounds} pairs)")


if __name__ == "__main__":
    main()
