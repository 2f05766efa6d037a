"""Duplicate-deal evaluation: the same deals played twice, with the two teams' players exchanged.

A deal is a seed: ``Game(config, seed)`` deals the same cards to the same seats every time (the
players' choices never touch the game's random stream). Each deal is played once with policy A
holding team 0 and policy B team 1, and once the other way round; the deal's margin is the mean
over the two plays of A's team score minus B's team score for that first deal. Card luck cancels
out; what is left is the difference in play.

``duplicate_eval`` returns the mean margin per deal with a 95% confidence interval (normal
approximation, ``1.96 · sd / sqrt(n)``), the share of deals won by A (margin > 0) with its 95% Wilson
score interval (:func:`wilson_interval`: on 1,000 deals a share near 97% is known to about ±1 point), and
the share tied.

From the command line (a player is any spec of ``agents.players.registry.load_policy``: ``random``,
``heuristic``, ``ppo`` — the policy shipped for the game —, a checkpoint path or ``sb3:PATH.zip``; errors
print one line and exit with status 2)::

    python -m agents.evaluation.evaluate checkpoints/partita_s1/final.pt --deals 1000   # against random play
    python -m agents.evaluation.evaluate ppo --game millone --against heuristic --deals 500
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..names import MIN_DEALS
from ..players.policy import Policy, RandomPolicy
from ..spec import GameSpec


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a share ``k / n`` (95% for ``z = 1.96``): unlike ``p ± z·sd`` it stays
    inside [0, 1] and is not empty at 0% or 100%."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"a share needs 0 <= k <= n and n >= 1 (got k={k}, n={n})")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class DuplicateResult:
    deals: int
    mean_margin: float   # A's team score minus B's per deal (game points), averaged over both seatings
    ci95: float          # half-width of the 95% confidence interval of mean_margin
    win_share: float     # share of deals with margin > 0
    tie_share: float     # share of deals with margin == 0
    margins: np.ndarray  # per deal

    @property
    def win_ci95(self) -> tuple[float, float]:
        """The 95% Wilson interval of ``win_share``."""
        return wilson_interval(int((self.margins > 0).sum()), self.deals)

    def __str__(self) -> str:
        lo, hi = self.win_ci95
        return (f"{self.deals} duplicate deals: margin {self.mean_margin:+.2f} ± {self.ci95:.2f} "
                f"(95% CI) points/deal, won {100 * self.win_share:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}], "
                f"tied {100 * self.tie_share:.1f}%")

    def as_dict(self) -> dict:
        lo, hi = self.win_ci95
        return {"deals": self.deals, "mean_margin": self.mean_margin, "ci95": self.ci95,
                "win_share": self.win_share, "win_ci95": [lo, hi], "tie_share": self.tie_share}


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
            if getattr(pol, "needs_game", False):  # a search player reads the rules objects (agents/players/pimc.py)
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
    if deals < MIN_DEALS:
        raise ValueError(f"deals must be at least {MIN_DEALS} (got {deals})")
    b = RandomPolicy(seed) if b is None else b
    rng = np.random.default_rng(seed)
    seeds = [int(s) for s in rng.integers(2**62, size=deals)]
    d0 = play_first_deals(spec, seeds, [(a, b)] * deals)     # A holds team 0
    d1 = -play_first_deals(spec, seeds, [(b, a)] * deals)    # A holds team 1
    m = (d0 + d1) / 2.0
    ci = 1.96 * float(m.std(ddof=1)) / math.sqrt(deals)
    return DuplicateResult(deals, float(m.mean()), ci, float((m > 0).mean()), float((m == 0).mean()), m)


def _game_and_options(game: str | None, players: list[str]) -> tuple[str, dict]:
    """The game to evaluate on and its options: ``--game`` if given, else the first checkpoint's game
    (default ``partita`` when every player is a name); the options a checkpoint of that game was
    trained with (its ``config["game_options"]``), else none. An SB3 model does not name its game, so
    it needs ``--game``."""
    from ..players.baselines import BASELINES
    from ..players.policy import load_checkpoint
    from ..players.registry import SB3_PREFIX

    if game is None and any(name.startswith(SB3_PREFIX) for name in players):
        raise ValueError("--game is needed for an SB3 model (a zip does not name its game); "
                         "e.g. --game partita")
    for name in players:
        if name in BASELINES or name == "ppo" or not Path(name).is_file():
            continue  # a name, or a missing file that load_policy reports
        meta = load_checkpoint(name)["meta"]  # a corrupt file: ValueError with its own message
        game = game or meta["game"]
        if meta["game"] == game:
            return game, dict(meta["config"].get("game_options", {}))
    return game or "partita", {}


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.evaluation.evaluate PLAYER [--game G] [--against PLAYER] [--deals N] [--seed S] [--sample]``
    (also the ``tarot-eval`` command, ``agents.cli.evaluate``).

    A player is ``random``, ``heuristic``, ``ppo`` (the policy shipped for the game) or a checkpoint
    path, read by :func:`agents.players.registry.load_policy`. A bad name, path, game or checkpoint prints one
    line ``evaluate: error: ...`` on stderr and exits with status 2.
    """
    from ..parsers import eval_parser

    return run_cli(eval_parser("python -m agents.evaluation.evaluate").parse_args(argv), "evaluate")


def run_cli(ns, prog: str = "tarot-eval") -> int:
    """Evaluate as the parsed command line ``ns`` says; print the result (0) or one error line (2)."""
    import sys

    from ..players.registry import load_policy, policy_label
    from ..spec import make_spec

    try:
        game, options = _game_and_options(ns.game, [ns.player, ns.against])
        a = load_policy(ns.player, game, options=options, seed=ns.seed + 1, greedy=not ns.sample)
        b = load_policy(ns.against, game, options=options, seed=ns.seed, greedy=not ns.sample)
        result = duplicate_eval(make_spec(game, options), a, b, ns.deals, ns.seed)
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    print(f"{game}: {policy_label(ns.player)} against {policy_label(ns.against)}")
    print(result)
    return 0


if __name__ == "__main__":
    from tarot_env.commands import run_command

    raise SystemExit(run_command("python -m agents.evaluation.evaluate", main))
