"""Compile a game's rules kernels ahead of use: ``python -m tarot_env.warm [game ...]`` (issue #33).

:func:`warm_game` plays a little of a game through every path that compiles kernels (the AEC env over
:data:`AEC_OPTIONS`, the batched engine in every observation format, the sampler of worlds), so that what
comes next loads them from the cache (``tarot_env/_numba_cache.py``). Games may warm in parallel processes
(numba writes each cache entry atomically), as ``tests/conftest.py`` does. Nothing here checks a result.
"""
from __future__ import annotations

import sys

import numpy as np

# option sets whose kernels or code paths the default options do not reach (golden tests' CASES: the signals,
# the a monte question asked of everyone, games of one deal, deal episodes)
AEC_OPTIONS: dict[str, list[dict]] = {
    "partita": [{}, {"partita_signals": "bolognese3", "deals_per_game": 1}],
    "millone": [{}, {"max_hands": 1}],
    "ottocento": [{}, {"episode": "deal", "ott_signal_players": "all", "a_monte": "ask_all"}],
}
VEC_ROWS, VEC_STEPS = 8, 400


def _aec_game(game: str, options: dict, seed: int, sample: bool = False) -> None:
    """One seeded AEC game of random legal actions, every seat observed at every step (``sample``: and
    worlds drawn for the seat to act every 7th step, ``tarot_env.sampler``)."""
    import pettingzoo

    import tarot_env

    from .sampler import sample_worlds

    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game], **options)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for t, agent in enumerate(env.agent_iter(max_iter=100_000)):
        obs, _, term, trunc, _ = env.last()
        for a in env.agents:
            env.observe(a)
        env.state()
        if sample and not (term or trunc) and t % 7 == 0:
            sample_worlds(env, agent, 4, rng)
        action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)


def _vec_run(game: str, options: dict, seed: int) -> None:
    """A seeded batched run of random legal actions."""
    from .vector import make_vec

    venv = make_vec(game, VEC_ROWS, seed=seed, **options)
    out = venv.reset()
    rng = np.random.default_rng(seed)
    for _ in range(VEC_STEPS):
        mask = np.asarray(out.mask)
        out = venv.step((rng.random(mask.shape) * mask).argmax(1))
        for b in np.flatnonzero(out.done):
            venv.final_info(int(b))
    venv.state()
    venv.set_state(venv.get_state())
    _ = venv.m.obs  # the engine's read-back views for the tests (every seat's observation)


def warm_game(game: str) -> None:
    """Compile (or load from the cache) ``game``'s kernels by playing a little of it (module docstring)."""
    for i, options in enumerate(AEC_OPTIONS[game]):
        _aec_game(game, options, seed=i, sample=i == 0)  # (the sampler draws worlds of the default options)
        for fmt in ({"obs_format": "dense"}, {"obs_format": "sparse"}, {"observe": False}):
            _vec_run(game, {**options, **fmt}, seed=i)


def main(argv: list[str] | None = None) -> int:
    import tarot_env

    games = (sys.argv[1:] if argv is None else argv) or list(tarot_env.GAMES)
    for game in games:
        warm_game(tarot_env.game_key(game))
    return 0


if __name__ == "__main__":
    sys.exit(main())
