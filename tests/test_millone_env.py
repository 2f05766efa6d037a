"""The Millone PettingZoo environment: its spaces, rewards, options, leaks and messages (the contract
shared by every game, registration, api_test, masks, bad input, is tests/test_env_contract.py)."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from aec_helpers import play_random
from tarot_env.cards import BOLOGNESE as P
from tarot_env.envs import millone as millone_env
from tarot_env.rules.millone import OBS, STATE_SIZE, MilloneGame, N, Phase

ENV_ID = "tarocchini/millone-v2"


def test_spaces_are_the_same_objects_and_sizes_match_the_documented_layout():
    env = millone_env.env()
    a, b = env.possible_agents
    assert env.observation_space(a) is env.observation_space(b)
    assert env.action_space(a).n == 65 and "Discrete(65)" in millone_env.__doc__
    assert env.observation_space(a)["observation"].shape == (836,) and "Box(836,)" in millone_env.__doc__
    env.reset(seed=0)
    assert env.state().shape == (STATE_SIZE,) and f"Box({STATE_SIZE},)" in millone_env.__doc__
    for name, sl in OBS.offsets.items():  # every section is in the documentation table
        assert f"| {name} |" in millone_env.__doc__, name


def test_default_reward_is_the_hand_score_difference_over_200_and_sums_to_the_game_score():
    env = millone_env.env()
    assert env.unwrapped.env_config.reward_scale == 200.0
    assert millone_env.env(reward_scale=50).unwrapped.env_config.reward_scale == 50.0  # explicit wins
    totals = {a: 0.0 for a in env.possible_agents}
    env.reset(seed=4)
    rng = random.Random(4)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        totals[agent] += rew
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
    g = env.unwrapped.game
    diff = int(g.scores[0] - g.scores[1])
    assert totals["player_0"] == pytest.approx(diff / 200) and totals["player_1"] == pytest.approx(-diff / 200)


def test_game_reward_option_gives_only_the_result():
    env = millone_env.env(reward="game")
    seen = {a: [] for a in env.possible_agents}
    env.reset(seed=1)
    rng = random.Random(1)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        seen[agent].append(rew)
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
    w = env.unwrapped.game.winner
    expected = {0: 1.0, 1: -1.0, -1: 0.0}[w]
    assert seen["player_0"][-1] == expected and seen["player_1"][-1] == -expected
    assert all(r == 0 for r in seen["player_0"][:-1])


def test_episode_hand_option_and_MIL_2_1_the_next_hand_is_dealt_by_the_other_player():
    env = millone_env.env(episode="deal")
    env.reset(seed=2)
    g = env.unwrapped.game
    first = g.dealer
    for _ in play_random(env, None, random.Random(2)):
        pass
    assert len(g.history) == 1 and all(env.terminations.values())
    env.reset()
    assert env.unwrapped.game is g and g.dealer == 1 - first and g.phase == Phase.DISCARD


def test_reset_after_a_game_starts_the_next_game_dealt_by_the_player_who_did_not_deal_last():
    env = millone_env.env(max_hands=2)
    env.reset(seed=3)
    for _ in play_random(env, None, random.Random(3)):
        pass
    g = env.unwrapped.game
    assert g.game_over
    last_dealer = g.dealer
    env.reset()
    assert env.unwrapped.game is not g and env.unwrapped.game.dealer == 1 - last_dealer


def test_claim_is_rewarded_and_ends_the_episode():
    """MIL-3 through the env: a claim at the start of a hand ends the game; the claimant's reward
    includes his hand combinations / 200."""
    rng = random.Random(0)
    for seed in range(200):
        env = millone_env.env()
        totals = {a: 0.0 for a in env.possible_agents}
        env.reset(seed=seed)
        for agent in env.agent_iter():
            obs, rew, term, trunc, info = env.last()
            totals[agent] += rew
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.randrange(len(legal))]))
        g = env.unwrapped.game
        if g.history[-1].get("claim"):
            c = g.history[-1]["claimant"]
            assert g.winner == c and g.scores[c] >= 1000
            diff = int(g.scores[0] - g.scores[1])
            assert totals["player_0"] == pytest.approx(diff / 200)
            obs = env.observe(f"player_{1 - c}")["observation"]
            assert obs[OBS.claim_shown].reshape(2, N)[1].sum() > 0  # shown to the opponent
            return
    pytest.fail("no claim in 200 random games")


def test_illegal_action_raises_naming_it_and_the_legal_ones_and_changes_nothing():
    env = millone_env.env()
    env.reset(seed=0)
    g = env.unwrapped.game
    before = json.dumps(g.to_dict())
    legal = set(g.legal_actions())
    bad = P.parse("Angel") if g.hands[g.current, 0] else P.parse("Matto")
    if bad in legal:  # pragma: no cover
        bad = next(a for a in range(N) if a not in legal)
    with pytest.raises(ValueError) as e:
        env.step(bad)
    msg = str(e.value)
    assert f"illegal action {bad} ({P.names[bad]})" in msg and "phase DISCARD" in msg and "legal now:" in msg
    for bad in (62, 65, -1, 3.5, "KD", None):
        with pytest.raises(ValueError):
            env.step(bad)
    assert json.dumps(env.unwrapped.game.to_dict()) == before
    env.step(min(legal))


def test_illegal_action_terminate_option_ends_with_a_penalty():
    env = millone_env.env(illegal_action="terminate", illegal_reward=-3)
    env.reset(seed=0)
    agent = env.agent_selection
    env.step(64)
    assert all(env.terminations.values()) and env._cumulative_rewards[agent] == -3


def test_unknown_or_bad_options_are_rejected_by_name():
    with pytest.raises(ValueError, match="unknown option.*'target'"):
        millone_env.env(target=500)
    with pytest.raises(ValueError, match="'max_hands' = 0"):
        millone_env.env(max_hands=0)
    with pytest.raises(ValueError, match="wrong type"):
        millone_env.env(round_suits_inverted="yes")
    with pytest.raises(ValueError, match="'first_dealer' = 2"):
        millone_env.env(first_dealer=2)
    with pytest.raises(ValueError, match="render_mode"):
        millone_env.env(render_mode="rgb_array")
    env = millone_env.env(round_suits_inverted=False, first_dealer=1)
    env.reset(seed=0)
    assert env.unwrapped.game.dealer == 1 and not env.unwrapped.game.config.round_suits_inverted


def test_render_ansi_shows_both_hands_the_stock_and_the_discards(capsys):
    env = millone_env.env(render_mode="ansi")
    env.reset(seed=0)
    g = env.unwrapped.game
    text = env.render()
    for seat in (0, 1):
        for name in P.names_of(g.hands[seat]):
            assert name in text
    assert "dealer" in text and "DISCARD" in text and "stock: 20 cards" in text
    env.step(int(np.flatnonzero(g.legal_mask())[0]))
    assert "discarded: " in env.render()
    env = millone_env.env(render_mode="human")
    env.reset(seed=0)
    env.render()
    assert "player_1" in capsys.readouterr().out


def test_H_4_leak_opponent_discards_and_stock_never_reach_an_observation_through_the_env():
    env = millone_env.env()
    env.reset(seed=9)
    g = env.unwrapped.game
    rng = random.Random(9)
    for agent, obs, _, _, _ in play_random(env, None, rng):
        if g.phase == Phase.PLAY and not g.tricks:
            break
    for seat in (0, 1):
        o = env.observe(f"player_{seat}")["observation"]
        visible = (o[:OBS.seat_from_dealer.start].reshape(-1, N) > 0).any(axis=0)
        assert not visible[g.discards[1 - seat]].any()
        assert not visible[g.hands[1 - seat]].any()


def test_same_seed_same_game_through_the_env():
    def record(seed):
        env = millone_env.env()
        out = []
        for agent, obs, rew, _, a in play_random(env, seed, random.Random(seed)):
            out.append((agent, obs["observation"].copy(), rew, a))
            if len(out) > 400:
                break
        return out
    a, b = record(7), record(7)
    assert all(x[0] == y[0] and x[2] == y[2] and x[3] == y[3] and np.array_equal(x[1], y[1])
               for x, y in zip(a, b))


def test_game_can_be_driven_without_the_env():
    g = MilloneGame(seed=0)
    assert g.legal_actions() and g.current_player == g.current


def test_max_hands_cap_is_a_truncation_and_a_draw():
    env = millone_env.env(max_hands=1)
    env.reset(seed=5)
    rng = random.Random(5)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        if term or trunc:
            assert trunc and not term and info["winner"] == -1
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
    g = env.unwrapped.game
    assert g.truncated and g.winner == -1 and g.hands_played == 1
