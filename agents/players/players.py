"""The players that are not a search, by spec: ``load_player(spec, game)`` for a baseline name, ``"ppo"``
(the shipped network), a checkpoint path or ``sb3:PATH.zip``.

The layer under the search player: ``agents.players.pimc`` turns its rollout and prior specs into players here,
and ``agents.players.registry.load_policy`` (the public way to get any player, the search included) hands every
spec that is not a search to :func:`load_player`. So the import graph of ``agents`` has no cycle.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..names import BASELINES

if TYPE_CHECKING:
    from .policy import Policy

# Imports nothing heavy at module level (no torch, numpy or engine): the command lines build their help
# texts from :func:`player_specs` before anything else is imported (agents/cli.py).

PRETRAINED = Path(__file__).resolve().parents[1] / "pretrained"  # policies shipped with the package
SB3_PREFIX = "sb3:"

# What each baseline is, for help texts (a baseline without an entry is described generically).
_BASELINE_DOC = {"random": "uniform among the legal actions", "heuristic": "the rule-based club player"}


def _baseline(name: str):
    def make(game: str, options: dict | None, seed: int | None, greedy: bool) -> Policy:
        from .baselines import make_baseline  # here, not above: listing the players imports no engine

        return make_baseline(name, game, seed)

    return make


def _pretrained(game: str, options: dict | None, seed: int | None, greedy: bool) -> Policy:
    return _checkpoint(PRETRAINED / f"{game}.pt", game, options, seed, greedy)


def named_players() -> dict[str, tuple[str, object]]:
    """Players by name: ``{name: (what it is, factory(game, options, seed, greedy) -> Policy)}``.

    Every baseline of ``agents.players.baselines.BASELINES``, then ``ppo``. A new named player is one entry
    here (or one baseline there); :func:`load_policy`, :func:`player_specs` and so every help text and
    error follow.
    """
    players = {n: (_BASELINE_DOC.get(n, "a baseline of agents/players/baselines.py"), _baseline(n)) for n in BASELINES}
    players["ppo"] = ("the shipped PPO policy agents/pretrained/<game>.pt", _pretrained)
    return players


def player_specs() -> list[tuple[str, str]]:
    """``(spec, what it is)`` for every kind of player :func:`load_policy` accepts."""
    rows = [(n, what) for n, (what, _) in named_players().items()]
    rows += [("pimc[:worlds=N,rollout=R,time=S]", "the PIMC search player of agents/players/pimc.py"),
             ("ppo+pimc[:worlds=N,top_k=K]", "PIMC guided by the shipped network (prior and rollouts)"),
             ("PATH.pt", "a tarocchini-ppo checkpoint or exported policy"),
             (f"{SB3_PREFIX}PATH.zip", "a Stable-Baselines3 MaskablePPO/PPO model (weights only)")]
    return rows


def players_help() -> str:
    """One line naming every player spec, e.g. ``random, heuristic, ppo, PATH.pt, sb3:PATH.zip``."""
    return ", ".join(spec for spec, _ in player_specs())


def load_player(name: str, game: str, options: dict | None = None, seed: int | None = None,
                greedy: bool = True) -> Policy:
    """The player of spec ``name`` (not a search) for ``game``: a named player (:func:`named_players`),
    ``sb3:PATH.zip`` or a checkpoint path; ``ValueError`` naming the players for anything else."""
    named = named_players()
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

    from ..spec import game_sizes
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
