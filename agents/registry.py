"""``load_policy(path_or_name, game)``: one way to get any player — a baseline by name or a checkpoint.

* ``"random"``, ``"heuristic"`` → the baselines of ``agents/baselines.py``;
* ``"pimc"`` or ``"pimc:worlds=16,rollout=random,time=0.5"`` → the search player of ``agents/pimc.py``
  (keyword arguments ``worlds``, ``rollout``, ``time_limit`` may also be passed to ``load_policy``);
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

__all__ = ["PRETRAINED", "game_sizes", "is_search_name", "load_policy", "policy_label"]

PRETRAINED = Path(__file__).resolve().parent / "pretrained"  # policies shipped with the package


def game_sizes(game: str, options: dict | None = None) -> tuple[int, int]:
    """(observation size, number of actions) of ``game``'s environment."""
    from .rollout import make_spec

    spec = make_spec(game, options or {})
    return spec.obs_size, spec.num_actions


def is_search_name(name) -> bool:
    """``"pimc"`` or ``"pimc:..."``: the search player (a new, seeded object per load, like a baseline)."""
    return str(name).split(":")[0] == "pimc"


def load_policy(path_or_name: str | os.PathLike, game: str, *, options: dict | None = None,
                seed: int | None = None, greedy: bool = True, **search) -> Policy:
    """A policy for ``game`` from a baseline name, ``pimc`` or a checkpoint path (module docstring).

    ``seed`` seeds the random baseline, the search player (and a sampling network); ``greedy=False``
    samples a network's actions instead of taking the most probable legal one. ``search`` holds the
    PIMC keywords (``worlds``, ``rollout``, ``time_limit``, ``chunk``), only for ``"pimc"``.
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
    if name in BASELINES:
        return make_baseline(name, game, seed)
    if name == "ppo":
        name = str(PRETRAINED / f"{game}.pt")
    path = Path(name)
    if not path.exists():
        raise ValueError(f"{name!r} is neither a baseline ({', '.join(BASELINES)}), 'pimc', 'ppo' nor an "
                         f"existing checkpoint file")
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
    if s in BASELINES or s == "ppo" or is_search_name(s):
        return s
    p = Path(s)
    return f"{p.parent.name}/{p.stem}" if p.parent.name else p.stem
