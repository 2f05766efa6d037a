#!/usr/bin/env python3
"""Which deals a player loses against random play, and how often: the same duplicate deals played
again with only the random player's seed changed (docs/strength.md).

    python scripts/loss_spread.py --game partita --player ppo --deals 1000 --seed 7 --opponent-seeds 10

A share of deals lost (``agents.evaluation.evaluate``) mixes two kinds of loss: deals that the player loses whatever
its opponent does (a weakness of its play on those cards) and deals lost only when the random player
happens to play well. Playing the same deals (``--seed``) against ``--opponent-seeds`` differently
seeded random players tells them apart: for each deal, the share of the opponent seeds with which the
player did not win it (a tie counts as not won, as in ``agents.evaluation.evaluate``). Prints each run's result, then
how the per-deal loss shares are spread; ``--json`` writes that summary.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tarot_env  # noqa: E402
from agents.evaluation.evaluate import duplicate_eval  # noqa: E402
from agents.players.policy import RandomPolicy  # noqa: E402
from agents.players.registry import load_policy  # noqa: E402
from agents.spec import make_spec  # noqa: E402


def loss_spread(game: str, player: str, deals: int, seed: int, opponent_seeds: int) -> dict:
    """Play ``player`` against ``opponent_seeds`` random players (seeds 1000, 1001, …) on the same
    ``deals`` duplicate deals; return every run's margins and the per-deal loss shares."""
    if opponent_seeds < 1:
        raise ValueError(f"opponent_seeds must be at least 1 (got {opponent_seeds})")
    spec = make_spec(game)
    runs = []
    for k in range(opponent_seeds):  # the player loaded afresh: each run as if alone (a random player's stream)
        r = duplicate_eval(spec, load_policy(player, game), RandomPolicy(1000 + k), deals=deals, seed=seed)
        print(f"random player seed {1000 + k}: {r}", flush=True)
        runs.append(r)
    margins = np.array([r.margins for r in runs])        # [opponent seed, deal]
    lost = (margins <= 0).mean(axis=0)                    # per deal: share of opponent seeds not won
    shares, counts = np.unique(np.round(lost, 3), return_counts=True)
    return {
        "game": game, "player": player, "deals": deals, "seed": seed, "opponent_seeds": opponent_seeds,
        "won_per_run": [r.win_share for r in runs],
        "mean_loss_share": float((margins <= 0).mean()),
        "deals_never_lost": float((lost == 0).mean()),
        "deals_lost_at_least_half": float((lost >= 0.5).mean()),
        "deals_always_lost": float((lost == 1).mean()),
        "loss_share_histogram": {f"{s:g}": int(c) for s, c in zip(shares, counts)},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", choices=sorted(tarot_env.GAMES), default="partita")
    ap.add_argument("--player", default="ppo", help="a player spec or checkpoint (agents.players.registry.load_policy)")
    ap.add_argument("--deals", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7, help="the deals' seed (as agents.evaluation.evaluate --seed)")
    ap.add_argument("--opponent-seeds", type=int, default=10)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    out = loss_spread(args.game, args.player, args.deals, args.seed, args.opponent_seeds)
    won = out["won_per_run"]
    print(f"won {100 * min(won):.1f}–{100 * max(won):.1f}% of the deals across the random player's seeds; "
          f"lost {100 * out['mean_loss_share']:.2f}% of all games")
    print(f"deals never lost: {100 * out['deals_never_lost']:.1f}%, lost with at least half of the seeds: "
          f"{100 * out['deals_lost_at_least_half']:.1f}%, with every seed: {100 * out['deals_always_lost']:.1f}%")
    print("share of the seeds with which a deal was lost: number of deals", out["loss_share_histogram"])
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
