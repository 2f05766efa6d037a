"""The names of the baseline players: a leaf module (the standard library only), so that the command lines'
help texts list the players (``agents.players.player_specs``) without importing torch or the engines."""
from __future__ import annotations

BASELINES = ("random", "heuristic")  # built by agents.baselines.make_baseline
