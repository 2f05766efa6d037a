"""``load_policy(spec, game)``: the one way to get any player from a name, a path or ``sb3:PATH``.

Player specs (:func:`player_specs` lists them; the command lines' help texts and errors are built from
it, so a player added to :func:`named_players` — or a baseline to ``agents.baselines.BASELINES`` —
appears there by itself):

* a baseline name (``agents.baselines.BASELINES``: ``"random"``, ``"heuristic"`` …);
* ``"pimc"`` or ``"pimc:worlds=16,rollout=random,time=0.5"`` → the search player of ``agents/pimc.py``
  (keyword arguments ``worlds``, ``rollout``, ``time_limit``, ``chunk``, ``engine`` may also be passed to
  ``load_policy``); ``"ppo+pimc"`` (also with ``":..."``) is the network-guided search: the shipped
  network chooses the ``top_k`` actions searched and plays the rollouts (``prior``, ``top_k``);
* ``"ppo"`` → the trained policy shipped with the package (``agents/pretrained/<game>.pt``, made by
  ``scripts/export_policy.py`` from the default training runs);
* ``"sb3:PATH.zip"`` → a Stable-Baselines3 ``MaskablePPO``/``PPO`` model trained on the single-agent
  wrapper, read weights-only by :func:`agents.sb3.load_sb3_policy` (nothing in the zip is unpickled);
* anything else is a checkpoint path, read by ``agents.policy.load_network_policy`` (``torch.load`` with
  ``weights_only=True``, checksum verified).

A checkpoint or SB3 model must be of ``game`` and its observation and action sizes must equal those of
``game``'s environment (with ``options``); otherwise a ``ValueError`` says what the file holds and what
was expected.

The returned object is a :class:`agents.policy.Policy` (``act(obs, mask)``, ``act_batch(obs, mask)``)
usable in the AEC env, the single-agent wrapper (``tarot_env.wrappers``), the arena, ``agents.evaluate``
and human play.
"""
from __future__ import annotations

import os
from pathlib import Path

from .baselines import BASELINES, make_baseline
from .policy import Policy
from .rollout import game_sizes  # re-exported: (observation size, number of actions) of a game

__all__ = ["PRETRAINED", "SB3_PREFIX", "game_sizes", "is_search_name", "load_policy", "named_players",
           "player_specs", "players_help", "policy_label"]

PRETRAINED = Path(__file__).resolve().parent / "pretrained"  # policies shipped with the package
SB3_PREFIX = "sb3:"

# What each baseline is, for help texts (a baseline without an entry is described generically).
_BASELINE_DOC = {"random": "uniform among the legal actions", "heuristic": "the rule-based club player"}


def _baseline(name: str):
    return lambda game, options, seed, greedy: make_baseline(name, game, seed)


def _pretrained(game: str, options: dict | None, seed: int | None, greedy: bool) -> Policy:
    return _checkpoint(PRETRAINED / f"{game}.pt", game, options, seed, greedy)


def named_players() -> dict[str, tuple[str, object]]:
    """Players by name: ``{name: (what it is, factory(game, options, seed, greedy) -> Policy)}``.

    Every baseline of ``agents.baselines.BASELINES``, then ``ppo``. A new named player is one entry
    here (or one baseline there); :func:`load_policy`, :func:`player_specs` and so every help text and
    error follow.
    """
    players = {n: (_BASELINE_DOC.get(n, "a baseline of agents/baselines.py"), _baseline(n)) for n in BASELINES}
    players["ppo"] = ("the shipped PPO policy agents/pretrained/<game>.pt", _pretrained)
    return players


def player_specs() -> list[tuple[str, str]]:
    """``(spec, what it is)`` for every kind of player :func:`load_policy` accepts."""
    rows = [(n, what) for n, (what, _) in named_players().items()]
    rows += [("pimc[:worlds=N,rollout=R,time=S]", "the PIMC search player of agents/pimc.py"),
             ("ppo+pimc[:worlds=N,top_k=K]", "PIMC guided by the shipped network (prior and rollouts)"),
             ("PATH.pt", "a tarocchini-ppo checkpoint or exported policy"),
             (f"{SB3_PREFIX}PATH.zip", "a Stable-Baselines3 MaskablePPO/PPO model (weights only)")]
    return rows


def players_help() -> str:
    """One line naming every player spec, e.g. ``random, heuristic, ppo, PATH.pt, sb3:PATH.zip``."""
    return ", ".join(spec for spec, _ in player_specs())


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
    named = named_players()
    if is_search_name(name):
        from .pimc import PIMCPolicy, parse_pimc_name

        kw = parse_pimc_name(name)
        kw.update(search)
        return PIMCPolicy(game, seed=seed, **kw)
    if search:
        raise ValueError(f"options {sorted(search)} are for the 'pimc' player, not for {name!r}")
    if name in named:
        return named[name][1](game, options, seed, greedy)
    if name.startswith(SB3_PREFIX):
        from .sb3 import load_sb3_policy

        return load_sb3_policy(name[len(SB3_PREFIX):], game, options=options, seed=seed, greedy=greedy)
    if not Path(name).is_file():
        raise ValueError(f"{name!r} is not a player: neither a baseline nor an existing file; players are "
                         f"{players_help()}")
    return _checkpoint(Path(name), game, options, seed, greedy)


def _checkpoint(path: Path, game: str, options: dict | None, seed: int | None, greedy: bool) -> Policy:
    """A checkpoint's network for ``game``, after checking its game and its sizes against the env's."""
    import tarot_env

    from .policy import load_checkpoint, load_network_policy

    name = str(path)
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
    pol = load_network_policy(path, game, greedy=greedy, seed=seed)
    pol.name = path.stem
    return pol


def policy_label(path_or_name: str) -> str:
    """A short display name: the baseline name, or the file's parent folder / stem (``sb3:`` kept)."""
    s = str(path_or_name)
    if s in named_players() or is_search_name(s):
        return s
    prefix = SB3_PREFIX if s.startswith(SB3_PREFIX) else ""
    p = Path(s[len(prefix):])
    return prefix + (f"{p.parent.name}/{p.stem}" if p.parent.name else p.stem)
