#!/usr/bin/env python3
"""Environment throughput, measured against peers in the same run.

Runs uniformly random legal play through the PettingZoo AEC loop (``agent_iter`` / ``last`` /
``step``; the observation and the action mask are built at every decision) for each registered
tarocchini game, then runs ``../shared/bench/peers.py`` (OpenSpiel, PettingZoo classic, RLCard) in
the same run and prints decisions per second with the ratio to each peer. The loop is the same as
peers.py's ``pz_loop`` so the numbers compare like for like.

    python scripts/bench_env.py                      # our games + the peers' core set
    python scripts/bench_env.py --seconds 3 --peers pz_texas_holdem_v4,os_tarok4_full
    python scripts/bench_env.py --no-peers           # ours only
    python scripts/bench_env.py --batched            # also the batched engine (scripts/bench_batched.py)
    python scripts/bench_env.py --paired --reps 5 --seconds 3 --peers pz_texas_holdem_v4

``--paired`` interleaves: each repeat measures our games and then the peers (one peers.py repeat), and
the ratios are the median of the per-repeat ratios, with their range. On a shared machine whose speed
drifts from minute to minute, a ratio of two measurements taken seconds apart is steadier than a ratio
of two medians taken minutes apart.

The peers live in their own virtual environment, made once by ``../shared/bench/setup.sh``.
Results go to ``--json`` (default ``bench_env.json``) and a Markdown table on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pettingzoo  # noqa: E402

import tarot_env  # noqa: E402

SHARED = Path(os.environ.get("TAROCCHINI_SHARED", ROOT.parent / "shared"))


def aec_loop(env_id: str, seconds: float, seed: int) -> dict:
    """Random legal play through the AEC loop for about ``seconds``; whole games only."""
    env = pettingzoo.make("aec", env_id)
    rng = random.Random(seed)
    rrange = rng.randrange
    flatnonzero = np.flatnonzero
    decisions = games = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    while True:
        env.reset(seed=seed + games)
        for _agent in env.agent_iter():
            obs, rew, term, trunc, info = env.last()
            if term or trunc:
                action = None
            else:
                legal = flatnonzero(obs["action_mask"])
                action = int(legal[rrange(len(legal))])
                decisions += 1
            env.step(action)
        games += 1
        if time.perf_counter() - t0 >= seconds:
            break
    elapsed = time.perf_counter() - t0
    return dict(decisions=decisions, games=games, elapsed=elapsed, cpu=time.process_time() - c0,
                decisions_per_s=decisions / elapsed, games_per_s=games / elapsed)


def run_peers(only: str, scale: float, reps: int) -> dict:
    setup = SHARED / "bench" / "setup.sh"
    peers = SHARED / "bench" / "peers.py"
    if not setup.exists():
        print(f"peers not found at {SHARED}/bench (set TAROCCHINI_SHARED)", file=sys.stderr)
        return {}
    out = subprocess.run(["bash", str(setup)], capture_output=True, text=True, check=True).stdout
    py = out.strip().splitlines()[-1]
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "peers.json"
        cmd = [py, str(peers), "--scale", str(scale), "--reps", str(reps), "--json", str(out)]
        if only:
            cmd += ["--only", only]
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        data = json.loads(out.read_text())
    return data


def peer_medians(data: dict) -> dict[str, float]:
    """key -> median decisions/s, from peers.py's JSON ``rows``."""
    return {r["key"]: r["decisions_per_s"] for r in data.get("rows", []) if "decisions_per_s" in r}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=8.0, help="seconds per measurement of ours")
    ap.add_argument("--reps", type=int, default=3, help="repeats (medians are reported)")
    ap.add_argument("--games", default=",".join(tarot_env.ENV_IDS), help="comma-separated games")
    ap.add_argument("--peers", default="pz_texas_holdem_v4,pz_leduc_holdem_v4,os_tarok4_full,os_hearts_obsnp,rl_uno",
                    help="peers.py keys to measure in the same run")
    ap.add_argument("--peer-scale", type=float, default=0.5, help="peers.py --scale")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--paired", action="store_true",
                    help="interleave our measurements and the peers' repeat by repeat; ratios = median of the "
                         "per-repeat ratios (with their range)")
    ap.add_argument("--batched", action="store_true", help="also run scripts/bench_batched.py")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="bench_env.json")
    args = ap.parse_args()

    ours: dict[str, list[dict]] = {}
    games = [g for g in args.games.split(",") if g]
    paired = args.paired and not args.no_peers
    per_rep: list[dict[str, float]] = []  # --paired: each repeat's peer figures
    for rep in range(args.reps):
        for game in games:
            r = aec_loop(tarot_env.ENV_IDS[game], args.seconds, args.seed)
            ours.setdefault(game, []).append(r)
            print(f"rep{rep + 1} {game:10s} {r['decisions_per_s']:10.0f} decisions/s  {r['games_per_s']:8.1f} games/s",
                  file=sys.stderr, flush=True)
        if paired:
            per_rep.append(peer_medians(run_peers(args.peers, args.peer_scale, 1)))
    ours_med = {g: statistics.median(r["decisions_per_s"] for r in rs) for g, rs in ours.items()}

    if paired:
        keys = [k for k in per_rep[0] if all(k in d for d in per_rep)] if per_rep and per_rep[0] else []
        pmed = {k: statistics.median(d[k] for d in per_rep) for k in keys}
        pratio = {g: {k: [ours[g][i]["decisions_per_s"] / per_rep[i][k] for i in range(len(per_rep))] for k in keys}
                  for g in games}
        print("\n| our env (AEC loop, obs + mask every decision) | decisions/s | " +
              " | ".join(f"× {k} (median of {len(per_rep)} paired repeats, range)" for k in keys) + " |")
        print("|---|---:|" + "---:|" * len(keys))
        for g in games:
            cells = [f"{statistics.median(x):.2f} ({min(x):.2f}–{max(x):.2f})" for x in pratio[g].values()]
            print(f"| {tarot_env.ENV_IDS[g]} | {ours_med[g]:,.0f} | " + " | ".join(cells) + " |")
        print("\n| peer | decisions/s (median) |\n|---|---:|")
        for k, p in pmed.items():
            print(f"| {k} | {p:,.0f} |")
        Path(args.json).write_text(json.dumps({
            "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
            "ours": ours, "peers_per_repeat": per_rep, "paired_ratios": pratio}, indent=1))
        return

    peers = {} if args.no_peers else run_peers(args.peers, args.peer_scale, args.reps)
    pmed = peer_medians(peers) if peers else {}

    print("\n| our env (AEC loop, obs + mask every decision) | decisions/s | " +
          " | ".join(f"× {k}" for k in pmed) + " |")
    print("|---|---:|" + "---:|" * len(pmed))
    for g, v in ours_med.items():
        print(f"| {tarot_env.ENV_IDS[g]} | {v:,.0f} | " + " | ".join(f"{v / p:.2f}" for p in pmed.values()) + " |")
    if pmed:
        print("\n| peer | decisions/s |\n|---|---:|")
        for k, p in pmed.items():
            print(f"| {k} | {p:,.0f} |")
    result = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "ours": ours, "ours_median_decisions_per_s": ours_med, "peers_median_decisions_per_s": pmed,
        "ratios": {g: {k: v / p for k, p in pmed.items()} for g, v in ours_med.items()},
    }
    Path(args.json).write_text(json.dumps(result, indent=1))
    if args.batched:
        script = ROOT / "scripts" / "bench_batched.py"
        if script.exists():
            subprocess.run([sys.executable, str(script)], check=True)
        else:
            print("scripts/bench_batched.py is not there yet", file=sys.stderr)


if __name__ == "__main__":
    main()
