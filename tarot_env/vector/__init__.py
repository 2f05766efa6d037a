"""Batched self-play engines: ``num_envs`` games stepped together (issue #5; docs/batched.md).

Row ``i`` plays exactly the AEC environment's game of seed ``venv.row_seeds[i]``; ``engine="loop"`` gives
one AEC env per row behind the same API (``LoopVecEnv``).
"""
from __future__ import annotations

from typing import Any

from ..games import GAMES, load
from .base import VecEnv, VecStep, row_seeds
from .sparse import SparseObs

# game -> engine kind -> "module:class", from the table of the games (tarot_env/games.py). "vector":
# the game's batched engine; "loop": one AEC env per row (the reference path, AEC speed), every game.
_ENGINES = {game: g.engines for game, g in GAMES.items()}


def make_vec(game: str, num_envs: int, seed: int | None = None, *, engine: str = "auto",
             **config: Any) -> VecEnv:
    """A batched engine of ``game`` (``"partita"``, or its env id ``"tarocchini/partita-v1"``, …), docs/batched.md.

    ``config``: the game's rule options and the env options exactly as for the AEC environment, plus
    ``copy_outputs`` (default False: the outputs are reused buffers), ``observe`` (False: masks only, ``obs``
    an empty ``[B, 0]`` array) and ``obs_format`` (``"dense"``: float32 ``[B, OBS]``; ``"sparse"``: a
    :class:`SparseObs`). ``engine``: ``"auto"`` (the vectorised engine), ``"vector"`` or ``"loop"`` (one AEC
    environment per row). Unknown names and a ``num_envs`` that is not a positive integer raise ValueError (a
    game that is not a string TypeError)."""
    if not isinstance(game, str):
        raise TypeError(f"game must be a game name or env id such as 'partita'; got {game!r}; "
                         f"available: {sorted(_ENGINES)}")
    from .. import game_key  # (the package imports this module first)

    key = game_key(game) if "/" in game else game  # a removed version's id raises, naming the current one
    if key not in _ENGINES:
        raise ValueError(f"no batched engine for game {game!r}; available: {sorted(_ENGINES)}")
    kinds = _ENGINES[key]
    kind = ("vector" if "vector" in kinds else "loop") if engine == "auto" else engine
    if kind not in kinds:
        raise ValueError(f"engine {engine!r} is not available for {key}; choose one of "
                         f"{['auto', *kinds]}")
    from ..checks import check_seed, check_vec_fits  # a bad seed named as a seed; rows that cannot fit refused
    seed = check_seed(seed)
    # (a lower bound: the dense observation rows counted only where they are allocated)
    check_vec_fits(key, num_envs, config.get("observe", True) and config.get("obs_format", "dense") == "dense")
    cls = load(kinds[kind])
    if kind == "loop":  # the one loop engine serves every game
        return cls(num_envs, seed, game=key, **config)
    return cls(num_envs, seed, **config)


__all__ = ["make_vec", "VecEnv", "VecStep", "SparseObs", "row_seeds"]
