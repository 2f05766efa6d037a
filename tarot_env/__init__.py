"""tarocchini-rl: PettingZoo environments for the Italian tarot games Partita, Ottocento and Millone.

Importing the package registers the environments in PettingZoo's registry::

    import pettingzoo, tarot_env
    env = pettingzoo.make("aec", "tarocchini/partita-v1")

Games. ``GAMES`` (``tarot_env.games``) is the one table of the games; every other list derives from it.

Versions. ``ENV_IDS`` maps each game to its current id (``tarocchini/<game>-v<N>``), ``ENV_VERSIONS`` to its
version (``"v1"``: what a trained checkpoint stores, so that a policy never runs on an observation layout it
was not trained for; the changes are each env module's "Version history"). Asking for a removed version
(``pettingzoo.make``, ``make_vec``, ``SingleAgentEnv``) raises an error that names the current id.
"""
from __future__ import annotations

from ._numba_cache import configure as _configure_numba_cache

NUMBA_CACHE_DIR = _configure_numba_cache()  # before any compiled kernel is defined (tarot_env/_numba_cache.py)

import pettingzoo  # noqa: E402

from .cards import BOLOGNESE, FRENCH54  # noqa: E402
from .config import EnvConfig, make_config  # noqa: E402
from .games import GAMES, GameInfo  # noqa: E402

__version__ = "0.1.0"

# Derived from the one table of the games (tarot_env/games.py, where versions are bumped).
ENV_IDS = {game: g.env_id for game, g in GAMES.items()}  # {"partita": "tarocchini/partita-v1", ...}
ENV_VERSIONS = {game: g.version for game, g in GAMES.items()}  # {"partita": "v1", ...}
# ids of earlier versions -> the current id (an environment keeps one registered version)
REMOVED_ENV_IDS = {
    f"tarocchini/{game}-v{n}": env_id
    for game, env_id in ENV_IDS.items() for n in range(int(ENV_VERSIONS[game][1:]))
}


def __getattr__(name: str):
    """``tarot_env.make_vec`` (the batched engines, ``tarot_env.vector``) is imported on first use, so that
    importing the package imports no numba kernel (the command lines' ``--help`` answers at once)."""
    if name == "make_vec":
        from .vector import make_vec

        return make_vec
    raise AttributeError(f"module 'tarot_env' has no attribute {name!r}")


def removed_version_error(env_id: str) -> ValueError:
    """The error for an id in ``REMOVED_ENV_IDS``: it names the current id and where the changes are."""
    current = REMOVED_ENV_IDS[env_id]
    game = current.split("/")[1].rsplit("-", 1)[0]
    return ValueError(
        f"{env_id!r} is a removed version of the {game} environment; the current one is {current!r} "
        f"(see 'Version history' in tarot_env/envs/{game}.py). A policy trained on the old version "
        f"needs migrating (scripts/migrate_policy.py) or retraining.")


def game_key(name: str) -> str:
    """The game (``"partita"``, ...) of a game name or a current env id; ``ValueError`` for a removed
    version (naming the current id) or an unknown name."""
    if name in ENV_IDS:
        return name
    for game, env_id in ENV_IDS.items():
        if name == env_id:
            return game
    if name in REMOVED_ENV_IDS:
        raise removed_version_error(name)
    raise ValueError(f"unknown game {name!r}; games are {sorted(ENV_IDS)} (or their ids "
                     f"{sorted(ENV_IDS.values())})")


def game_info(name: str) -> GameInfo:
    """The :class:`~tarot_env.games.GameInfo` row of a game name or current env id (errors as
    :func:`game_key`)."""
    return GAMES[game_key(name)]


def _removed_env(*, removed_id: str, **kwargs):
    """Registered under each removed id: ``pettingzoo.make`` of it raises the error naming the current id."""
    raise removed_version_error(removed_id)


def _register() -> None:
    for g in GAMES.values():  # each game's wrapped AEC env factory, ``env``
        if g.env_id not in pettingzoo.aec_registry:
            pettingzoo.register("aec", g.env_id, entry_point=f"{g.env_module}:env")
    for env_id in REMOVED_ENV_IDS:  # so that make() says which id replaced it, not only "not found"
        if env_id not in pettingzoo.aec_registry:
            pettingzoo.register("aec", env_id, entry_point="tarot_env:_removed_env",
                                kwargs={"removed_id": env_id})


_register()

__all__ = ["BOLOGNESE", "FRENCH54", "ENV_IDS", "ENV_VERSIONS", "GAMES", "GameInfo", "REMOVED_ENV_IDS",
           "EnvConfig", "game_info", "game_key",
           "make_config", "make_vec", "__version__"]
