"""The players, training and evaluation of tarocchini-rl (docs/architecture.md: the packages and their layers).

``agents.players`` (the network, baselines, heuristic, PIMC search, SB3 models, ``registry.load_policy``),
``agents.evaluation`` (duplicate deals, the arena), ``agents.training`` (PPO, the collectors, distillation,
expert iteration), ``agents.play`` (terminal play); ``agents.spec`` (a game as they see it) and
``agents.names`` are leaves, ``agents.cli``/``agents.parsers`` the console scripts.

The two entry points most callers want are offered here, imported on first use, so that ``import agents``
(and a console script's ``--help``) imports neither torch nor numba:

* ``agents.load_policy(spec, game)`` is :func:`agents.players.registry.load_policy` (any player spec);
* ``agents.train(args)`` is :func:`agents.training.ppo.train` (the PPO trainer).
"""
_LAZY = {"load_policy": "agents.players.registry", "train": "agents.training.ppo"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    """``agents.load_policy`` / ``agents.train``, imported from their modules on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'agents' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
