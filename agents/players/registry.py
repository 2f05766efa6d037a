"""``load_policy(spec, game)``: the one way to get any player from a name, a path or ``sb3:PATH``.

Player specs (:func:`player_specs` lists them; the command lines' help texts and errors are built from
it, so a player added to :func:`named_players` — or a baseline to ``agents.players.baselines.BASELINES`` —
appears there by itself):

* a baseline name (``agents.players.baselines.BASELINES``: ``"random"``, ``"heuristic"`` …);
* ``"pimc"`` or ``"pimc:worlds=16,rollout=random,time=0.5"`` → the search player of ``agents/players/pimc.py``
  (keyword arguments ``worlds``, ``rollout``, ``time_limit``, ``chunk``, ``engine`` may also be passed to
  ``load_policy``); ``"ppo+pimc"`` (also with ``":..."``) is the network-guided search: the shipped
  network chooses the ``top_k`` actions searched and plays the rollouts (``prior``, ``top_k``);
* ``"ppo"`` → the trained policy shipped with the package (``agents/pretrained/<game>.pt``, made by
  ``scripts/export_policy.py`` from the default training runs);
* ``"sb3:PATH.zip"`` → a Stable-Baselines3 ``MaskablePPO``/``PPO`` model trained on the single-agent
  wrapper, read weights-only by :func:`agents.players.sb3.load_sb3_policy` (nothing in the zip is unpickled);
* anything else is a checkpoint path, read by ``agents.players.policy.load_network_policy`` (``torch.load`` with
  ``weights_only=True``, checksum verified).

A checkpoint or SB3 model must be of ``game`` and its observation and action sizes must equal those of
``game``'s environment (with ``options``); otherwise a ``ValueError`` says what the file holds and what
was expected.

The returned object is a :class:`agents.players.policy.Policy` (``act(obs, mask)``, ``act_batch(obs, mask)``)
usable in the AEC env, the single-agent wrapper (``tarot_env.wrappers``), the arena, ``agents.evaluation.evaluate``
and human play.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..spec import game_sizes  # re-exported: (observation size, number of actions) of a game
from .players import PRETRAINED, SB3_PREFIX, load_player, named_players, player_specs, players_help
from .policy import Policy

__all__ = ["PRETRAINED", "SB3_PREFIX", "game_sizes", "is_search_name", "load_policy", "named_players",
           "player_specs", "players_help", "policy_label"]

def is_search_name(name) -> bool:
    """``"pimc"``, ``"ppo+pimc"`` or either with ``":..."``: the search player (a new, seeded object per
    load, like a baseline)."""
    from .pimc import SEARCH_NAMES

    return str(name).split(":")[0] in SEARCH_NAMES


def load_policy(path_or_name: str | os.PathLike, game: str, *, options: dict | None = None,
                seed: int | None = None, greedy: bool = True, **search) -> Policy:
    """A policy for ``game`` from any player spec: a name, ``pimc[:...]``, a checkpoint path or
    ``sb3:PATH.zip`` (module docstring).

    ``seed`` seeds the random baseline, the search player (and a sampling network); ``greedy=False``
    samples a network's actions instead of taking the most probable legal one. ``search`` holds the
    PIMC keywords (``worlds``, ``rollout``, ``time_limit``, ``chunk``, ``engine``, ``prior``, ``top_k``),
    only for ``"pimc"`` and ``"ppo+pimc"``.
    """
    import tarot_env

    if game not in tarot_env.ENV_IDS:
        raise ValueError(f"unknown game {game!r}; games are {sorted(tarot_env.ENV_IDS)}")
    name = str(path_or_name)
    if is_search_name(name):
        from .pimc import PIMCPolicy, parse_pimc_name

        kw = parse_pimc_name(name)
        kw.update(search)
        return PIMCPolicy(game, seed=seed, **kw)
    if search:
        raise ValueError(f"options {sorted(search)} are for the 'pimc' player, not for {name!r}")
    return load_player(name, game, options, seed, greedy)


def policy_label(path_or_name: str) -> str:
    """A short display name: the baseline name, or the file's parent folder / stem (``sb3:`` kept)."""
    s = str(path_or_name)
    if s in named_players() or is_search_name(s):
        return s
    prefix = SB3_PREFIX if s.startswith(SB3_PREFIX) else ""
    p = Path(s[len(prefix):])
    return prefix + (f"{p.parent.name}/{p.stem}" if p.parent.name else p.stem)
