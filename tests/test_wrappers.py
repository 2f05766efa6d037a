"""The single-agent Gymnasium wrapper: env_checker (no warnings), bounded observations, rendering, masks
through Gymnasium/SB3 wrappers, rewards, seats/teams, make_vec_env and masked-PPO smoke runs."""
from __future__ import annotations

import importlib.util
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agents.players.baselines import HeuristicPolicy
from tarot_env import ENV_IDS
from tarot_env.wrappers import GYM_IDS, SingleAgentEnv, learner_observation

HAS_SB3 = importlib.util.find_spec("sb3_contrib") is not None
needs_sb3 = pytest.mark.skipif(not HAS_SB3, reason="sb3-contrib not installed (extra 'sb3')")

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
def test_gymnasium_env_checker_passes_without_a_single_warning(game, opts, capsys):
    """check_env on the registered env, render modes included (it makes one env per render mode)."""
    env = gymnasium.make(GYM_IDS[game], opponents=HeuristicPolicy(game), seat=1, **opts).unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    assert [str(w.message) for w in caught] == []
    assert np.isfinite(env.observation_space.low).all() and np.isfinite(env.observation_space.high).all()
    assert env.metadata["render_fps"] > 0


def test_observation_is_the_game_vector_with_the_scores_squashed_into_the_bounded_box():
    env = SingleAgentEnv("partita", seat=0, deals_per_game=3)
    obs, _ = env.reset(seed=4)
    sc = env.aec.Game.OBS.scores
    done = False
    while not done:  # play the three deals: the cumulative scores grow beyond the [0, 1] of the rest
        raw = env.aec.game.observation(env.seat)
        assert np.array_equal(obs, learner_observation("partita", raw)) and env.observation_space.contains(obs)
        obs, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    raw = env.aec.game.observation(env.seat)
    assert np.abs(raw[sc]).max() > 0
    np.testing.assert_allclose(obs[sc], raw[sc] / (1 + np.abs(raw[sc])), rtol=1e-6)
    keep = np.ones(len(raw), dtype=bool)
    keep[sc] = False
    assert np.array_equal(obs[keep], raw[keep].astype(np.float32))
    batch = np.stack([raw, raw])  # the map also works on a batch (as the arena plays an SB3 model)
    assert np.array_equal(learner_observation("partita", batch)[1], obs)


def test_render_modes_text_and_rgb_array_and_a_bad_mode_is_refused():
    env = SingleAgentEnv("millone", render_mode="rgb_array", episode="deal")
    env.reset(seed=0)
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3 and img.shape[0] > 40
    assert (img < 128).any() and (img == 255).any()  # black text on white
    text = SingleAgentEnv("millone", render_mode="ansi", episode="deal")
    text.reset(seed=0)
    assert "player_0" in text.render()
    with pytest.raises(ValueError, match="render_mode 'rgb' is not supported"):
        SingleAgentEnv("millone", render_mode="rgb")


def test_reset_skips_a_game_over_before_the_learner_decides_so_the_mask_is_never_empty():
    env = SingleAgentEnv("millone", episode="deal")
    advance = env._advance
    calls = iter([(0.0, True, False), (0.0, False, True)])  # two games end before the learner's turn
    env._advance = lambda: next(calls, None) or advance()
    _, info = env.reset(seed=0)
    assert info["skipped_games"] == 2 and env.action_masks().any()
    env._advance = advance
    assert "skipped_games" not in env.reset(seed=0)[1]


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


def test_registered_gymnasium_ids_follow_the_pettingzoo_ids():
    for game, env_id in ENV_IDS.items():  # "tarocchini/partita-v1" -> "tarocchini/partita-single-v1"
        head, version = env_id.rsplit("-", 1)
        assert GYM_IDS[game] == f"{head}-single-{version}" and GYM_IDS[game] in gymnasium.registry
    env = gymnasium.make(GYM_IDS["partita"], deals_per_game=1, disable_env_checker=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == (1034,) and env.unwrapped.action_masks().any()


def test_action_masks_reach_through_gymnasium_wrappers_with_get_wrapper_attr():
    env = gymnasium.wrappers.TimeLimit(gymnasium.make(GYM_IDS["partita"], deals_per_game=1), 500)
    env.reset(seed=0)
    assert not hasattr(env, "action_masks")  # Gymnasium 1.x wrappers do not forward attributes
    mask = env.get_wrapper_attr("action_masks")()
    assert mask.any() and np.array_equal(mask, env.unwrapped.action_masks())


@needs_sb3
def test_sb3_contrib_finds_the_masks_of_a_wrapped_env():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.monitor import Monitor

    env = Monitor(gymnasium.wrappers.TimeLimit(gymnasium.make(GYM_IDS["millone"], episode="deal"), 500))
    env.reset(seed=1)
    assert is_masking_supported(env)
    assert np.array_equal(get_action_masks(env), env.unwrapped.action_masks())


@needs_sb3
def test_make_vec_env_with_four_envs_and_a_few_maskable_ppo_steps():
    """As written in docs/sb3.md: SB3 asks gymnasium.make for render_mode="rgb_array"."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(GYM_IDS["partita"], n_envs=4, seed=0)
    venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (4, 57) and masks.any(axis=1).all()
    assert all(np.array_equal(m, e.unwrapped.action_masks()) for m, e in zip(masks, venv.envs))
    frame = venv.env_method("render", indices=0)[0]
    assert frame.dtype == np.uint8 and frame.ndim == 3
    model = MaskablePPO("MlpPolicy", venv, n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [16]})
    model.learn(total_timesteps=64)
    assert model.num_timesteps >= 64
    obs = venv.reset()
    actions, _ = model.predict(obs, action_masks=get_action_masks(venv), deterministic=True)
    assert all(get_action_masks(venv)[k, a] for k, a in enumerate(actions))


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


@needs_sb3
def test_maskable_ppo_trains_on_the_wrapper_unchanged():
    from sb3_contrib import MaskablePPO

    env = SingleAgentEnv("partita", opponents=HeuristicPolicy("partita"), seat=0, deals_per_game=1)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [32]})
    model.learn(total_timesteps=128)
    obs, _ = env.reset(seed=1)
    a, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(a)]


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 1.5, "3", True, np.True_])
def test_single_agent_step_with_a_non_integer_action_raises_whatever_illegal_action_says(bad):
    """A non-integer action is never taken for an id (``True`` is not action 1, ``"3"`` not action 3) and
    ``inf`` raises no OverflowError; it is malformed, not illegal, so even under the wrapper's default
    ``illegal_action="terminate"`` it raises (issue #35: a broken action pipeline must not look like a
    weak policy) and the episode goes on."""
    env = SingleAgentEnv("partita", seat=0)
    obs, _ = env.reset(seed=3)
    with pytest.raises(ValueError, match="action must be an integer action id"):
        env.step(bad)
    assert np.array_equal(env._obs(), obs) and env.action_masks().any()  # nothing changed, not over
    raising = SingleAgentEnv("partita", seat=0, illegal_action="raise")
    obs, _ = raising.reset(seed=3)
    with pytest.raises((TypeError, ValueError)):
        raising.step(bad)
    assert np.array_equal(raising._obs(), obs)  # nothing changed
    legal = int(np.flatnonzero(raising.action_masks())[0])
    raising.step(np.int64(legal))  # numpy integers stay accepted
