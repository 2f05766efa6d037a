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
            full = venv.final_info(b)  # the full record; each AEC seat gets its own view of it (RULES.md H)
            seen = full["last_result"] and e.unwrapped.game.result_view(full["last_result"], 0)
            assert info == dict(full, last_result=seen), f"row {b} t {t}"
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


def random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of a batched engine's ``[B, A]`` mask."""
    return (rng.random(mask.shape) * mask).argmax(1)


def assert_acting_row_is_the_aec_env(b: int, out, env) -> None:
    """Row ``b`` of a batched step ``out`` names the AEC env's acting seat, with its observation and mask."""
    agent = env.agent_selection
    assert out.seat[b] == env.agent_name_mapping[agent], f"row {b}"
    ob = env.observe(agent)
    assert ob["observation"].dtype == out.obs.dtype == np.float32
    assert np.array_equal(ob["observation"], out.obs[b]), (
        f"row {b}: observation differs at {np.flatnonzero(ob['observation'] != out.obs[b])}")
    assert np.array_equal(ob["action_mask"].astype(bool), out.mask[b]), f"row {b}: mask"


def vec_trace(game: str, num_envs: int, seed: int, steps: int, **opts) -> list:
    """The batched steps of ``make_vec(game, num_envs, seed)`` under seeded random play (copied outputs)."""
    from tarot_env.vector import make_vec

    venv = make_vec(game, num_envs, seed=seed, copy_outputs=True, **opts)
    out = venv.reset()
    rng = np.random.default_rng(0)
    trace = [out]
    for _ in range(steps):
        out = venv.step(random_actions(out.mask, rng))
        trace.append(out)
    return trace


def row_arrays(rows, b: int | None = None) -> dict[str, np.ndarray]:
    """A game's whole state as its rows' arrays (``Rows.arrays()``: the card sets, cells, seats, scores, logs and
    random streams), copied; ``b``: row ``b`` only. Two states are the same game exactly when these are equal."""
    return {k: np.array(v if b is None else v[b]) for k, v in rows.arrays().items()}


def same_arrays(x: dict[str, np.ndarray], y: dict[str, np.ndarray]) -> bool:
    """Two :func:`row_arrays` dicts hold the same arrays."""
    return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
