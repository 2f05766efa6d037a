"""Rewards, written once: what a seat is paid for a finished deal or game (team-shared).

Every game here is played by two sides (Partita and Ottocento: partnerships 0-2 / 1-3; Millone: the
two players), and partners are paid alike. The AEC environments (``tarot_env.envs.base``), the batched
engines (``tarot_env.vector``) and the trainer's AEC collector (``agents.rollout``) all call these two
functions, for one game or for a batch of games (any leading axes).

* ``reward="deal"`` (default): after each deal (hand), a seat's side score minus the other side's,
  divided by ``reward_scale``;
* ``reward="game"``: at the end of the game only, +1 to the winning side's seats, −1 to the others,
  0 to all for a draw (``winner = -1``).
"""
from __future__ import annotations

import numpy as np


def deal_rewards(scores, team_of, scale: float) -> np.ndarray:
    """float64[..., P]: each seat's reward for deals whose side scores are ``scores`` (``[..., 2]``)."""
    scores = np.asarray(scores, dtype=np.float64)
    team = np.asarray(team_of, dtype=np.int64)
    return (scores[..., team] - scores[..., 1 - team]) / float(scale)


def game_rewards(winner, team_of) -> np.ndarray:
    """float64[..., P]: +1 / −1 by the winning side (``winner``: a team, or −1 for a draw), 0 if drawn."""
    winner = np.asarray(winner, dtype=np.int64)[..., None]
    team = np.asarray(team_of, dtype=np.int64)
    return np.where(winner == -1, 0.0, np.where(winner == team, 1.0, -1.0))
