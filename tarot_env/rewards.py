"""Rewards, written once (docs/environments.md): a seat's pay for a finished deal (``reward="deal"``) or
game (``reward="game"``), team-shared, for one game or a batch (any leading axes), and the end-of-episode
info dict (:func:`final_info`) of the AEC env and the batched engines.
"""
from __future__ import annotations

from typing import Any

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


def final_info(scores, winner, last_result: dict | None, *, Game: Any = None,
               seat: int | None = None) -> dict[str, Any]:
    """The end-of-episode info dict of the AEC env and the batched engines: ``{"scores": [int, ...] (the
    game's side scores), "winner": int | None (-1: a draw; None: the game goes on, an ``episode="deal"``
    episode), "last_result": dict | None}`` (``Game.history[-1]``: with ``seat`` and the rules class ``Game``,
    that seat's view of it, ``Game.result_view``, RULES.md H; else the full record, not copied)."""
    if seat is not None and last_result is not None:
        if Game is None:
            raise ValueError("final_info(..., seat=...) needs the rules class Game (for Game.result_view)")
        last_result = Game.result_view(last_result, int(seat))
    return {"scores": np.asarray(scores).tolist(), "winner": None if winner is None else int(winner),
            "last_result": last_result}
