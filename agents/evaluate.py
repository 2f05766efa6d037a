"""Duplicate-deal evaluation: the same deals played twice, with the two teams' players exchanged.

A deal is a seed: ``Game(config, seed)`` deals the same cards to the same seats every time (the
players' choices never touch the game's random stream). Each deal is played once with policy A
holding team 0 and policy B team 1, and once the other way round; the deal's margin is the mean
over the two plays of A's team score minus B's team score for that first deal. Card luck cancels
out; what is left is the difference in play.

``duplicate_eval`` returns the mean margin per deal with a 95% confidence interval (normal
approximation, ``1.96 · sd / sqrt(n)``), the share of deals won by A (margin > 0) and tied.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .policy import Policy, RandomPolicy
from .rollout import GameSpec


@dataclass
class DuplicateResult:
    deals: int
    mean_margin: float   # A's team score minus B's per deal (game points), averaged over both seatings
    ci95: float          # half-width of the 95% confidence interval of mean_margin
    win_share: float     # share of deals with margin > 0
    tie_share: float     # share of deals with margin == 0
    margins: np.ndarray  # per deal

    def __str__(self) -> str:
        return (f"{self.deals} duplicate deals: margin {self.mean_margin:+.2f} ± {self.ci95:.2f} "
                f"(95% CI) points/deal, won {100 * self.win_share:.1f}%, tied {100 * self.tie_share:.1f}%")

    def as_dict(self) -> dict:
        return {"deals": self.deals, "mean_margin": self.mean_margin, "ci95": self.ci95,
                "win_share": self.win_share, "tie_share": self.tie_share}


def play_first_deals(spec: GameSpec, seeds: list[int], team_policies: list[tuple[Policy, Policy]]) -> np.ndarray:
    """Play deal 0 of ``Game(seed)`` for each (seed, (team-0 policy, team-1 policy)) pair in lock-step.

    Returns team 0's score minus team 1's for each game's first deal.
    """
    games = [spec.new_game(s) for s in seeds]
    team_of = spec.team_of
    out = np.zeros(len(games))
    live = list(range(len(games)))
    O, A = spec.obs_size, spec.num_actions
    while live:
        groups: dict[int, list[int]] = {}
        for i in live:
            pol = team_policies[i][team_of[games[i].current]]
            groups.setdefault(id(pol), []).append(i)
        for ids in groups.values():
            pol = team_policies[ids[0]][team_of[games[ids[0]].current]]
            if pol.needs_game:  # a search player reads the rules objects (agents/pimc.py)
                acts = pol.act_games([games[i] for i in ids])
                for k, i in enumerate(ids):
                    games[i].apply_unchecked(int(acts[k]))
                continue
            obs = np.empty((len(ids), O), dtype=np.float32)
            mask = np.empty((len(ids), A), dtype=bool)
            for k, i in enumerate(ids):
                g = games[i]
                g.observation(g.current, out=obs[k])
                mask[k] = g.legal_mask()
            acts = pol.act_batch(obs, mask)
            for k, i in enumerate(ids):
                games[i].apply_unchecked(int(acts[k]))
        still = []
        for i in live:
            g = games[i]
            if g.history:
                sc = g.history[0]["scores"]
                out[i] = sc[0] - sc[1]
            else:
                still.append(i)
        live = still
    return out


def duplicate_eval(spec: GameSpec, a: Policy, b: Policy | None = None, deals: int = 200,
                   seed: int = 12345) -> DuplicateResult:
    """Policy ``a`` against ``b`` (default: uniform random play) on ``deals`` duplicate deals."""
    if deals < 2:
        raise ValueError(f"deals must be at least 2 (got {deals})")
    b = RandomPolicy(seed) if b is None else b
    rng = np.random.default_rng(seed)
    seeds = [int(s) for s in rng.integers(2**62, size=deals)]
    d0 = play_first_deals(spec, seeds, [(a, b)] * deals)     # A holds team 0
    d1 = -play_first_deals(spec, seeds, [(b, a)] * deals)    # A holds team 1
    m = (d0 + d1) / 2.0
    ci = 1.96 * float(m.std(ddof=1)) / math.sqrt(deals)
    return DuplicateResult(deals, float(m.mean()), ci, float((m > 0).mean()), float((m == 0).mean()), m)


def main(argv: list[str] | None = None) -> None:
    """``python -m agents.evaluate CHECKPOINT [--deals N] [--seed S] [--against CHECKPOINT]``."""
    import argparse

    from .policy import load_policy
    from .rollout import make_spec

    p = argparse.ArgumentParser(description="Duplicate-deal evaluation of a checkpoint against random play")
    p.add_argument("checkpoint")
    p.add_argument("--deals", type=int, default=1000)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--against", default=None, help="another checkpoint (default: random play)")
    p.add_argument("--sample", action="store_true", help="sample actions instead of the greedy choice")
    ns = p.parse_args(argv)
    pol = load_policy(ns.checkpoint, greedy=not ns.sample)
    spec = make_spec(pol.meta["game"], pol.meta["config"].get("game_options", {}))
    other = load_policy(ns.against, pol.meta["game"], greedy=not ns.sample) if ns.against else None
    print(duplicate_eval(spec, pol, other, ns.deals, ns.seed))


if __name__ == "__main__":
    main()
