"""Evaluation: duplicate deals against reference players (``evaluate``) and round-robin tournaments
(``arena``). May import ``agents.players``; imports nothing from ``agents.training`` (tests/test_imports.py)."""
