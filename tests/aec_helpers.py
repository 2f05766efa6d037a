"""Helpers shared by the environment tests."""
from __future__ import annotations

import random

import numpy as np


def play_random(env, seed: int | None, rng: random.Random):
    """Drive the AEC loop with uniformly random legal actions (``reset(seed)`` first unless ``seed``
    is None); yield ``(agent, obs, reward, info, action)`` at every decision."""
    if seed is not None:
        env.reset(seed=seed)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        a = int(legal[rng.randrange(len(legal))])
        yield agent, obs, rew, info, a
        env.step(a)
