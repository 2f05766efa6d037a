"""The rules objects' fast paths to the card-play kernels (tarot_env.kernels) give the kernels' answers.

``TrickGame.legal_cards`` calls ``legal_play_cards`` (``legal_play`` over a ``bool[N]`` hand, packed
inside the compiled code; ``cards`` below), and ``engine.trick_winner`` calls ``trick_winner_index`` for a list of
``(seat, card)``; both must agree with the bit-set kernels on every hand and trick
(B.4.1–B.4.4, PAR-5.2, MIL-4.2).
"""
from __future__ import annotations

import numpy as np
import pytest

from tarot_env.cards import BOLOGNESE, EXCUSE, FRENCH54, TRUMP
from tarot_env.engine import trick_winner
from tarot_env.kernels import NO_SUIT, legal_play, legal_play_cards, play_tables, trick_winner_index


@pytest.mark.parametrize("pack", [FRENCH54, BOLOGNESE], ids=["french54", "bolognese"])
def test_legal_play_cards_is_legal_play_on_bool_hands(pack):
    t = play_tables(pack)
    rng = np.random.default_rng(0)
    for _ in range(3000):
        hand = rng.random(pack.size) < rng.uniform(0.02, 0.4)
        led = int(rng.choice([0, 1, 2, 3, TRUMP, NO_SUIT]))
        got = np.ones(pack.size, dtype=bool)  # every entry is written
        legal_play_cards(hand, led, t.suit_bits, got)
        want = (legal_play(t.to_bits(hand), led, t.suit_bits) & t.bit) != 0
        assert got.dtype == bool and np.array_equal(got, want)
        assert not (got & ~hand).any()  # only cards in the hand
        if hand[pack.excuse]:
            assert got[pack.excuse]  # the excuse may always be played (B.4.3)


def cards(hand, led, suit_bits) -> set[int]:
    out = np.zeros(len(hand), dtype=bool)
    legal_play_cards(hand, led, suit_bits, out)
    return set(np.flatnonzero(out).tolist())


def test_legal_play_cards_follows_then_trumps_then_anything():
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
