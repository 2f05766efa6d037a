"""The environment contract, for every game of the table ``tarot_env.GAMES`` (docs/environments.md).

One file, parametrised over the table, so a new game is held to all of it by being added there:

* the table is what the package registers and serves (ids, env and rules classes, seats, engines);
* PettingZoo's own ``api_test`` and ``seed_test`` (pettingzoo 1.27), with the default options and with
  every optional feature on (signals, *a monte* asked of all);
* the acting player's ``action_mask`` is exactly the rules object's legal actions (and
  ``info["legal_actions"]`` names them), every other mask is zero, and every observation of every
  agent, at every step and at the end, is in ``observation_space``;
* an illegal action raises a ``ValueError`` naming it and the legal ones, anywhere in a game, and
  changes nothing;
* ``render()`` is the whole table and ``render_view(agent)`` that seat's part of it (RULES.md H.2);
* bad input to the AEC environments and the batched engines: each bad call raises a
  ``TypeError``/``ValueError`` whose message says what is wrong and what would be right, and changes
  nothing: every agent's observation, the env's bookkeeping and the rules object (``game.to_dict()``)
  are the same afterwards, and the game goes on exactly as a twin that never saw the bad call. Under
  ``illegal_action="terminate"`` a bad action instead ends the game for the offender with
  ``illegal_reward``, as PettingZoo's classic environments do.

Game-specific checks (documented sizes, phase names in messages, rewards, leaks) stay in
``tests/test_<game>_env.py``, ``tests/test_player_view.py`` and ``tests/test_rewards.py``.
"""
from __future__ import annotations

import importlib
import json
import random
import re

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, seed_test

import tarot_env
from aec_helpers import play_random
from tarot_env.envs.base import ActionTypeError
from tarot_env.games import load
from tarot_env.vector.base import VecEnv

GAMES = sorted(tarot_env.GAMES)
# every optional feature of a game on (the default options are the other case)
FEATURES = {"partita": {"partita_signals": "bolognese3"},
            "ottocento": {"ott_signal_players": "all", "a_monte": "ask_all"}}
CASES = [(g, {}) for g in GAMES] + [(g, FEATURES[g]) for g in GAMES if g in FEATURES]
CASE_IDS = [g + ("-features" if o else "") for g, o in CASES]


def env_module(game: str):
    return importlib.import_module(tarot_env.GAMES[game].env_module)


# --- the table of the games ----------------------------------------------------------------------------
@pytest.mark.parametrize("game", GAMES)
def test_the_table_row_is_what_the_package_registers_and_serves(game):
    from agents.spec import available_games
    from tarot_env.vector import _ENGINES

    row = tarot_env.GAMES[game]
    assert row.key == game and tarot_env.ENV_IDS[game] == row.env_id and tarot_env.game_info(row.env_id) is row
    assert row.env_id == f"tarocchini/{game}-{row.version}" and tarot_env.ENV_VERSIONS[game] == row.version
    mod = env_module(game)
    assert callable(mod.env) and mod.raw_env is row.env_class()
    env = pettingzoo.make("aec", row.env_id)
    assert isinstance(env.unwrapped, mod.raw_env)
    G = row.rules_class()
    assert mod.raw_env.Game is G and G.name == game and G.num_players == row.players
    assert env.possible_agents == [f"player_{i}" for i in range(row.players)]
    assert _ENGINES[game] == row.engines and row.engines["loop"] == "tarot_env.vector.loop:LoopVecEnv"
    if row.vector:
        engine = load(row.vector)
        assert issubclass(engine, VecEnv)
    assert game in available_games() and row.description


# --- PettingZoo's own tests ----------------------------------------------------------------------------
@pytest.mark.parametrize("game,options", CASES, ids=CASE_IDS)
def test_pettingzoo_api_test(game, options):
    api_test(env_module(game).env(**options), num_cycles=1000)


@pytest.mark.parametrize("game,options", CASES, ids=CASE_IDS)
def test_pettingzoo_seed_test(game, options):
    mod = env_module(game)
    seed_test(lambda: mod.env(**options), num_cycles=300)


# --- masks, observations, illegal actions, views along random games -----------------------------------
@pytest.mark.parametrize("game,options", CASES, ids=CASE_IDS)
def test_masks_are_exactly_the_legal_actions_and_every_observation_is_in_the_space(game, options):
    env = env_module(game).env(**options)
    spaces = {a: env.observation_space(a) for a in env.possible_agents}
    assert len({id(s) for s in spaces.values()}) == 1  # one space object, built once
    assert env.observation_space("player_0") is spaces["player_0"]
    steps = episodes = 0
    for seed in range(2):
        for agent, obs, _, info, _ in play_random(env, seed, random.Random(seed)):
            g = env.unwrapped.game
            assert agent == f"player_{g.current}"
            assert np.array_equal(obs["action_mask"].astype(bool), g.legal_mask())
            assert info["legal_actions"] == [g.action_name(a) for a in g.legal_actions()]
            for other in env.agents:
                o = obs if other == agent else env.observe(other)
                assert spaces[other].contains(o), f"{game} seed {seed}: {other}'s observation"
                assert other == agent or not o["action_mask"].any()
            steps += 1
        episodes += 1
    env.reset(seed=5)  # and the final observations, seen by each agent at the end of an episode
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        assert spaces[agent].contains(obs)
        if term or trunc:
            assert not obs["action_mask"].any()
            env.step(None)
        else:
            env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert steps > 100 and episodes == 2


@pytest.mark.parametrize("game", GAMES)
def test_an_illegal_action_anywhere_in_a_game_raises_naming_it_and_the_legal_ones_and_changes_nothing(game):
    env = new_env(game, seed=3)
    rng = np.random.default_rng(3)
    tried = 0
    phases = set()
    while env.agents and tried < 40:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        g = env.unwrapped.game
        mask = env.observe(agent)["action_mask"].astype(bool)
        illegal = np.flatnonzero(~mask)
        if len(illegal):
            bad = int(rng.choice(illegal))
            before = snapshot(env)
            with pytest.raises(ValueError) as e:
                env.step(bad)
            msg = str(e.value)
            assert f"illegal action {bad} ({g.action_name(bad)})" in msg, msg
            assert f"legal now: {g.describe_legal()}" in msg, msg
            assert snapshot(env) == before
            tried += 1
            phases.add(int(g.phase))
        env.step(int(rng.choice(np.flatnonzero(mask))))
    assert tried == 40 and len(phases) >= 2  # illegal actions were tried in more than one phase


@pytest.mark.parametrize("game,options", CASES, ids=CASE_IDS)
def test_render_is_the_whole_table_and_render_view_the_seat_s_part_of_it(game, options):
    """RULES.md H.2: a seat's view shows its own hand and never a card of another hand."""
    mod = env_module(game)
    env = mod.env(render_mode="ansi", **options)
    env.reset(seed=2)
    g = env.unwrapped.game
    full = tokens(env.render())
    for viewer in env.possible_agents:
        mine = tokens(env.unwrapped.render_view(viewer))
        for seat in range(g.num_players):
            names = {g.pack.names[c] for c in np.flatnonzero(g.hands[seat])}
            assert names <= full
            if f"player_{seat}" == viewer:
                assert names <= mine
            else:
                assert not names & mine, f"{viewer} sees {names & mine} of player_{seat}'s hand"
    with pytest.raises(ValueError, match="unknown agent 'player_9'"):
        env.unwrapped.render_view("player_9")
    quiet = mod.env(**options)  # render_view needs no render_mode
    quiet.reset(seed=2)
    assert quiet.unwrapped.render_view("player_0") == env.unwrapped.render_view("player_0")


def tokens(text: str) -> set[str]:
    return set(re.split(r"[\s:,;()|\[\]]+", text))


# --- bad input -----------------------------------------------------------------------------------------
def new_env(game: str, seed: int = 0, **options):
    env = pettingzoo.make("aec", tarot_env.GAMES[game].env_id, render_mode="ansi", **options)
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
