"""The rules objects' fast paths to the card-play kernels (tarot_env.kernels) give the kernels' answers.

``TrickGame.legal_cards`` (a ``bool[N]`` hand, for the readers: human play's hints) calls ``legal_play`` on the
hand's card set, and ``engine.trick_winner`` calls ``trick_winner_index`` for a list of ``(seat, card)``; both must
agree with the kernels the engines step with, on every hand and trick (B.4.1–B.4.4, PAR-5.2, MIL-4.2).
"""
from __future__ import annotations

import numpy as np
import pytest

from tarot_env.cards import BOLOGNESE, EXCUSE, FRENCH54, TRUMP
from tarot_env.engine import trick_winner
from tarot_env.kernels import NO_SUIT, legal_play, play_tables, trick_winner_index


@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
def test_legal_cards_are_the_engines_legal_card_plays(game):
    """A one-row game's ``legal_cards(seat)`` (the bool-hand reader's path) is its engine's mask over the cards
    at every card-play decision of seeded random games (no signal pending), written into ``out`` too."""
    import pettingzoo

    import tarot_env

    plays = 0
    for seed in range(3):
        env = pettingzoo.make("aec", tarot_env.ENV_IDS[game])
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for agent in env.agent_iter(2000):
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            g = env.unwrapped.game
            if g.phase.name == "PLAY" and getattr(g, "pending_signal", -1) < 0:
                got, out = g.legal_cards(g.current), np.ones(g.pack.size, dtype=bool)
                assert got.dtype == bool and np.array_equal(got, g.legal_mask()[:g.pack.size])
                assert g.legal_cards(g.current, out) is out and np.array_equal(out, got)
                plays += 1
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert plays > 100


def legal_bools(pack, hand, led) -> np.ndarray:
    """``legal_play`` on a ``bool[N]`` hand, as ``TrickGame.legal_cards`` calls it."""
    t = play_tables(pack)
    return (t.bit & legal_play(t.to_bits(hand), led, t.suit_bits)) != 0


@pytest.mark.parametrize("pack", [FRENCH54, BOLOGNESE], ids=["french54", "bolognese"])
def test_legal_play_on_bool_hands_keeps_to_the_hand_and_the_excuse(pack):
    rng = np.random.default_rng(0)
    for _ in range(3000):
        hand = rng.random(pack.size) < rng.uniform(0.02, 0.4)
        led = int(rng.choice([0, 1, 2, 3, TRUMP, NO_SUIT]))
        got = legal_bools(pack, hand, led)
        assert got.dtype == bool and got.shape == (pack.size,)
        assert not (got & ~hand).any()  # only cards in the hand
        assert got.any() == hand.any()  # a hand always has a legal card
        if hand[pack.excuse]:
            assert got[pack.excuse]  # the excuse may always be played (B.4.3)


def cards(hand, led, suit_bits) -> set[int]:
    return set(np.flatnonzero(legal_bools(FRENCH54, hand, led)).tolist())


def test_legal_play_follows_then_trumps_then_anything():
    """B.4.1–B.4.2 on a hand built by hand: spades led; then no spades; then no spades nor trumps."""
    t = play_tables(FRENCH54)
    p = FRENCH54.parse
    hand = np.zeros(FRENCH54.size, dtype=bool)
    hand[[p("KS"), p("7S"), p("X"), p("KD"), FRENCH54.excuse]] = True
    spades = FRENCH54.suit[p("KS")]
    assert cards(hand, spades, t.suit_bits) == {p("KS"), p("7S"), FRENCH54.excuse}
    hand[[p("KS"), p("7S")]] = False
    assert cards(hand, spades, t.suit_bits) == {p("X"), FRENCH54.excuse}
    hand[p("X")] = False
    assert cards(hand, spades, t.suit_bits) == {p("KD"), FRENCH54.excuse}
    assert cards(hand, NO_SUIT, t.suit_bits) == set(np.flatnonzero(hand).tolist())


@pytest.mark.parametrize("pack,players", [(FRENCH54, 4), (BOLOGNESE, 4), (BOLOGNESE, 2)],
                         ids=["french54", "bolognese4", "bolognese2"])
def test_trick_winner_is_trick_winner_index(pack, players):
    t = play_tables(pack)
    rng = np.random.default_rng(1)
    for _ in range(3000):
        cards = rng.choice(pack.size, players, replace=False)
        seats = (int(rng.integers(players)) + np.arange(players)) % players
        trick = [(int(s), int(c)) for s, c in zip(seats, cards)]
        at = trick_winner_index(t.beats, t.n, cards.astype(np.int64))
        assert trick_winner(pack, trick) == (trick[at][0] if at >= 0 else -1)
    only_excuse = [(0, pack.excuse)]
    assert trick_winner(pack, only_excuse) == -1 and pack.suit[pack.excuse] == EXCUSE
