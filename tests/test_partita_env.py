"""The Partita PettingZoo environment: spaces, invariants, determinism, serialisation, leaks (the
contract shared by every game, registration, api_test, masks, bad input, is tests/test_env_contract.py)."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

import tarot_env
from aec_helpers import play_random
from tarot_env.cards import FRENCH54 as P
from tarot_env.envs import partita as partita_env
from tarot_env.rules.partita import FOOL, OBS, N, PartitaConfig, PartitaGame, Phase

ENV_ID = "tarocchini/partita-v1"


# --- spaces (registration, PettingZoo's api_test/seed_test, masks, bad input: test_env_contract.py) ---

def test_spaces_are_the_same_objects_and_sizes_match_the_documented_layout():
    env = partita_env.env()
    a = env.possible_agents[0]
    assert env.observation_space(a) is env.observation_space(a)
    assert env.observation_space(a) is env.observation_space("player_3")
    assert env.action_space(a).n == 57
    assert env.observation_space(a)["observation"].shape == (1034,)
    assert env.observation_space(a)["action_mask"].dtype == np.int8
    assert "1034" in partita_env.__doc__ and "Discrete(57)" in partita_env.__doc__
    env.reset(seed=0)
    assert env.state().shape == (tarot_env.rules.partita.STATE_SIZE,)
    assert f"Box({tarot_env.rules.partita.STATE_SIZE},)" in partita_env.__doc__


# --- invariants over many seeded random games --------------------------------------------------

def test_invariants_over_1000_random_games():
    """54 cards accounted for, totals 80, zero-sum, pile sizes, 13 tricks, in every deal."""
    for seed in range(1000):
        g = PartitaGame(seed=seed)
        rng = np.random.default_rng(seed)
        while not g.game_over:
            if g.phase == Phase.PLAY and not g.trick and len(g.tricks) == 0:
                # start of play: 13 cards each, the dealer's 2 discards aside
                assert g.hands.sum(axis=1).tolist() == [13] * 4
                assert g.discards.sum() == 2
            legal = g.legal_actions()
            before = len(g.history)
            g.apply(legal[rng.integers(len(legal))])
            if len(g.history) > before:
                h = g.history[-1]
                assert sum(h["tricks_won"]) == 13 == len(h["tricks"])
                assert sum(h["points"]) == 80
                assert h["scores"][0] == -h["scores"][1]
                cards = [c for t, _ in h["tricks"] for _, c in t] + h["discards"]
                assert sorted(cards) == list(range(N))  # every card played or discarded once
                # pile sizes: 4 per trick won, the Fool moved to its owner, the discards to the dealer's team
                dealer_team = h["dealer"] % 2
                sizes = [4 * h["tricks_won"][t] + 2 * (t == dealer_team) for t in range(2)]
                fool_owner_team = next(s for t, _ in h["tricks"] for s, c in t if c == FOOL) % 2
                fool_winner_team = next(w for t, w in h["tricks"] if any(c == FOOL for _, c in t)) % 2
                if fool_owner_team != fool_winner_team:
                    sizes[fool_owner_team] += 1
                    sizes[fool_winner_team] -= 1
                assert sum(sizes) == 54
                assert h["fool_team"] == fool_owner_team
        assert len(g.history) == 4
        assert g.scores[0] == -g.scores[1] == sum(h["scores"][0] for h in g.history)


def test_rewards_are_team_shared_deal_score_differences_and_sum_to_the_game_score():
    env = partita_env.env()
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
    s0 = int(g.scores[0])
    assert totals["player_0"] == pytest.approx(totals["player_2"]) == pytest.approx(2 * s0 / 80)
    assert totals["player_1"] == pytest.approx(totals["player_3"]) == pytest.approx(-2 * s0 / 80)


def test_game_reward_option_gives_only_the_result():
    env = partita_env.env(reward="game")
    rng = random.Random(1)
    seen = {a: [] for a in env.possible_agents}
    env.reset(seed=1)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        seen[agent].append(rew)
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
    g = env.unwrapped.game
    expected = {0: 1.0, 1: -1.0, -1: 0.0}[g.winner]
    assert seen["player_0"][-1] == expected and seen["player_1"][-1] == -expected
    assert all(r == 0 for r in seen["player_0"][:-1])


def test_episode_deal_option_ends_after_one_deal_and_reset_continues():
    env = partita_env.env(episode="deal")
    rng = random.Random(2)
    env.reset(seed=2)
    first_dealer = env.unwrapped.game.dealer
    for _ in play_random(env, None, rng):
        pass
    g = env.unwrapped.game
    assert len(g.history) == 1 and not g.game_over
    env.reset()
    assert env.unwrapped.game is g and g.dealer == (first_dealer + 1) % 4
    assert all(not t for t in env.terminations.values())


def test_PAR_3_3_reset_without_seed_after_a_game_starts_the_next_game_with_the_partner_dealing():
    env = partita_env.env()
    rng = random.Random(3)
    env.reset(seed=3)
    for _ in play_random(env, None, rng):
        pass
    last_dealer = env.unwrapped.game.history[-1]["dealer"]
    env.reset()
    assert env.unwrapped.game.dealer == (last_dealer + 2) % 4
    assert env.unwrapped.game.deals_played == 0


# --- determinism and serialisation --------------------------------------------------------------

def record(seed: int, n: int = 10_000):
    env = partita_env.env()
    out = []
    for agent, obs, rew, _, a in play_random(env, seed, random.Random(seed)):
        out.append((agent, obs["observation"].copy(), obs["action_mask"].copy(), rew, a))
        if len(out) >= n:
            break
    return out


def test_same_seed_same_game():
    a, b = record(7), record(7)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x[0] == y[0] and x[3] == y[3] and x[4] == y[4]
        assert np.array_equal(x[1], y[1]) and np.array_equal(x[2], y[2])
    c = record(8, n=5)
    assert any(not np.array_equal(x[1], y[1]) for x, y in zip(a[:5], c))


def test_serialisation_round_trip_through_json_continues_identically():
    rng = np.random.default_rng(0)
    for seed in range(20):
        g = PartitaGame(PartitaConfig(partita_signals="bolognese3"), seed=seed)
        stop = int(rng.integers(1, 200))
        for _ in range(stop):
            legal = g.legal_actions()
            g.apply(legal[rng.integers(len(legal))])
        h = PartitaGame.from_dict(json.loads(json.dumps(g.to_dict())))
        c = g.clone()
        while not g.game_over:
            for other in (h, c):
                assert np.array_equal(other.legal_mask(), g.legal_mask())
                for s in range(4):
                    assert np.array_equal(other.observation(s), g.observation(s))
                assert np.array_equal(other.state_vector(), g.state_vector())
            legal = g.legal_actions()
            a = legal[rng.integers(len(legal))]
            for x in (g, h, c):
                x.apply(a)
        assert h.history == g.history == c.history and h.winner == g.winner
        # the random stream travelled too: the next game is dealt the same
        assert np.array_equal(h.next_game().hands, g.next_game().hands)


def test_from_dict_refuses_another_game_or_format():
    d = PartitaGame(seed=0).to_dict()
    with pytest.raises(ValueError, match="not 'partita'"):
        PartitaGame.from_dict({**d, "game": "ottocento"})
    with pytest.raises(ValueError, match="format"):
        PartitaGame.from_dict({**d, "format": 99})


# --- hidden information -------------------------------------------------------------------------

def redeal_unseen(g: PartitaGame, observer: int, rng) -> PartitaGame:
    """A copy of ``g`` where every card ``observer`` cannot know is dealt again among the places it
    cannot see (the other hands and the hidden discards), keeping how many each place holds."""
    h = g.clone()
    hidden_hands, hidden_discards = g.hidden_from(observer)
    places = [("hand", s) for s in range(4) for _ in range(int(hidden_hands[s].sum()))]
    places += [("discard", g.dealer)] * int(hidden_discards.sum())
    cards = np.concatenate([np.flatnonzero(hidden_hands[s]) for s in range(4)] + [np.flatnonzero(hidden_discards)])
    assert len(cards) == len(places)
    hands, discards = g.hands.copy(), g.discards.copy()
    for s in range(4):
        if s != observer:
            hands[s] = False
    discards[g.dealer] &= ~hidden_discards
    for (kind, seat), card in zip(places, rng.permutation(cards)):
        (hands if kind == "hand" else discards)[seat, card] = True
    h.place_cards(hands, discards)  # PAR-4.4's trump requirement is fixed at the deal; kept as dealt
    return h


@pytest.mark.parametrize("signals", ["none", "bolognese3"])
def test_H_6_leak_test_observation_unchanged_when_unseen_cards_are_redealt(signals):
    rng = np.random.default_rng(1)
    changed = 0
    for seed in range(60):
        g = PartitaGame(PartitaConfig(partita_signals=signals), seed=seed)
        while not g.game_over:
            if rng.random() < 0.15:
                for observer in range(4):
                    h = redeal_unseen(g, observer, rng)
                    assert np.array_equal(h.observation(observer), g.observation(observer)), (seed, observer)
                    if observer == g.current:
                        assert np.array_equal(h.legal_mask(), g.legal_mask())
                    changed += not np.array_equal(h.state_vector(), g.state_vector())
            legal = g.legal_actions()
            g.apply(legal[rng.integers(len(legal))])
    assert changed > 100  # the re-deal really moved hidden cards (the test can fail)


def test_H_5_dealer_hidden_discards_reach_only_the_dealer():
    g = PartitaGame(seed=5)
    while g.phase == Phase.DISCARD:
        g.apply(g.legal_actions()[0])
    hidden = g.discards[g.dealer] & ~g.public_discards
    for seat in range(4):
        obs = g.observation(seat)
        seen = (obs[OBS.my_discards] > 0) | (obs[OBS.public_discards] > 0)
        if seat == g.dealer:
            assert seen[hidden].all()
        else:
            assert not seen[hidden].any()
            assert not (obs[OBS.hand] > 0)[hidden].any()


# --- bad input ----------------------------------------------------------------------------------

def test_illegal_action_terminate_option_ends_with_a_penalty():
    env = partita_env.env(illegal_action="terminate", illegal_reward=-2)
    env.reset(seed=0)
    agent = env.agent_selection
    bad = next(a for a in range(N) if not env.unwrapped.game.legal_mask()[a])
    env.step(bad)
    assert all(env.terminations.values())
    assert env._cumulative_rewards[agent] == -2
    assert env.infos[agent]["offender"] == agent


def test_unknown_or_bad_options_are_rejected_by_name():
    with pytest.raises(ValueError, match="unknown option.*'deals'"):
        partita_env.env(deals=3)
    with pytest.raises(ValueError, match="'deals_per_game' = 0"):
        partita_env.env(deals_per_game=0)
    with pytest.raises(ValueError, match="'reward' = 'points'"):
        partita_env.env(reward="points")
    with pytest.raises(ValueError, match="wrong type"):
        partita_env.env(deals_per_game="4")
    with pytest.raises(ValueError, match="render_mode"):
        partita_env.env(render_mode="rgb_array")


# --- rendering ----------------------------------------------------------------------------------

def test_render_ansi_shows_the_table_with_card_names(capsys):
    env = partita_env.env(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    g = env.unwrapped.game
    for seat in range(4):
        for name in P.names_of(g.hands[seat]):
            assert name in text
    assert "dealer" in text and "DISCARD" in text
    env = partita_env.env(render_mode="human")
    env.reset(seed=0)
    env.render()
    assert "player_0" in capsys.readouterr().out


# --- a golden deal: explicit hands and actions, not a seed --------------------------------------

GOLDEN_HANDS = [
    "XXI XIX IV KS QS VS 8S QC 9C 7C QD CD 2D",
    "XX XVIII XVII X IX III KC 4D KH QH AH 3H 4H",
    "XI VIII VI I Fool CS CC KD VD AD 3D CH VH",
    "XVI XV XIV XIII XII VII V II 10S 9S 7S VC 10C 8C 2H",
]


def test_golden_deal_first_legal_card_policy():
    """Dealer 3 discards 10S 9S; then every player plays its first legal card (id order)."""
    g = PartitaGame(PartitaConfig(deals_per_game=1), seed=0, first_dealer=3)
    g.set_hands(3, [P.parse_many(h) for h in GOLDEN_HANDS])
    g.apply(P.parse("10S"))
    g.apply(P.parse("9S"))
    played = []
    while not g.game_over:
        a = g.legal_actions()[0]
        played.append(P.names[a])
        g.apply(a)
    h = g.history[0]
    assert played[:8] == ["XVI", "XXI", "XX", "XI", "XIX", "XVIII", "VIII", "XV"]
    # trick 1: XVI XXI XX XI -> player_0; trick 3: IV XVII VI XIV -> player_1 (checked by hand)
    assert [w for _, w in h["tricks"]] == [0, 0, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2]
    assert h["points"] == GOLDEN_POINTS and h["scores"] == [GOLDEN_POINTS[0] - 40, GOLDEN_POINTS[1] - 40]


GOLDEN_POINTS = [16, 64]  # team 1 (the dealer's) took 10 tricks and the discards
