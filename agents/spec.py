"""A game as the players and the trainer see it (issue #33): :class:`GameSpec` (the rules class, the env
class, the rules and env configs of one variant with its options), :func:`make_spec` and :func:`game_sizes`.

A leaf of ``agents``: ``agents.players``, ``agents.evaluation`` and ``agents.training`` all reach a game
through it (and ``make_vec``), so the players need nothing from the trainer's package. It imports
``tarot_env`` only (tests/test_imports.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import tarot_env
from tarot_env.config import EnvConfig, game_and_env_configs


@dataclass
class GameSpec:
    """One game variant with its rules and environment options, as the trainer sees it."""

    name: str                 # "partita", "ottocento", "millone"
    env_id: str               # "tarocchini/partita-v1"
    Game: type                # the rules class (a TrickGame subclass)
    env_cls: type             # the AEC env class
    game_config: Any          # the rules Config
    env_config: EnvConfig     # reward, reward_scale, episode
    options: dict             # the options as given (JSON-able)

    @property
    def version(self) -> str:
        return self.env_id.rsplit("-", 1)[-1]

    @property
    def obs_size(self) -> int:
        return int(self.Game.OBS.size)

    @property
    def state_size(self) -> int:
        return int(self.Game.STATE.size)

    @property
    def num_actions(self) -> int:
        return int(self.Game.num_actions)

    @property
    def num_players(self) -> int:
        return int(self.Game.num_players)

    @property
    def team_of(self) -> np.ndarray:
        return np.asarray(self.Game.team_of, dtype=np.int64)

    def new_game(self, seed: int):
        return self.Game(self.game_config, int(seed))


def available_games() -> list[str]:
    """The games the trainer can play: every game of ``tarot_env.GAMES``, sorted."""
    return sorted(tarot_env.GAMES)


def make_spec(game: str, options: dict | None = None) -> GameSpec:
    """The :class:`GameSpec` of ``game`` with env/rules ``options`` (unknown ones raise by name)."""
    if game not in tarot_env.GAMES:
        raise ValueError(f"unknown game {game!r}; available games are {available_games()}")
    info = tarot_env.GAMES[game]
    env_id = info.env_id
    env_cls = info.env_class()
    G = env_cls.Game
    options = dict(options or {})
    # reward_scale: the env's own default (Ottocento, Millone: 200)
    game_config, env_config = game_and_env_configs(G.Config, options, getattr(env_cls, "default_reward_scale", None))
    return GameSpec(game, env_id, G, env_cls, game_config, env_config, options)


def game_sizes(game: str, options: dict | None = None) -> tuple[int, int]:
    """(observation size, number of actions) of ``game``'s environment (with ``options``)."""
    spec = make_spec(game, options or {})
    return spec.obs_size, spec.num_actions
