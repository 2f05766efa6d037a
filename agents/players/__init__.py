"""The players: the network (``network``, ``policy``), the baselines and the heuristic, the PIMC search
(``pimc``), SB3 models (``sb3``), and the one way to get a player from its spec (``registry.load_policy``).
Imports nothing from ``agents.training`` or ``agents.evaluation`` (tests/test_imports.py)."""
