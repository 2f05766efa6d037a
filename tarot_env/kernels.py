"""Card play written once, as compiled kernels over card sets (``uint64``, bit ``c``: card ``c``; RULES.md B.4).

The one implementation of legal card play (B.4.1–B.4.3, PAR-5.2, MIL-4.2: :func:`legal_play`), the trick
order (B.4.4, B.2.2, B.2.4, PAR-2: the table :attr:`PlayTables.beats`) and the voids a card shows (H.1.1:
:func:`shown_voids`), for the one-row games of ``tarot_env.engine`` and the batched engines alike.
:func:`play_tables` builds a pack's tables once.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit

from .cards import EXCUSE, TRUMP, Pack

NO_SUIT = 6  # "nothing led yet": an empty trick, or only the excuse so far (B.4.3)
SUITS = 7  # rows of the suit tables: suits 0..3, TRUMP (4), EXCUSE (5), NO_SUIT (6)


@dataclass(frozen=True, eq=False)
class PlayTables:
    """A pack's card-play tables (read-only arrays, built once by :func:`play_tables`).

    ``bit[c]``              uint64: the set holding card ``c`` alone
    ``suit[c]``             int64: 0..3, TRUMP, EXCUSE
    ``suit_bits[s]``        uint64: the cards of suit ``s`` (``NO_SUIT``: none)
    ``trump_bits``, ``excuse_bits``: the trumps; the excuse
    ``beats[best * N + c]`` bool: ``c`` takes the lead of a trick whose best card so far is ``best``
                            (``best = N``: no card yet), B.4.4
    ``led_after[led * N + c]`` int64: the suit led once ``c`` is played on a trick led in ``led``
    """

    n: int
    bit: np.ndarray
    suit: np.ndarray
    suit_bits: np.ndarray
    trump_bits: np.uint64
    excuse_bits: np.uint64
    beats: np.ndarray
    led_after: np.ndarray

    def to_bits(self, cards: np.ndarray) -> np.uint64:
        """bool[N] (or a list of card ids) -> the uint64 set."""
        cards = np.asarray(cards)
        if cards.dtype == bool:
            cards = np.flatnonzero(cards)
        return np.uint64(np.bitwise_or.reduce(self.bit[cards], initial=np.uint64(0)))


def _beats_rule(suit: np.ndarray, strength: np.ndarray, equal: np.ndarray, best: int, card: int) -> bool:
    """B.4.4: does ``card`` take the lead from ``best`` (the best card of the trick so far)?"""
    if suit[card] == EXCUSE:  # B.2.4 / PAR-2.4: the excuse never wins
        return False
    if best < 0:  # the first card other than the excuse leads
        return True
    if suit[card] == TRUMP:  # a trump beats a suit card and a lower trump; equal group: the later (B.2.2)
        return bool(suit[best] != TRUMP or strength[card] > strength[best]
                    or (strength[card] == strength[best] and equal[card]))
    return bool(suit[card] == suit[best] and strength[card] > strength[best])  # the suit led, higher


@cache
def play_tables(pack: Pack) -> PlayTables:
    """The card-play tables of ``pack`` (built once per pack)."""
    n = pack.size
    suit = pack.suit.astype(np.int64)
    bit = np.left_shift(np.uint64(1), np.arange(n, dtype=np.uint64))
    suit_bits = np.zeros(SUITS, dtype=np.uint64)
    for s in range(NO_SUIT):
        suit_bits[s] = np.bitwise_or.reduce(bit[suit == s], initial=np.uint64(0))
    beats = np.zeros((n + 1, n), dtype=np.bool_)
    for c in range(n):
        beats[n, c] = _beats_rule(suit, pack.strength, pack.equal_group, -1, c)
        for b in range(n):
            if suit[b] != EXCUSE:  # the excuse is never the best card
                beats[b, c] = _beats_rule(suit, pack.strength, pack.equal_group, b, c)
    led_after = np.tile(np.arange(SUITS, dtype=np.int64)[:, None], (1, n))
    led_after[NO_SUIT] = np.where(suit == EXCUSE, NO_SUIT, suit)  # the first card but the excuse sets it
    for a in (bit, suit, suit_bits, beats, led_after):
        a.setflags(write=False)
    return PlayTables(n=n, bit=bit, suit=suit, suit_bits=suit_bits, trump_bits=suit_bits[TRUMP],
                      excuse_bits=suit_bits[EXCUSE], beats=beats.reshape(-1), led_after=led_after.reshape(-1))


@njit(cache=True, nogil=True, _nrt=False)
def popcount(x: np.uint64) -> int:
    """The number of cards in the set ``x`` (uint64)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def legal_play(hand: np.uint64, led: int, suit_bits: np.ndarray) -> np.uint64:
    """B.4.1–B.4.3: the cards of ``hand`` that may be played on a trick led in ``led``.

    Follow the suit led if you can; else play a trump if you can; else anything. The excuse may
    always be played. Nothing led yet (``NO_SUIT``): anything.
    """
    if led == NO_SUIT:
        return hand
    ok = hand & suit_bits[led]
    if ok == 0:
        ok = hand & suit_bits[TRUMP]
        if ok == 0:
            return hand
    return ok | (hand & suit_bits[EXCUSE])


@njit(cache=True, nogil=True)
def beats(beats_table: np.ndarray, n: int, best: int, card: int) -> bool:
    """B.4.4: ``card`` takes the lead from ``best`` (``best = n``: no card yet)."""
    return beats_table[best * n + card]


@njit(cache=True, nogil=True)
def trick_winner_index(beats_table: np.ndarray, n: int, cards: np.ndarray) -> int:
    """The position (in play order) of the card that wins the trick ``cards`` (B.4.4)."""
    best, at = n, -1
    for i in range(len(cards)):
        c = cards[i]
        if beats_table[best * n + c]:
            best, at = c, i
    return at


@njit(cache=True, nogil=True)
def shown_voids(led: int, card_suit: int) -> tuple[int, int]:
    """H.1.1: the suits a seat shows it lacks by playing a card of ``card_suit`` on a trick led in
    ``led``: ``(-1, -1)`` when it follows (or nothing is led, or it is the excuse); else the suit led
    and, for a plain card (not a trump), trumps too (``-1`` when a trump was played)."""
    if led == NO_SUIT or card_suit == led or card_suit == EXCUSE:
        return -1, -1
    return led, (TRUMP if card_suit != TRUMP else -1)


@njit(cache=True, nogil=True, _nrt=False)
def uniform_legal(mask: np.ndarray) -> int:
    """A uniformly random legal action of ``mask`` (bool[A], at least one legal), from numba's own
    random stream (seeded by ``np.random.seed`` in compiled code): the moves of a search's random
    rollouts (``<Game>Rows.random_playouts``). One draw, ``np.random.randint(0, n)`` over the ``n`` legal
    actions, the ``k``-th legal one in id order."""
    n = 0
    for a in range(mask.shape[0]):
        n += mask[a]
    k = np.random.randint(0, n)
    for a in range(mask.shape[0]):
        if mask[a]:
            if k == 0:
                return a
            k -= 1
    return -1  # (no legal action: the caller's rows are never over)
