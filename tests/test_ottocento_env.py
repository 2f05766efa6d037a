"""The Ottocento PettingZoo environment: rewards, episodes, hidden information (H.1–H.3, H.6); the
contract shared by every game (registration, api_test, masks, bad input) is tests/test_env_contract.py."""
from __future__ import annotations

import json
import random

import numpy as np
import pettingzoo
import pytest

from tarot_env.cards import BOLOGNESE as P
from tarot_env.config import make_config
from tarot_env.envs import ottocento as ott_env
from tarot_env.rules.ottocento import (
    A_MONTE,
    DECLARE_DONE,
    OBS,
    PLAY_ON,
    STATE_SIZE,
    N,
    OttocentoConfig,
    OttocentoGame,
    Phase,
    declarable_cards,
)

ENV_ID = "tarocchini/ottocento-v2"
CARD_SECTIONS = ("hand", "my_discards", "declared", "played", "trick", "won", "matto_paid")


def play(env, seed, policy, rng):
    """Drive the AEC loop; ``policy(env, obs, rng) -> action``; return the rewards seen per agent."""
    env.reset(seed=seed)
    totals = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        totals[agent] += rew
        if term or trunc:
            env.step(None)
            continue
        env.step(policy(env, obs, rng))
    return totals


def random_policy(env, obs, rng):
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[rng.randrange(len(legal))])


def scripted_policy(env, obs, rng):
    """A fixed strategy: never a monte; discard the cheapest cards; declare everything that scores;
    play the strongest legal card; eldest signals LEAD_TRUMPS with its first card."""
    g = env.unwrapped.game
    legal = np.flatnonzero(obs["action_mask"])
    if g.phase == Phase.A_MONTE:
        return PLAY_ON
    if g.phase == Phase.DISCARD:
        return int(min(legal, key=lambda c: (P.value[c], P.strength[c])))
    if g.phase == Phase.DECLARE:
        reveal = legal[legal < N]
        return int(reveal[0]) if len(reveal) else DECLARE_DONE
    if N + 1 in legal and not g.tricks and not g.trick:
        return N + 1
    cards = legal[legal < N]
    return int(max(cards, key=lambda c: (P.suit[c] == 4, P.strength[c])))


# --- spaces (registration, PettingZoo's api_test/seed_test, masks, bad input: test_env_contract.py) ---

def test_spaces_are_the_same_objects_and_sizes_match_the_documented_layout():
    env = ott_env.env()
    a = env.possible_agents[0]
    assert env.observation_space(a) is env.observation_space("player_3")
    assert env.action_space(a).n == 68
    assert env.observation_space(a)["observation"].shape == (1558,)
    assert "1558" in ott_env.__doc__ and "Discrete(68)" in ott_env.__doc__
    assert f"Box({STATE_SIZE},)" in ott_env.__doc__
    env.reset(seed=0)
    assert env.state().shape == (STATE_SIZE,)
    for section in OBS.offsets:
        assert section in ott_env.__doc__


# --- random and scripted games through the PettingZoo loop ---------------------------------------

@pytest.mark.parametrize("policy", [random_policy, scripted_policy])
def test_a_whole_game_runs_and_rewards_are_team_shared_hand_score_differences(policy):
    env = pettingzoo.make("aec", ENV_ID)
    for seed in range(3):
        totals = play(env, seed, policy, random.Random(seed))
        g = env.unwrapped.game
        assert g.game_over and g.winner in (0, 1) and max(g.scores) >= 800
        diff = float(g.scores[0] - g.scores[1])
        assert totals["player_0"] == pytest.approx(totals["player_2"]) == pytest.approx(diff / 200)
        assert totals["player_1"] == pytest.approx(totals["player_3"]) == pytest.approx(-diff / 200)
        assert all(env.terminations.values()) and not any(env.truncations.values())


def test_scripted_game_declares_everything_it_may():
    env = ott_env.env()
    env.reset(seed=5)
    declared_checked = 0
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        g = env.unwrapped.game
        if g.phase == Phase.DECLARE and obs["action_mask"][DECLARE_DONE] and not obs["action_mask"][:N].any():
            assert np.array_equal(g.declared[g.current], declarable_cards(g.hands[g.current]))
            declared_checked += 1
        env.step(scripted_policy(env, obs, None))
    assert declared_checked >= 4


def test_default_reward_scale_is_200_and_can_be_overridden():
    assert ott_env.env().env_config.reward_scale == 200
    env = ott_env.env(reward_scale=800)
    assert env.env_config.reward_scale == 800
    totals = play(env, 1, random_policy, random.Random(1))
    g = env.unwrapped.game
    assert totals["player_0"] == pytest.approx(float(g.scores[0] - g.scores[1]) / 800)


def test_game_reward_option_gives_only_the_result():
    env = ott_env.env(reward="game")
    seen = {a: [] for a in env.possible_agents}
    env.reset(seed=1)
    rng = random.Random(1)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        seen[agent].append(rew)
        if term or trunc:
            env.step(None)
            continue
        env.step(random_policy(env, obs, rng))
    g = env.unwrapped.game
    expected = {0: 1.0, 1: -1.0, -1: 0.0}[g.winner]
    assert seen["player_0"][-1] == seen["player_2"][-1] == expected == -seen["player_1"][-1]
    assert all(r == 0 for r in seen["player_0"][:-1])


def test_episode_deal_ends_after_one_hand_and_reset_continues_with_the_next_dealer():
    env = ott_env.env(episode="deal")
    env.reset(seed=2)
    g = env.unwrapped.game
    dealer = g.dealer
    rng = random.Random(2)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(random_policy(env, obs, rng))
    assert len(g.history) == 1 and not g.game_over
    env.reset()
    assert env.unwrapped.game is g and g.dealer == (dealer + 1) % 4  # OTT-1.3


def test_OTT_3_2_thrown_in_hand_gives_zero_reward_and_ends_a_deal_episode():
    env = ott_env.env(episode="deal")
    env.reset(seed=0)
    for _ in range(4):
        env.step(A_MONTE)
    assert all(env.terminations.values())
    assert all(r == 0 for r in env.rewards.values())
    assert env.infos["player_0"]["last_result"]["thrown_in"] is True


def test_OTT_10_3_max_hands_ends_the_game_as_a_draw_reported_as_truncation():
    env = ott_env.env(max_hands=1, target_score=100_000, reward="game")
    play(env, 0, random_policy, random.Random(0))
    g = env.unwrapped.game
    assert g.winner == -1 and g.truncated
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert all(r == 0 for r in env.rewards.values())


def test_same_seed_same_game():
    def record(seed):
        env = ott_env.env()
        env.reset(seed=seed)
        out, rng = [], random.Random(seed)
        for agent in env.agent_iter():
            obs, rew, term, trunc, info = env.last()
            out.append((agent, obs["observation"].copy(), rew))
            if term or trunc:
                env.step(None)
                continue
            env.step(random_policy(env, obs, rng))
        return out
    a, b = record(3), record(3)
    assert len(a) == len(b) and all(x[0] == y[0] and x[2] == y[2] and np.array_equal(x[1], y[1])
                                    for x, y in zip(a, b))


# --- bad input ----------------------------------------------------------------------------------

def test_illegal_action_raises_naming_it_and_the_legal_ones_and_changes_nothing():
    env = ott_env.env()
    env.reset(seed=0)
    before = json.dumps(env.unwrapped.game.to_dict())
    with pytest.raises(ValueError) as e:
        env.step(P.parse("KD"))
    assert "illegal action 22 (KD)" in str(e.value) and "A_MONTE" in str(e.value)
    assert "65=a_monte, 66=play_on" in str(e.value)
    for bad in (68, -1, 3.5, "KD", None):
        with pytest.raises(ValueError):
            env.step(bad)
    assert json.dumps(env.unwrapped.game.to_dict()) == before
    env.step(PLAY_ON)


def test_illegal_action_terminate_option_ends_with_a_penalty():
    env = ott_env.env(illegal_action="terminate", illegal_reward=-3)
    env.reset(seed=0)
    agent = env.agent_selection
    env.step(0)
    assert all(env.terminations.values()) and env._cumulative_rewards[agent] == -3


def test_unknown_or_bad_options_are_rejected_by_name():
    with pytest.raises(ValueError, match="unknown option"):
        ott_env.env(signals="all")
    with pytest.raises(ValueError, match="'ott_signal_timing'"):
        ott_env.env(ott_signal_timing="never")
    with pytest.raises(ValueError, match="'max_hands' = 0"):
        ott_env.env(max_hands=0)


def test_render_shows_card_names_declarations_and_discards():
    env = ott_env.env(render_mode="ansi")
    env.reset(seed=5)
    while env.unwrapped.game.phase != Phase.PLAY:
        obs = env.observe(env.agent_selection)
        env.step(scripted_policy(env, obs, None))
    g = env.unwrapped.game
    text = env.render()
    assert "Ottocento" in text and "PLAY" in text and "dealer" in text and "discarded:" in text
    for seat in range(4):
        for name in P.names_of(g.hands[seat]):
            assert name in text
        if g.declared_points[seat]:
            assert f"= {g.declared_points[seat]}" in text
    assert "declared:" in text


# --- hidden information (RULES.md H) ------------------------------------------------------------

def redeal_unseen(g: OttocentoGame, observer: int, rng) -> OttocentoGame:
    """A copy of ``g`` where every card ``observer`` cannot know (the other hands less their declared
    cards, the dealer's discards, the undealt deck) is dealt again among those places, keeping how
    many each place holds."""
    h = g.clone()
    hidden_hands, hidden_discards = g.hidden_from(observer)
    places = [("hand", s) for s in range(4) for _ in range(int(hidden_hands[s].sum()))]
    places += [("discard", g.dealer)] * int(hidden_discards.sum())
    cards = np.concatenate([np.flatnonzero(hidden_hands[s]) for s in range(4)] + [np.flatnonzero(hidden_discards)])
    if g.phase == Phase.A_MONTE:  # the rest of the deck is unseen by everyone
        rest = g.deck[20:]
        places += [("deck", i) for i in range(20, N)]
        cards = np.concatenate([cards, rest])
    hands, discards, deck = g.hands & ~hidden_hands, g.discards.copy(), g.deck.copy()
    discards[g.dealer] &= ~hidden_discards
    for (kind, where), card in zip(places, rng.permutation(cards)):
        if kind == "hand":
            hands[where, card] = True
        elif kind == "discard":
            discards[where, card] = True
        else:
            deck[where] = card
    h.place_cards(hands, discards, deck)
    return h


@pytest.mark.parametrize("opts", [{}, {"ott_signal_players": "all", "a_monte": "ask_all"}])
def test_H_6_leak_test_observation_unchanged_when_unseen_cards_are_redealt(opts):
    rng = np.random.default_rng(1)
    changed = 0
    phases = set()
    for seed in range(25):
        g = OttocentoGame(make_config(OttocentoConfig, opts), seed=seed)
        while not g.game_over:
            if rng.random() < 0.1:
                phases.add(g.phase)
                for observer in range(4):
                    h = redeal_unseen(g, observer, rng)
                    assert np.array_equal(h.observation(observer), g.observation(observer)), (seed, observer)
                    if observer == g.current:
                        assert np.array_equal(h.legal_mask(), g.legal_mask())
                    changed += not np.array_equal(h.state_vector(), g.state_vector())
            legal = g.legal_actions()
            g.apply(legal[rng.integers(len(legal))])
    assert phases == {Phase.A_MONTE, Phase.DISCARD, Phase.DECLARE, Phase.PLAY}
    assert changed > 100  # the re-deal really moved hidden cards (the test can fail)


def test_H_3_dealer_discards_never_reach_the_partner_or_the_opponents():
    rng = np.random.default_rng(4)
    checked = 0
    for seed in range(20):
        g = OttocentoGame(seed=seed)
        while not g.game_over:
            d = g.discards[g.dealer]
            if d.any():
                for seat in range(4):
                    obs = g.observation(seat)
                    for name in CARD_SECTIONS:
                        sec = obs[OBS.offsets[name]].reshape(-1, N)
                        if seat == g.dealer and name == "my_discards":
                            assert (sec[0] > 0)[d].all()
                        else:
                            assert not (sec[:, d] > 0).any(), (seat, name)
                    checked += 1
            legal = g.legal_actions()
            g.apply(legal[rng.integers(len(legal))])
    assert checked > 1000


def test_H_3_declared_cards_reach_every_player_at_the_declarers_relative_seat():
    env = ott_env.env()
    env.reset(seed=7)
    g = env.unwrapped.game
    while g.phase != Phase.PLAY:
        env.step(scripted_policy(env, env.observe(env.agent_selection), None))
    assert g.declared.any()
    for seat in range(4):
        obs = env.observe(f"player_{seat}")["observation"]
        dec = obs[OBS.declared].reshape(4, N) > 0
        pts = obs[OBS.declared_points]
        for declarer in range(4):
            rel = (declarer - seat) % 4
            assert np.array_equal(dec[rel], g.declared[declarer])
            assert pts[rel] * 1000 == pytest.approx(g.declared_points[declarer])


def test_H_1_observe_is_each_seats_view_as_a_fresh_array_at_every_step():
    """H.1: ``observe(agent)`` is that seat's own observation, ``game.observation(seat)``, at every step (the
    acting seat's is read from the one kernel call that also writes its mask, ``observation_and_mask``, and
    kept until the next step); each call returns a new array, so changing one changes no later one."""
    env = ott_env.env()
    env.reset(seed=4)
    rng = random.Random(4)
    for _ in range(150):
        g, acting = env.unwrapped.game, env.agent_selection
        for agent in env.possible_agents:
            seat = env.unwrapped.agent_name_mapping[agent]
            obs = env.observe(agent)["observation"]
            assert np.array_equal(obs, g.observation(seat)), (agent, acting)
            obs[:] = -1.0  # the caller's copy: the next call is untouched
            assert np.array_equal(env.observe(agent)["observation"], g.observation(seat))
        obs, _, term, trunc, _ = env.last()
        assert np.array_equal(obs["action_mask"].astype(bool), g.legal_mask())
        env.step(None if term or trunc else random_policy(env, obs, rng))
