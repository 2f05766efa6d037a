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


NOT_OVER = -2  # a batched engine's final_winner of an episode="deal" episode whose game goes on


def step_and_compare(venv, out, envs, actions, t: int) -> list[dict]:
    """Differential tests of the batched engines: step every row's AEC env with ``actions`` and check
    that the batched step ``out`` reported the same rewards (since each seat's last decision, and of
    this step), the same ends and the same final infos (also as the ``out.info`` arrays); reset the AEC
    envs whose episode ended, like the batched engine's automatic reset. Returns their final infos."""
    finals = []
    for b, e in enumerate(envs):
        e.step(int(actions[b]))
        agents = e.possible_agents
        assert [e._cumulative_rewards[a] for a in agents] == out.rewards[b].tolist(), f"row {b} t {t}"
        assert [e.rewards[a] for a in agents] == out.step_rewards[b].tolist(), f"row {b} t {t}"
        term, trunc = all(e.terminations.values()), all(e.truncations.values())
        assert out.done[b] == (term or trunc), f"row {b} t {t}"
        if term or trunc:
            info = e.infos[agents[0]]
            assert info == venv.final_info(b), f"row {b} t {t}"
            assert out.info["final_scores"][b].tolist() == info["scores"]
            if "truncated" in out.info:
                assert out.info["truncated"][b] == trunc
            if "final_hand_scores" in out.info:
                assert out.info["final_hand_scores"][b].tolist() == info["last_result"]["scores"]
            if "final_winner" in out.info:
                w = out.info["final_winner"][b]
                assert (None if w == NOT_OVER else w) == info["winner"]
            finals.append(info)
            e.reset()
        else:
            e.last()  # the acting agent's reward is the one reported for its seat
            assert e._cumulative_rewards[e.agent_selection] == out.rewards[b, out.seat[b]]
    return finals
