"""Bad input is refused up front with a message that names it (issue #35, items 4 and 5): malformed actions in
the single-agent wrapper, seeds, sizes that cannot fit in memory; numpy scalars are taken as the Python values
they hold."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pettingzoo
import pytest

import tarot_env
from tarot_env.config import EnvConfig, make_config
from tarot_env.wrappers import SingleAgentEnv

MALFORMED = [57, -1, 1.5, 3.0, float("inf"), True, np.bool_(False), "3", np.array([1, 2])]


@pytest.mark.parametrize("illegal_action", ["terminate", "raise"])
@pytest.mark.parametrize("action", MALFORMED, ids=repr)
def test_the_wrapper_raises_on_a_malformed_action_whatever_illegal_action_says(action, illegal_action):
    env = SingleAgentEnv("partita", illegal_action=illegal_action)
    env.reset(seed=0)
    before = env.game.to_dict()
    with pytest.raises(ValueError, match=r"action"):
        env.step(action)
    assert env.game.to_dict() == before  # nothing changed: the same game goes on
    legal = int(np.flatnonzero(env.action_masks())[0])
    env.step(np.int64(legal))  # numpy integers and 0-d integer arrays are well formed
    env.step(np.array(int(np.flatnonzero(env.action_masks())[0])))


def test_a_well_formed_illegal_action_still_follows_illegal_action():
    env = SingleAgentEnv("partita")  # illegal_action="terminate" by default in the wrapper
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    _, reward, terminated, _, _ = env.step(illegal)
    assert terminated and reward == -1.0


BAD_SEEDS = [(-1, "got -1"), (1.5, "got 1.5"), (True, "not a bool"), (np.bool_(True), "not a bool"), ("7", "got '7'")]


@pytest.mark.parametrize("seed,why", BAD_SEEDS, ids=repr)
def test_every_bad_seed_is_named_as_a_seed(seed, why):
    env = pettingzoo.make("aec", "tarocchini/partita-v1")
    venv = tarot_env.make_vec("partita", 2, seed=0)
    for call in (lambda: env.reset(seed=seed), lambda: SingleAgentEnv("partita").reset(seed=seed),
                 lambda: tarot_env.make_vec("partita", 2, seed=seed), lambda: venv.reset(seed=seed)):
        with pytest.raises(ValueError, match=r"^seed must be an integer >= 0 or None") as e:
            call()
        assert why in str(e.value)


def test_numpy_integer_seeds_are_the_python_seed():
    a = pettingzoo.make("aec", "tarocchini/partita-v1")
    b = pettingzoo.make("aec", "tarocchini/partita-v1")
    a.reset(seed=np.int64(5))
    b.reset(seed=5)
    assert a.unwrapped.game.to_dict() == b.unwrapped.game.to_dict()


def test_numpy_scalars_are_accepted_as_option_values():
    Ottocento = tarot_env.game_info("ottocento").rules_class().Config
    Millone = tarot_env.game_info("millone").rules_class().Config
    assert make_config(Ottocento, {"target_score": np.int64(800)}) == make_config(Ottocento, {"target_score": 800})
    assert make_config(Millone, {"moors_double_count": np.bool_(True)}).moors_double_count is True
    assert make_config(EnvConfig, {"reward_scale": np.float32(2.0), "reward": np.str_("game")}) == \
        make_config(EnvConfig, {"reward_scale": 2.0, "reward": "game"})
    assert type(Ottocento(target_score=np.int64(400)).target_score) is int  # also built directly
    with pytest.raises(ValueError, match="has the wrong type"):
        make_config(Ottocento, {"target_score": np.float64(800.5)})  # a float is still not an int


def test_an_env_built_with_numpy_options_plays_the_same_game():
    a = pettingzoo.make("aec", "tarocchini/partita-v1", deals_per_game=np.int64(1), reward_scale=np.float64(40))
    b = pettingzoo.make("aec", "tarocchini/partita-v1", deals_per_game=1, reward_scale=40.0)
    a.reset(seed=3)
    b.reset(seed=3)
    assert a.unwrapped.game.to_dict() == b.unwrapped.game.to_dict()


@pytest.mark.skipif(not Path("/proc/meminfo").is_file(), reason="this machine does not tell its memory")
def test_make_vec_refuses_rows_that_cannot_fit_before_allocating_anything():
    with pytest.raises(ValueError, match=r"make_vec\('millone', 100,000,000\) needs at least [\d,.]+ GiB of "
                                         r"memory, more than the [\d,.]+ GiB available"):
        tarot_env.make_vec("millone", 10**8)
    assert tarot_env.make_vec("partita", np.int64(2), seed=np.int64(1)).num_envs == 2


def test_a_sparse_rollout_is_bounded_by_its_slots_not_by_the_dense_observation(monkeypatch):
    """The trainer's up-front memory check (``agents.training.ppo.check_memory``) counts what the buffer stores: on the
    CPU the batched engine's sparse rows (``sparse_width`` int32 columns and float32 values a row), not the
    dense float32 observation, so a rollout that fits as sparse rows is not refused."""
    import tarot_env.checks as checks
    from agents.spec import make_spec
    from agents.training.ppo import Args, check_memory

    spec = make_spec("ottocento")
    args = Args(game="ottocento", num_envs=1000, num_steps=100)
    width = spec.Game.sparse_width(spec.game_config)
    rows = 1000 * (100 + 4)
    dense, sparse = rows * (4 * spec.obs_size + spec.num_actions), rows * (8 * width + 4 + spec.num_actions)
    assert sparse < dense
    monkeypatch.setattr(checks, "available_bytes", lambda: (dense + sparse) // 2)
    check_memory(args, spec, width)
    with pytest.raises(ValueError, match=r"a rollout of num_envs=1,000 x num_steps=100 needs at least"):
        check_memory(args, spec)
