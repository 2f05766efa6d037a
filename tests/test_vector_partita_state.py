"""The compiled Partita engine's state (``tarot_env.vector.partita.State``): a checkpoint taken with
``get_state`` and restored with ``set_state`` continues the same games, step for step, and a
``state(out=...)`` buffer of the wrong kind is refused."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from aec_helpers import random_actions
from tarot_env.vector import make_vec


def restore(engine, saved: dict) -> None:
    """What a trainer's decoder does (agents.training.rollout): arrays written into the current ones in place
    where shape and dtype agree (views into them stay valid), the rest handed over as they are."""
    def into(cur, v):
        if isinstance(v, np.ndarray) and isinstance(cur, np.ndarray) and cur.shape == v.shape \
                and cur.dtype == v.dtype:
            cur[...] = v
            return cur
        if isinstance(v, dict) and isinstance(cur, dict):
            return {k: into(cur.get(k), x) for k, x in v.items()}
        return v
    current = engine.get_state()
    assert current.keys() == saved.keys()
    engine.set_state({k: into(current[k], v) for k, v in saved.items()})


@pytest.mark.parametrize("opts", [{}, {"partita_signals": "bolognese3", "deals_per_game": 1}])
def test_set_state_of_a_copy_continues_the_same_games(opts):
    a = make_vec("partita", 8, seed=3, **opts)
    out = a.reset()
    rng = np.random.default_rng(0)
    for _ in range(130):  # past a deal's end (and, with one deal a game, new games)
        out = a.step(random_actions(out.mask, rng))
    b = make_vec("partita", 8, seed=99, **opts)  # other games, until the state is restored
    b.reset()
    restore(b, copy.deepcopy(a.get_state()))
    assert np.array_equal(b.sets, a.sets) and np.array_equal(b.table, a.table) and np.array_equal(b.state(), a.state())
    for _ in range(300):
        act = random_actions(out.mask, rng)
        out, ob = a.step(act), b.step(act)
        for f in ("seat", "obs", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(out, f), getattr(ob, f)), f
        for r in np.flatnonzero(out.done):
            assert a.final_info(r) == b.final_info(r)


def test_state_into_a_wrong_buffer_raises_and_a_right_one_is_filled():
    v = make_vec("partita", 3, seed=0)
    v.reset()
    with pytest.raises(ValueError, match=r"float32 array of shape \(3, 1358\)"):
        v.state(out=np.zeros((3, 5), dtype=np.float32))
    with pytest.raises(ValueError, match="float32"):
        v.state(out=np.zeros((3, 1358), dtype=np.float64))
    buf = np.full((3, 1358), 7.0, dtype=np.float32)
    assert v.state(out=buf) is buf and np.array_equal(buf, v.state())
