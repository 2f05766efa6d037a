"""Bad input to the AEC environments and the batched engines, for every game of ``tarot_env.ENV_IDS``.

Each bad call raises a ``TypeError``/``ValueError`` whose message says what is wrong and what would
be right, and changes nothing: every agent's observation, the env's bookkeeping and the rules object
(``game.to_dict()``) are the same afterwards, and the game goes on exactly as a twin that never saw
the bad call. Under ``illegal_action="terminate"`` a bad action instead ends the game for the
offender with ``illegal_reward``, as PettingZoo's classic environments do.
"""
from __future__ import annotations

import json
import random

import numpy as np
import pettingzoo
import pytest

import tarot_env
from aec_helpers import play_random
from tarot_env.envs.base import ActionTypeError

GAMES = sorted(tarot_env.ENV_IDS)


def new_env(game: str, seed: int = 0, **options):
    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game], render_mode="ansi", **options)
    env.reset(seed=seed)
    return env


def snapshot(env) -> str:
    """Everything a bad call must leave alone: observations and masks of every agent, the env's
    bookkeeping, and the rules object."""
    return json.dumps({
        "obs": {a: {k: v.tolist() for k, v in env.observe(a).items()} for a in env.agents},
        "agents": env.agents, "selection": env.agent_selection,
        "rewards": env.rewards, "cumulative": env._cumulative_rewards,
        "terminations": env.terminations, "truncations": env.truncations, "infos": env.infos,
        "game": env.unwrapped.game.to_dict(),
    }, default=repr)


def legal_action(env) -> int:
    return int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0])


# (action, message fragment); a legal action is put in by the test where the value matters
NOT_AN_ID = [
    (float("inf"), "action inf (float) is not an integer action id"),
    (float("-inf"), "action -inf (float) is not an integer action id"),
    (float("nan"), "action nan (float) is not an integer action id"),
    (1.5, "action 1.5 (float) is not an integer action id"),
    ("3", "parse_action(name)"),
    (None, "None only removes an agent whose game has ended"),
    (np.array([3]), "an array of shape (1,) is not one action id"),
    ([3], "action [3] (list) is not an integer action id"),
]


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("action,fragment", NOT_AN_ID, ids=[repr(a) for a, _ in NOT_AN_ID])
def test_a_non_integer_action_is_a_type_error_naming_it_and_the_legal_ones_and_changes_nothing(
        game, action, fragment):
    env, twin = new_env(game), new_env(game)
    before = snapshot(env)
    with pytest.raises(ActionTypeError) as e:
        env.step(action)
    assert isinstance(e.value, TypeError) and isinstance(e.value, ValueError)
    msg = str(e.value)
    assert fragment in msg and "pass an int or numpy integer 0.." in msg
    assert f"legal now: {env.unwrapped.game.describe_legal()}" in msg
    assert snapshot(env) == before
    a = legal_action(env)
    env.step(a), twin.step(a)
    assert snapshot(env) == snapshot(twin)


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("kind", ["float", "numpy float64", "numpy float32", "bool", "numpy bool",
                                  "0-d bool array"])
def test_a_legal_id_given_as_a_float_or_a_bool_is_refused(game, kind):
    """``True`` is not taken for action 1, nor ``3.0`` for action 3, even when that action is legal."""
    env = new_env(game)
    a = legal_action(env)
    action = {"float": float(a), "numpy float64": np.float64(a), "numpy float32": np.float32(a),
              "bool": True, "numpy bool": np.bool_(True), "0-d bool array": np.array(True)}[kind]
    before = snapshot(env)
    with pytest.raises(TypeError) as e:
        env.step(action)
    assert ("is a bool; an action is an integer id" if "bool" in kind
            else "is not an integer action id") in str(e.value)
    assert snapshot(env) == before


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("kind", [int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64,
                                  np.intp, "0-d array"])
def test_python_and_numpy_integers_are_accepted_as_the_same_action(game, kind):
    env, twin = new_env(game), new_env(game)
    a = legal_action(env)
    env.step(np.array(a) if kind == "0-d array" else kind(a))
    twin.step(a)
    assert snapshot(env) == snapshot(twin)


@pytest.mark.parametrize("game", GAMES)
def test_out_of_range_and_illegal_ids_are_value_errors_and_change_nothing(game):
    env = new_env(game)
    g = env.unwrapped.game
    before = snapshot(env)
    A = g.num_actions
    for a in (A, -1, 10**30):
        with pytest.raises(ValueError, match=f"out of range for {game}: ids are 0..{A - 1}; legal now: "):
            env.step(a)
    bad = int(np.flatnonzero(~g.legal_mask())[0])
    with pytest.raises(ValueError, match=rf"illegal action {bad} \(.*legal now: "):
        env.step(bad)
    assert snapshot(env) == before


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("action", [float("inf"), float("nan"), 1.5, "3", True, np.bool_(True), None, 10**30],
                         ids=repr)
def test_terminate_option_ends_the_game_for_the_offender_on_any_bad_action(game, action):
    env = new_env(game, illegal_action="terminate", illegal_reward=-3.0)
    offender = env.agent_selection
    env.step(action)  # no exception
    assert all(env.terminations.values())
    assert env._cumulative_rewards == {a: (-3.0 if a == offender else 0.0) for a in env.agents}
    assert env.infos[offender] == {"illegal_action": repr(action), "offender": offender}


@pytest.mark.parametrize("game", GAMES)
def test_after_the_episode_ended_an_agent_is_removed_with_None_and_anything_else_is_refused(game):
    env = new_env(game, seed=1, episode="deal")  # one deal (hand) per episode: a short game
    for _ in play_random(env, None, random.Random(1)):
        pass
    # play_random stepped every ended agent with None (PettingZoo's convention): all removed
    assert env.agents == []
    before = snapshot(env)
    for call in (lambda: env.step(0), lambda: env.step(None), lambda: env.last()):
        with pytest.raises(ValueError, match=r"after the episode ended: every agent has been removed "
                                             r"\(env.agents is empty\); call env.reset\(\)"):
            call()
    assert snapshot(env) == before
    env.reset()  # and the next episode starts
    assert env.agents == env.possible_agents


@pytest.mark.parametrize("game", GAMES)
def test_an_ended_agent_stepped_with_an_action_instead_of_None_is_refused(game):
    env = new_env(game, illegal_action="terminate")
    env.step(-1)  # ends the game at once
    agent = env.agent_selection
    before = snapshot(env)
    with pytest.raises(ValueError, match=f"{agent} has ended \\(terminated\\): step it with None to remove it"):
        env.step(legal_action(new_env(game)))
    assert snapshot(env) == before
    env.step(None)
    assert agent not in env.agents


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("method", ["step", "last", "observe", "state", "render"])
def test_calls_before_reset_say_to_call_reset(game, method):
    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game], render_mode="ansi")
    call = {"step": lambda: env.step(0), "last": env.last, "observe": lambda: env.observe("player_0"),
            "state": env.state, "render": env.render}[method]
    with pytest.raises(ValueError, match=rf"{method}\(\) called before reset\(\): call env.reset\(\)"):
        call()
    assert env.unwrapped.game is None
    env.reset(seed=0)  # works afterwards
    assert env.agent_selection in env.agents


@pytest.mark.parametrize("game", GAMES)
def test_observe_of_an_unknown_agent_names_the_agents(game):
    env = new_env(game)
    with pytest.raises(ValueError, match=r"unknown agent 'player_9'; the agents are \['player_0'"):
        env.observe("player_9")


# --- the batched engines -------------------------------------------------------------------------------
@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("num_envs", [True, np.bool_(True), 2.0, "4", None, 0, -3], ids=repr)
def test_make_vec_refuses_a_num_envs_that_is_not_a_positive_integer(game, num_envs):
    with pytest.raises(ValueError, match=r"num_envs must be a positive integer \(the number of games, "
                                         r"e.g. 1024\); got "):
        tarot_env.make_vec(game, num_envs=num_envs)


@pytest.mark.parametrize("game", GAMES)
def test_make_vec_accepts_numpy_integers_and_refuses_a_game_that_is_not_a_name(game):
    assert tarot_env.make_vec(game, num_envs=np.int64(2)).num_envs == 2
    with pytest.raises(TypeError, match="game must be a game name"):
        tarot_env.make_vec(None, 2)


def vec_snapshot(v, out) -> list:
    return [out.seat.copy(), out.obs.copy(), out.mask.copy(), out.rewards.copy(), v.state().copy()]


@pytest.mark.parametrize("game", GAMES)
def test_batched_step_refuses_bad_action_arrays_and_changes_nothing(game):
    B = 3
    v, twin = tarot_env.make_vec(game, B, seed=0), tarot_env.make_vec(game, B, seed=0)
    out = v.reset()
    twin.reset()
    acts = out.mask.argmax(1)  # the first legal action of every row
    before = vec_snapshot(v, out)
    A = v.num_actions
    half = acts.astype(np.float64)
    half[1] += 0.5
    cases = [
        (acts[:2], ValueError, rf"actions must have shape \({B},\), one integer action id per game; got shape \(2,\)"),
        (acts[None], ValueError, rf"got shape \(1, {B}\)"),
        (half, ValueError, rf"integer action ids 0..{A - 1}; got dtype float64 with non-integer values \(row 1: "),
        (np.full(B, np.nan), ValueError, r"non-integer values \(row 0: nan\)"),
        (np.ones(B, dtype=bool), TypeError, "not bools"),
        ([True] + acts[1:].tolist(), TypeError, "not bools"),
        (acts.astype(str), TypeError, rf"integer action ids 0..{A - 1}; got dtype <U"),
    ]
    for bad, err, fragment in cases:
        with pytest.raises(err, match=fragment):
            v.step(bad)
        assert all(np.array_equal(x, y) for x, y in zip(vec_snapshot(v, out), before))
    # integer-valued floats are taken as their integers; the game goes on as the twin's
    o1, o2 = v.step(acts.astype(np.float64)), twin.step(acts)
    assert all(np.array_equal(x, y) for x, y in zip(vec_snapshot(v, o1), vec_snapshot(twin, o2)))


@pytest.mark.parametrize("game", GAMES)
def test_batched_step_before_reset_says_to_call_reset(game):
    v = tarot_env.make_vec(game, 2, seed=0)
    with pytest.raises(ValueError, match=r"step\(\) called before reset\(\): call reset\(\) first"):
        v.step(np.zeros(2, dtype=np.int64))
