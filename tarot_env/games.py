"""The one table of the games: ``GAMES`` (re-exported as ``tarot_env.GAMES``).

Every list of the games derives from it (docs/architecture.md, "The table of games"). Code is named by
``"module:attribute"`` strings, imported only when asked for (:func:`load`), so that importing ``tarot_env``
imports no rules module, kernel or engine; this module imports nothing of the package.

Bump a game's version (``env_id``) whenever its observation, state, actions, rewards or rules change,
and add a "Version history" line to ``tarot_env/envs/<game>.py``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

LOOP_ENGINE = "tarot_env.vector.loop:LoopVecEnv"  # one AEC env per row, for every game (reference path)


@dataclass(frozen=True)
class GameInfo:
    """One game: its key, its versioned env id, where its code lives, its seats, what it is."""

    key: str                 # "partita": the name used everywhere (CLIs, checkpoints' meta["game"])
    env_id: str              # "tarocchini/partita-v1": the registered PettingZoo id (current version)
    env_module: str          # "tarot_env.envs.partita": defines raw_env (the AEC class) and env()
    rules: str               # "tarot_env.rules.partita:PartitaGame": the rules object (TrickGame)
    vector: str | None       # "tarot_env.vector.partita:PartitaVec": the batched engine, None if none
    players: int             # seats at the table
    description: str         # one line, for help texts and tables

    @property
    def version(self) -> str:
        """The version part of the id (``"v1"``), what a trained checkpoint stores."""
        return self.env_id.rsplit("-", 1)[1]

    @property
    def rules_module(self) -> str:
        """``"tarot_env.rules.partita"``: the module of the rules class (its ``OBS``, constants …)."""
        return self.rules.split(":")[0]

    @property
    def engines(self) -> dict[str, str]:
        """The batched engines by kind (``tarot_env.vector._ENGINES``): ``"vector"`` (if any), ``"loop"``."""
        return ({"vector": self.vector} if self.vector else {}) | {"loop": LOOP_ENGINE}

    def env_class(self) -> type:
        """The AEC env class (``<env_module>:raw_env``), imported now."""
        return load(f"{self.env_module}:raw_env")

    def rules_class(self) -> type:
        """The rules class (a ``TrickGame`` subclass), imported now."""
        return load(self.rules)


GAMES: dict[str, GameInfo] = {g.key: g for g in (
    GameInfo("partita", "tarocchini/partita-v1", "tarot_env.envs.partita",
             "tarot_env.rules.partita:PartitaGame", "tarot_env.vector.partita:PartitaVec", 4,
             "four players in two partnerships, 54-card French-suited pack, games of four deals (RULES.md E)"),
    GameInfo("millone", "tarocchini/millone-v2", "tarot_env.envs.millone",
             "tarot_env.rules.millone:MilloneGame", "tarot_env.vector.millone:MilloneVec", 2,
             "two players, 62-card Tarocco Bolognese, to 1000 points (RULES.md D)"),
    GameInfo("ottocento", "tarocchini/ottocento-v2", "tarot_env.envs.ottocento",
             "tarot_env.rules.ottocento:OttocentoGame", "tarot_env.vector.ottocento:OttocentoVec", 4,
             "four players in two partnerships, 62-card Tarocco Bolognese, to 800 points (RULES.md C)"),
)}


def load(entry: str) -> Any:
    """The object named by ``"package.module:attribute"``, importing the module now."""
    module, _, attr = entry.partition(":")
    if not attr:
        raise ValueError(f"expected 'module:attribute', got {entry!r}")
    return getattr(importlib.import_module(module), attr)
