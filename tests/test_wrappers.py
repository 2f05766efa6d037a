"""The single-agent Gymnasium wrapper: env_checker, masks, rewards, seats/teams, masked-PPO smoke runs."""
from __future__ import annotations

import importlib.util
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agents.baselines import HeuristicPolicy
from tarot_env.wrappers import GYM_IDS, SingleAgentEnv

CASES = [("partita", {"deals_per_game": 1}), ("ottocento", {"episode": "deal"}), ("millone", {"episode": "deal"})]


def run_episode(env, seed, pick=lambda m, rng: int(np.flatnonzero(m)[0])):
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    total, steps, seats = 0.0, 0, set()
    while True:
        m = env.action_masks()
        assert m.dtype == bool and m.any() and (m == info["action_mask"]).all()
        assert env.observation_space.contains(obs)
        seats.add(info["seat"])
        obs, r, term, trunc, info = env.step(pick(m, rng))
        total += r
        steps += 1
        if term or trunc:
            return total, steps, seats, info


@pytest.mark.parametrize("game,opts", CASES)
def test_gymnasium_env_checker_passes(game, opts):
    env = SingleAgentEnv(game, opponents=HeuristicPolicy(game), seat=1, **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unbounded score section of the Box is intended
        check_env(env, skip_render_check=True)


@pytest.mark.parametrize("game,opts", CASES)
def test_learner_reward_is_its_side_score_margin_and_masks_are_the_legal_actions(game, opts):
    env = SingleAgentEnv(game, opponents=HeuristicPolicy(game), seat=1, **opts)
    total, steps, seats, info = run_episode(env, seed=3)
    assert seats == {1} and steps > 5
    scale = env.aec.env_config.reward_scale
    assert total == pytest.approx(info["score_margin"] / scale)
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_team_mode_plays_both_partner_seats_and_seat_random_varies():
    env = SingleAgentEnv("partita", opponents=HeuristicPolicy("partita"), seat=0, team=True, deals_per_game=1)
    _, _, seats, _ = run_episode(env, seed=0)
    assert seats == {0, 2}
    env = SingleAgentEnv("partita", seat="random", deals_per_game=1)
    got = {env.reset(seed=s)[1]["seat"] for s in range(12)}
    assert len(got) > 1


def test_reset_with_a_seed_reproduces_the_episode():
    env = SingleAgentEnv("millone", episode="deal")  # opponents: the env's own seeded random play
    pick = lambda m, rng: int(rng.choice(np.flatnonzero(m)))  # noqa: E731
    a = run_episode(env, 9, pick)
    b = run_episode(env, 9, pick)
    assert a[0] == b[0] and a[1] == b[1]


def test_opponents_as_list_dict_or_callable_and_bad_arguments():
    first = lambda o, m: int(np.flatnonzero(m)[0])  # noqa: E731
    h = HeuristicPolicy("partita")
    for opp in ([None, first, h, first], {1: h, 2: first, 3: None}, first):
        env = SingleAgentEnv("partita", opponents=opp, seat=0, deals_per_game=1)
        run_episode(env, 1)
    with pytest.raises(ValueError, match="seat must be"):
        SingleAgentEnv("partita", seat=4)
    with pytest.raises(ValueError, match="one entry per seat"):
        SingleAgentEnv("partita", opponents=[h, h])
    with pytest.raises(ValueError, match="unknown game"):
        SingleAgentEnv("bridge")
    with pytest.raises(ValueError, match="unknown option"):
        SingleAgentEnv("partita", deals=2)


def test_illegal_action_ends_the_episode_with_the_illegal_reward_or_raises_on_request():
    env = SingleAgentEnv("partita", deals_per_game=1)
    env.reset(seed=0)
    bad = int(np.flatnonzero(~env.action_masks())[0])
    _, r, term, _, _ = env.step(bad)
    assert term and r == -1.0
    env = SingleAgentEnv("partita", deals_per_game=1, illegal_action="raise")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="illegal action"):
        env.step(int(np.flatnonzero(~env.action_masks())[0]))


def test_registered_gymnasium_ids():
    env = gymnasium.make(GYM_IDS["partita"], deals_per_game=1, disable_env_checker=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == (1034,) and env.unwrapped.action_masks().any()


def test_masked_reinforce_smoke_loop_uses_action_masks():
    """A tiny masked REINFORCE (numpy, linear softmax) trains through action_masks() only."""
    env = SingleAgentEnv("partita", opponents=None, seat=0, deals_per_game=1)
    rng = np.random.default_rng(0)
    W = np.zeros((env.observation_space.shape[0], env.action_space.n))
    returns = []
    for ep in range(6):
        obs, _ = env.reset(seed=ep)
        grads, total = [], 0.0
        while True:
            m = env.action_masks()
            logits = np.where(m, obs @ W, -np.inf)
            p = np.exp(logits - logits.max())
            p /= p.sum()
            a = int(rng.choice(len(p), p=p))
            assert m[a]
            g = -p
            g[a] += 1.0
            grads.append(np.outer(obs, g))
            obs, r, term, trunc, _ = env.step(a)
            total += r
            if term or trunc:
                break
        W += 0.01 * total * sum(grads)
        returns.append(total)
    assert np.isfinite(W).all() and len(returns) == 6


@pytest.mark.skipif(importlib.util.find_spec("sb3_contrib") is None, reason="sb3-contrib not installed (extra 'sb3')")
def test_maskable_ppo_trains_on_the_wrapper_unchanged():
    from sb3_contrib import MaskablePPO

    env = SingleAgentEnv("partita", opponents=HeuristicPolicy("partita"), seat=0, deals_per_game=1)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [32]})
    model.learn(total_timesteps=128)
    obs, _ = env.reset(seed=1)
    a, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(a)]
