"""Compile the rules' and the players' kernels ahead of use: ``python -m agents.players.warm [game ...]``.

:func:`tarot_env.warm.warm_game` compiles a game's rules kernels; :func:`warm_players` adds the compiled
players of ``agents.players``: the heuristic (``heuristic.py``: its decision kernels, on the AEC
observations and on a batch), and the search (``pimc.py``) with uniform and heuristic rollouts (the
batched engine's playouts, ``heuristic_playouts.py``). Without arguments every game is warmed.
``tests/conftest.py`` runs this in two processes before the test workers start (issue #33).
"""
from __future__ import annotations

import sys

import numpy as np


def warm_players(game: str) -> None:
    """Compile (or load) ``game``'s compiled players by a few of their decisions."""
    import tarot_env
    from tarot_env.config import make_config

    from .pimc import PIMCPolicy
    from .registry import load_policy

    heuristic = load_policy("heuristic", game, seed=0)
    rules = tarot_env.game_info(game).rules_class()
    for rollout in ("random", "heuristic"):
        g = rules(make_config(rules.Config, {}), 3)
        search = PIMCPolicy(game, worlds=2, rollout=rollout, seed=0)
        for _ in range(12):
            if g.game_over:
                break
            g.apply(search.act_game(g))
        obs = g.observation(g.current_player)
        mask = g.legal_mask()
        heuristic.act(obs, mask)
        heuristic.act_batch(np.stack([obs, obs]), np.stack([mask, mask]))


def main(argv: list[str] | None = None) -> int:
    import tarot_env
    from tarot_env.warm import warm_game

    games = (sys.argv[1:] if argv is None else argv) or list(tarot_env.GAMES)
    for game in games:
        warm_game(tarot_env.game_key(game))
        warm_players(tarot_env.game_key(game))
    return 0


if __name__ == "__main__":
    sys.exit(main())
