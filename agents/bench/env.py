"""Environment throughput (the PettingZoo AEC loop), measured against peers in the same run.

Runs uniformly random legal play through the PettingZoo AEC loop (``agent_iter`` / ``last`` /
``step``; the observation and the action mask are built at every decision) for each registered
tarocchini game, then runs ``../shared/bench/peers.py`` (OpenSpiel, PettingZoo classic, RLCard) in
the same run and prints decisions per second with the ratio to each peer. The loop is the same as
peers.py's ``pz_loop`` so the numbers compare like for like.

    tarot-bench env                      # our games + the peers' core set
    tarot-bench env --seconds 3 --peers pz_texas_holdem_v4,os_tarok4_full
    tarot-bench env --no-peers           # ours only
    tarot-bench env --batched            # then also `tarot-bench batched` with its defaults
    tarot-bench env --paired --reps 5 --seconds 3 --peers pz_texas_holdem_v4

``--paired`` interleaves: each repeat measures our games and then the peers (one peers.py repeat), and
the ratios are the median of the per-repeat ratios, with their range. On a shared machine whose speed
drifts from minute to minute, a ratio of two measurements taken seconds apart is steadier than a ratio
of two medians taken minutes apart.

The peers live in their own virtual environment, made once by ``../shared/bench/setup.sh``
(``TAROCCHINI_SHARED``: another place for ``../shared``; ``TAROCCHINI_PEERS_PYTHON``: its python).
Results go to ``--json`` (default ``runs/bench/env.json``: ``machine``, ``ours`` (every measurement),
``ours_median_decisions_per_s``, ``peers_median_decisions_per_s``, ``ratios``; with ``--paired``:
``ours``, ``peers_per_repeat``, ``paired_ratios``) and a Markdown table on stdout.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from ._common import games_arg, machine, peer_medians, positive_float, positive_int, run_peers

HELP = "AEC-loop decisions/s of each game, with ratios to peers measured in the same run"
PEERS = "pz_texas_holdem_v4,pz_leduc_holdem_v4,os_tarok4_full,os_hearts_obsnp,rl_uno"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--seconds", type=positive_float, default=8.0, help="seconds per measurement of ours")
    ap.add_argument("--reps", type=positive_int, default=3, help="repeats (medians are reported)")
    ap.add_argument("--games", default="all", help="comma-separated games, or all")
    ap.add_argument("--peers", default=PEERS, help="peers.py keys to measure in the same run")
    ap.add_argument("--peer-scale", type=positive_float, default=0.5, help="peers.py --scale")
    ap.add_argument("--no-peers", action="store_true", help="measure ours only")
    ap.add_argument("--paired", action="store_true",
                    help="interleave our measurements and the peers' repeat by repeat; ratios = median of the "
                         "per-repeat ratios (with their range)")
    ap.add_argument("--batched", action="store_true",
                    help="then also run `tarot-bench batched` as it is with no option")
    ap.add_argument("--seed", type=int, default=0, help="seed of the deals and of the random play")
    ap.add_argument("--json", default="runs/bench/env.json", help="results file")


def aec_loop(env_id: str, seconds: float, seed: int) -> dict:
    """Random legal play through the AEC loop for about ``seconds``; whole games only."""
    import numpy as np
    import pettingzoo

    import tarot_env  # noqa: F401  (registers the environments)

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


def run(args: argparse.Namespace, ap: argparse.ArgumentParser) -> dict:
    import tarot_env

    games = games_arg(args.games, list(tarot_env.ENV_IDS), ap)
    ours: dict[str, list[dict]] = {}
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
        result = {"machine": machine(), "ours": ours, "ours_median_decisions_per_s": ours_med,
                  "peers_per_repeat": per_rep, "paired_ratios": pratio}
    else:
        peers = {} if args.no_peers else run_peers(args.peers, args.peer_scale, args.reps)
        pmed = peer_medians(peers) if peers else {}
        print("\n| " + " | ".join(["our env (AEC loop, obs + mask every decision)", "decisions/s",
                                    *(f"× {k}" for k in pmed)]) + " |")
        print("|---|---:|" + "---:|" * len(pmed))
        for g, v in ours_med.items():
            cells = [tarot_env.ENV_IDS[g], f"{v:,.0f}", *(f"{v / p:.2f}" for p in pmed.values())]
            print("| " + " | ".join(cells) + " |")
        if pmed:
            print("\n| peer | decisions/s |\n|---|---:|")
            for k, p in pmed.items():
                print(f"| {k} | {p:,.0f} |")
        result = {
            "machine": machine(), "ours": ours, "ours_median_decisions_per_s": ours_med,
            "peers_median_decisions_per_s": pmed,
            "ratios": {g: {k: v / p for k, p in pmed.items()} for g, v in ours_med.items()},
        }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    if args.batched:
        from . import main

        main(["batched"])
    return result

