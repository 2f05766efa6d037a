"""What the command lines show before anything heavy is imported: a leaf module (the standard library only),
so that ``--help`` lists the players (``agents.players.players.player_specs``) and argument errors are found without
importing torch or the engines (agents/cli.py)."""
from __future__ import annotations

BASELINES = ("random", "heuristic")  # built by agents.players.baselines.make_baseline

# the fewest duplicate deals with a spread, hence a confidence interval: tarot-eval's and the arena's minimum
MIN_DEALS = 2
