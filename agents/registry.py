"""``load_policy(path_or_name, game)``: one way to get any player — a baseline by name or a checkpoint.

* ``"random"``, ``"heuristic"`` → the baselines of ``agents/baselines.py``;
* ``"ppo"`` → the trained policy shipped with the package (``agents/pretrained/<game>.pt``, made by
  ``scripts/export_policy.py`` from the default training runs);
* anything else is a checkpoint path, read by ``agents.policy.load_policy`` (``torch.load`` with
  ``weights_only=True``, checksum verified). The checkpoint must be of ``game`` and its observation
  and action sizes must equal those of ``game``'s environment (with ``options``); otherwise a
  ``ValueError`` says what the file holds and what was expected.

The returned object is a :class:`agents.policy.Policy` (``act(obs, mask)``, ``act_batch(obs, mask)``)
usable in the AEC env, the single-agent wrapper (``tarot_env.wrappers``), the arena and human play.
"""
from __future__ import annotations

import os
from pathlib import Path

from .baselines import BASELINES, make_baseline
from .policy import Policy

__all__ = ["load_policy", "policy_label", "game_sizes", "PRETRAINED"]

PRETRAINED = Path(__file__).resolve().parent / "pretrained"  # policies shipped with the package


def game_sizes(game: str, options: dict | None = None) -> tuple[int, int]:
    """(observation size, number of actions) of ``game``'s environment."""
    from .rollout import make_spec

    spec = make_spec(game, options or {})
    return spec.obs_size, spec.num_actions


def load_policy(path_or_name: str | os.PathLike, game: str, *, options: dict | None = None,
                seed: int | None = None, greedy: bool = True) -> Policy:
    """A policy for ``game`` from a baseline name or a checkpoint path (see the module docstring).

    ``seed`` seeds the random baseline (and a sampling network); ``greedy=False`` samples a network's
    actions instead of taking the most probable legal one.
    """
    import tarot_env

    if game not in tarot_env.ENV_IDS:
        raise ValueError(f"unknown game {game!r}; games are {sorted(tarot_env.ENV_IDS)}")
    name = str(path_or_name)
    if name in BASELINES:
        return make_baseline(name, game, seed)
    if name == "ppo":
        name = str(PRETRAINED / f"{game}.pt")
    path = Path(name)
    if not path.exists():
        raise ValueError(f"{name!r} is neither a baseline ({', '.join(BASELINES)}), the shipped policy "
                         f"'ppo', nor an existing checkpoint file")
    from .policy import load_checkpoint
    from .policy import load_policy as load_checkpoint_policy

    meta = load_checkpoint(path)["meta"]  # refuses a corrupt file with its own clear message
    if meta["game"] != game:
        raise ValueError(f"checkpoint {name!r} was trained for {meta['game']!r} "
                         f"({meta.get('env_id')}), not for {game!r}; pick a {game} checkpoint")
    obs_size, num_actions = game_sizes(game, options)
    for key, want in (("obs_size", obs_size), ("num_actions", num_actions)):
        if meta[key] != want:
            raise ValueError(f"checkpoint {name!r} has {key}={meta[key]}, but {game} "
                             f"{tarot_env.ENV_IDS[game]} has {key}={want}: it was trained on another "
                             f"version of the environment")
    pol = load_checkpoint_policy(path, game, greedy=greedy, seed=seed)
    pol.name = path.stem
    return pol


def policy_label(path_or_name: str) -> str:
    """A short display name: the baseline name, or the checkpoint's parent folder / file stem."""
    s = str(path_or_name)
    if s in BASELINES or s == "ppo":
        return s
    p = Path(s)
    return f"{p.parent.name}/{p.stem}" if p.parent.name else p.stem
