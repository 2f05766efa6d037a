"""Millone: the rules (RULES.md Part D, on Part B: ``docs/rules/millone.md``), written once for one game and
for a batch. The env's page (``tarot_env/envs/millone.py``) describes the game, its actions and observation.

A hand's phases: ``DISCARD`` (after the first deal, MIL-2.2, and the automatic claim, MIL-3: the non-dealer
discards 10, then the dealer, one card per decision; never an Honour or a King, MIL-2.4), ``SECOND_DISCARD``
(the dealer's 2 more after the stock is dealt, MIL-2.5, 2.6), ``PLAY`` (20 tricks of 2, MIL-4.1, 4.2, B.4),
``GAME_OVER`` (MIL-6.1, MIL-3, or ``max_hands`` hands).

Decisions the rules page leaves to the code, numbered 1-7 where the code cites them (the Matto's payment:
1-4, the claim: 5, the ``max_hands`` cap: 6, the next game: 7): ``docs/environments.md``, "Millone".

**One engine** (``docs/architecture.md``): the state is :class:`MilloneRows`, the rules are compiled kernels
over rows and a few :class:`MilloneRows` methods; :class:`MilloneGame` runs them on one row, ``MilloneVec`` on many.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np
from numba import njit

from ..cards import BOLOGNESE, Pack
from ..config import Config, option
from ..engine import (
    NUM_SIGNALS,
    Layout,
    TrickGame,
    _tables,
    logged_tricks,
    row_call,
    row_number,
    written_into,
)
from ..kernels import NO_SUIT, beats, legal_play, play_tables, shown_voids, uniform_legal
from ..vector.base import Rows, pack_cards, unpack_cards
from ..vector.combo_cache import ComboCache, write_view_sparse
from ..vector.pcg import permutation, stream_arrays
from ..vector.sparse import bounded_width, finish, put, put_cards, put_flag, put_one
from . import combos
from .combos import (
    COMBO_SCALE,
    ComboTables,
    card_points,
    cheapest_card,
    combo_points_many,
    combo_tables,
    evaluate_many,
    popcount,
)

# --- game facts (RULES.md Part D), declared once -----------------------------------------------------
N = BOLOGNESE.size  # 62 cards (MIL-1.1, B.1)
PLAYERS = 2
TRICKS = 20  # MIL-4.1: 20 tricks of 2
PACKET = 5  # MIL-2.2: packets of 5
FIRST_ROUNDS = 4  # MIL-2.2: four rounds in the first phase
DEALER_LAST_PACKET = 7  # MIL-2.2: the dealer takes 7 in the last first-phase round
SECOND_ROUNDS = 2  # MIL-2.5: two more rounds of 5 each
FIRST_DISCARD = 10  # MIL-2.4: each player discards 10
SECOND_DISCARD = 2  # MIL-2.6: the dealer discards 2 more
FIRST_DEAL = (FIRST_ROUNDS * PACKET, (FIRST_ROUNDS - 1) * PACKET + DEALER_LAST_PACKET)  # 20, 22
STOCK_SIZE = N - sum(FIRST_DEAL)  # 20
MAX_HAND = FIRST_DEAL[1]  # 22: the most cards a hand ever holds
LAST_TRICK_BONUS = 6  # B.3.5
TARGET = 1000  # MIL-6.1: the game goes to 1000
NUM_ACTIONS = N + NUM_SIGNALS  # card ids 0..61 in every phase; 62..64 the engine's signals (never legal)
assert sum(FIRST_DEAL) + STOCK_SIZE == N and STOCK_SIZE == SECOND_ROUNDS * 2 * PACKET  # MIL-2.7

_id = BOLOGNESE.parse
MATTO = BOLOGNESE.excuse
VALUE = BOLOGNESE.value  # B.3.1
HONOURS = BOLOGNESE.mask("Angel World Begato Matto".split())  # MIL-1.2
KINGS = BOLOGNESE.mask("KD KC KS KB".split())
DISCARDABLE = ~(HONOURS | KINGS)  # MIL-2.4: no Honours, no Kings
DISCARDABLE.setflags(write=False)
EMPTY = VALUE == 1  # MIL-1.2: an "empty card" is worth 1 point (a scartino)
EMPTY.setflags(write=False)


def _exchange_rank() -> np.ndarray:
    """Decision 1's fixed tie-break order: lower rank is given first."""
    names = (
        [f"{r}{s}" for s in "DCSB" for r in ("10", "9", "8", "7", "6")]  # in no combination
        + [f"T{k}" for k in range(5, 17)] + ["Moon", "Sun"]             # the Grande's tail first
        + [f"Moor{i}" for i in range(1, 5)] + [f"A{s}" for s in "DCSB"]
        + [f"{r}{s}" for r in "JCQK" for s in "DCSB"]
        + ["Begato", "World", "Angel", "Matto"]
    )
    rank = np.empty(N, dtype=np.int64)
    rank[[_id(n) for n in names]] = np.arange(N)
    assert sorted(names) == sorted(BOLOGNESE.names)
    return rank


EXCHANGE_RANK = _exchange_rank()


def _uniform_pack() -> Pack:
    """M-3 variant: coins and cups pips rank like the long suits (10 high … Ace low); same ids."""
    strength = BOLOGNESE.strength.copy()
    for s in "DC":
        for i, r in enumerate(["K", "Q", "C", "J", "10", "9", "8", "7", "6", "A"]):
            strength[_id(r + s)] = 10 - i
    strength.setflags(write=False)
    return dataclasses.replace(BOLOGNESE, key="bolognese-uniform-suits", strength=strength)


BOLOGNESE_UNIFORM = _uniform_pack()


# Decision 1 in card bit sets (one uint64 per pile, bit c = card c), compiled: the rule of the
# kernels below (``_step``, ``MilloneRows.settle_matto``) and of ``fool_payment``.
_BIT = np.left_shift(np.uint64(1), np.arange(N, dtype=np.uint64))
EMPTY_BITS = np.uint64(np.bitwise_or.reduce(_BIT[EMPTY]))
MATTO_BIT = _BIT[MATTO]
VALUE_BITS = np.array([np.bitwise_or.reduce(_BIT[VALUE == v], initial=np.uint64(0))  # the cards worth v
                       for v in range(int(VALUE.max()) + 1)], dtype=np.uint64)


@njit(cache=True, nogil=True)
def payment_candidates(pile: np.uint64, empty_only: bool) -> np.uint64:
    """The cards of ``pile`` (a uint64 set) that may pay for the Matto (decision 1): during the play
    (``empty_only``) its empty cards (value 1, MIL-4.3); at the end of the hand its lowest-valued
    cards (M-5). Never the Matto itself."""
    cards = pile & ~MATTO_BIT
    if empty_only:
        return cards & EMPTY_BITS
    for v in range(VALUE_BITS.shape[0]):  # the lowest value held
        if cards & VALUE_BITS[v]:
            return cards & VALUE_BITS[v]
    return cards


@njit(cache=True, nogil=True)
def fool_payment_bits(pile: np.uint64, empty_only: bool, moors_double_count: bool, tables) -> int:
    """Decision 1 on a uint64 pile: of :func:`payment_candidates`, the card whose loss costs the pile
    the fewest combination points (B.5, ``combos.cheapest_card`` over ``combos.combo_tables()``),
    ties by ``EXCHANGE_RANK``; -1 where none."""
    return cheapest_card(pile, payment_candidates(pile, empty_only), EXCHANGE_RANK, moors_double_count,
                         np.int64(2), tables)  # (an int64 2, as in _observe)


def fool_payment(pile: np.ndarray, *, empty_only: bool, moors_double_count: bool = True) -> int:
    """Decision 1: the card a pile (bool[62]) gives for the Matto, or -1 where none (:func:`fool_payment_bits`,
    the engine's rule): during the play the payer's cards **won in tricks** (``empty_only``, MIL-4.3), at the
    end of the hand his whole pile, discards included (M-5)."""
    pile = np.uint64(pack_bits(pile))
    return int(fool_payment_bits(pile, bool(empty_only), bool(moors_double_count), combo_tables()))


PLAY_ON = -2  # game_results: no winner yet, the game goes on


def game_results(scores, hands_played, max_hands: int) -> np.ndarray:
    """MIL-6.1 after a hand, for one game (``scores`` [2]) or many ([..., 2]): the winning seat,
    -1 for a draw, or ``PLAY_ON``.

    The first to 1000 wins; if both reach it, the higher score; equal scores play another hand
    (M-7). After ``max_hands`` hands without a winner the game is a draw (decision 6).
    """
    scores = np.asarray(scores, dtype=np.int64)
    decided = (scores.max(-1) >= TARGET) & (scores[..., 0] != scores[..., 1])
    return np.where(decided, scores.argmax(-1), np.where(np.asarray(hands_played) >= max_hands, -1, PLAY_ON))


def claimants(claims) -> np.ndarray:
    """MIL-3 for one deal (``claims`` [2]: score + combinations in hand) or many ([..., 2]): the seat
    that wins the game at once, or -1. A claim reaching 1000 wins (MIL-3.1); of two, the higher
    (MIL-3.2); equal claims are no claim (MIL-3.3)."""
    claims = np.asarray(claims, dtype=np.int64)
    able = claims >= TARGET
    fire = able.any(-1) & ~(able.all(-1) & (claims[..., 0] == claims[..., 1]))
    return np.where(fire, claims.argmax(-1), -1)


class Phase(IntEnum):
    DISCARD = 0
    SECOND_DISCARD = 1
    PLAY = 2
    GAME_OVER = 3


@dataclass(frozen=True)
class MilloneConfig(Config):
    game = "millone"
    round_suits_inverted: bool = option(True, doc="coins and cups pips rank A 6 7 8 9 10 (B.2.3); "
                                                  "false: like the long suits (D.8 M-3)")
    moors_double_count: bool = option(True, doc="a Moor counts in the Grande and in the Moors; "
                                                "false: in one, the best division (B.5.3.7)")
    max_hands: int = option(100, lo=1, hi=100000, doc="hands after which an undecided game ends as a "
                                                      "draw, truncated (MIL-6.1, M-7)")
    first_dealer: int = option(-1, lo=-1, hi=1, doc="seat that deals first; -1 = at random (MIL-2.1)")


# Observation of one seat (seat-relative: 0 = me, 1 = the opponent): each section's content, scale and clauses
# are the env's page (tarot_env/envs/millone.py, "Observation"); v1 appended shown_void (H.1.1), v2 pile_combos
# and combo_gain (issue #12, B.5), so that the earlier sections keep their offsets.
OBS = Layout([
    ("hand", N), ("my_discards", N), ("played", 2 * N), ("trick", 2 * N), ("won", 2 * N), ("exchanged", N),
    ("claim_shown", 2 * N), ("seat_from_dealer", 2), ("leader", 2), ("hand_sizes", 2), ("stock_size", 1),
    ("tricks_won", 2), ("exchange_owed", 2), ("scores", 2), ("hands_played", 1), ("phase", 4),
    ("shown_void", 2 * 5), ("pile_combos", 2), ("combo_gain", 2 * N),
])
OBS_SIZE = OBS.size
OBS_V0_SIZE = OBS.shown_void.start  # the v0 observation is this prefix (scripts/migrate_policy.py)
OBS_V1_SIZE = OBS.pile_combos.start  # the v1 observation is this prefix (scripts/migrate_policy.py)
_TAIL = OBS.phase.stop - OBS.leader.start  # the scalar sections from leader to phase
assert OBS_V0_SIZE == 62 * 11 + 2 + 2 + 2 + 1 + 2 + 2 + 2 + 1 + 4 == 700
assert OBS_V1_SIZE == OBS_V0_SIZE + 10 == 710 and OBS_SIZE == OBS_V1_SIZE + 2 + 2 * N == 836

# Full-information state for centralised critics (absolute seats).
STATE = Layout([
    ("hands", 2 * N), ("discards", 2 * N), ("stock", N), ("played", 2 * N), ("trick", 2 * N),
    ("won", 2 * N), ("exchanged", N), ("claim_shown", 2 * N),
    ("dealer", 2), ("current", 2), ("leader", 2), ("hand_sizes", 2), ("stock_size", 1),
    ("tricks_won", 2), ("exchange_owed", 2), ("scores", 2), ("hands_played", 1), ("phase", 4),
    ("shown_void", 2 * 5),  # v1, absolute seats
])
STATE_SIZE = STATE.size
STATE_V0_SIZE = STATE.shown_void.start
assert STATE.phase.stop - STATE.leader.start == _TAIL and OBS.phase.start - OBS.leader.start == 12
assert [n for n, _ in OBS.sections[-11:-2]] == [n for n, _ in STATE.sections[-9:]]  # the shared tail
assert STATE_V0_SIZE == 62 * 14 + 2 * 7 + 1 + 1 + 4 == 888 and STATE_SIZE == 898
# each version's observation / state is a prefix of the current one (scripts/migrate_policy.py)
OBS_SIZES = {"v0": OBS_V0_SIZE, "v1": OBS_V1_SIZE, "v2": OBS_SIZE}
STATE_SIZES = {"v0": STATE_V0_SIZE, "v1": STATE_SIZE, "v2": STATE_SIZE}  # v2 left the state as it was


# --- the kernels' tables, state and constants -------------------------------------------------------
_GATHERED = OBS.seat_from_dealer.start  # the observation's card sections before the scalar features
DISCARD, SECOND, PLAY, OVER = (int(p) for p in (Phase.DISCARD, Phase.SECOND_DISCARD, Phase.PLAY,
                                                 Phase.GAME_OVER))

NO_CARD = N  # "nothing led yet"
ALL_DISCARDS = FIRST_DISCARD + SECOND_DISCARD  # the dealer's 12
HAND_KIND, CLAIM_KIND = 0, 1  # what the last history entry of a row is
ZERO = np.uint64(0)
assert N <= 64

pack_bits = pack_cards  # bool[..., 62] -> uint64[...]


def unpack_bits(bits: np.ndarray) -> np.ndarray:
    """uint64[...] card sets -> bool[..., 62]."""
    return unpack_cards(bits, N)


DISCARD_BITS = pack_bits(DISCARDABLE)  # MIL-2.4, MIL-2.6: no Honours, no Kings
# The most nonzero features an observation can have, section by section (obs_format="sparse" pads each
# row to it; tests/test_sparse_obs.py checks seeded games against it): a hand holds at most 22 cards
# (MIL-2.2), a player discards at most 12 (MIL-2.4, 2.6), 20 tricks of 2 are played (MIL-4.1), the trick
# on the table shows at most the card led, a claim shows at most the claimants' two hands (MIL-3); a card
# shows at most twice in ``won`` and ``combo_gain`` together (in a pile once, else what it would add to
# each pile), hence N for each; of the scalars a one-hot is one feature, the others count whole.
SPARSE_BOUNDS = {"hand": MAX_HAND, "my_discards": ALL_DISCARDS, "played": 2 * TRICKS, "trick": 1, "won": N,
                 "exchanged": 1, "claim_shown": 2 * MAX_HAND, "seat_from_dealer": 1, "leader": 1, "hand_sizes": 2,
                 "stock_size": 1, "tricks_won": 2, "exchange_owed": 1, "scores": 2, "hands_played": 1, "phase": 1,
                 "shown_void": 2 * 5, "pile_combos": 2, "combo_gain": N}
SPARSE_WIDTH = bounded_width(OBS, SPARSE_BOUNDS)  # 268, for every option set


# Deck position -> receiver (0 = the non-dealer, 1 = the dealer): the first phase of the deal (MIL-2.2: four
# rounds of 5, non-dealer first, the dealer taking 7 last) and the second (MIL-2.5: two rounds of 5 each).
FIRST_TO = np.repeat(np.arange(2 * FIRST_ROUNDS) % 2, [PACKET] * (2 * FIRST_ROUNDS - 1) + [DEALER_LAST_PACKET])
SECOND_TO = np.repeat(np.arange(2 * SECOND_ROUNDS) % 2, PACKET)
assert len(FIRST_TO) == sum(FIRST_DEAL) and len(SECOND_TO) == STOCK_SIZE
FIRST_N = len(FIRST_TO)  # 42 cards dealt before the claim check; the rest is the stock

# the scalar features after the card sections (seat-relative), offsets from their start
Q_DEALER, Q_LEADER, Q_HS, Q_STOCK, Q_TW, Q_OWED, Q_SCORES, Q_HP, Q_PHASE = (
    getattr(OBS, name).start - _GATHERED for name in (
        "seat_from_dealer", "leader", "hand_sizes", "stock_size", "tricks_won", "exchange_owed",
        "scores", "hands_played", "phase"))


# section offsets of the observation (seat-relative) and of the state (absolute seats)
O_HAND, O_DISC, O_PLAYED, O_TRICK, O_WON, O_EXCH, O_CLAIM, O_VOID, O_PC, O_CG = (
    getattr(OBS, name).start for name in ("hand", "my_discards", "played", "trick", "won", "exchanged",
                                           "claim_shown", "shown_void", "pile_combos", "combo_gain"))
S_HANDS, S_DISC, S_STOCK, S_PLAYED, S_TRICK, S_WON, S_EXCH, S_CLAIM, S_DEALER, S_CURRENT, S_LEADER, S_VOID = (
    getattr(STATE, name).start for name in ("hands", "discards", "stock", "played", "trick", "won", "exchanged",
                                             "claim_shown", "dealer", "current", "leader", "shown_void"))
SUITS_SHOWN = 5  # shown_void: 4 suits and trumps per seat (H.1.1)
assert O_HAND == 0 and O_VOID + PLAYERS * SUITS_SHOWN == O_PC and O_CG == O_PC + 2 and O_CG + 2 * N == OBS.size
assert S_VOID + PLAYERS * SUITS_SHOWN == STATE.size
WHOLE, WON_ONLY = 0, 1  # ComboCache: pile 2 * seat + WHOLE is the seat's pile, 2 * seat + WON_ONLY its won cards


# --- the kernels' tables and state ----------------------------------------------------------------
class Tables(NamedTuple):
    """What the kernels read, built once per pack (:func:`tables`): the pack's card-play tables
    (``kernels.play_tables``: ``bit``, ``suit``, ``suit_bits``, ``beats``, ``led_after``; the trick
    order follows ``round_suits_inverted``, M-3) and the combination tables of the Matto payment and of the
    v2 features (``exchange``: ``combos.combo_tables()``)."""

    bit: np.ndarray
    suit: np.ndarray
    suit_bits: np.ndarray
    beats: np.ndarray
    led_after: np.ndarray
    exchange: ComboTables


@functools.cache
def tables(pack_key: str) -> Tables:
    """The kernels' tables of the pack ``pack_key`` (BOLOGNESE's, or BOLOGNESE_UNIFORM's for M-3), built once."""
    t = play_tables(BOLOGNESE if pack_key == BOLOGNESE.key else BOLOGNESE_UNIFORM)
    return Tables(t.bit, t.suit, t.suit_bits, t.beats, t.led_after, combo_tables())


# The declared state of ``B`` games: each field's name, shape per row and dtype (the arrays are the
# attributes of the same names of :class:`MilloneRows`, batch axis first). Card sets are uint64 (bit ``c`` =
# card ``c``); ``lead`` is the card led (``NO_CARD``: none); ``voids`` holds bit ``5 * seat + suit`` of
# ``shown_void``; ``deck`` is the hand's deck order (the stock is dealt from it, MIL-2.5); ``disc_log`` /
# ``disc_n`` each seat's discards in order; ``log_*`` the tricks (int8: small, in cache).
_SEATS = (PLAYERS,)
STATE_FIELDS = (
    ("dealer", (), np.int64), ("current", (), np.int64), ("leader", (), np.int64), ("phase", (), np.int64),
    ("hands_played", (), np.int64), ("scores", _SEATS, np.int64), ("deck", (N,), np.int64), ("lead", (), np.int64),
    ("lead_seat", (), np.int64), ("tricks", (), np.int64), ("tricks_won", _SEATS, np.int64),
    ("hand_sizes", _SEATS, np.int64), ("hand_bits", _SEATS, np.uint64), ("played_bits", _SEATS, np.uint64),
    ("won_bits", _SEATS, np.uint64), ("disc_bits", _SEATS, np.uint64), ("claim_bits", _SEATS, np.uint64),
    ("stock_bits", (), np.uint64), ("voids", (), np.int64), ("disc_n", _SEATS, np.int64),
    ("disc_log", (PLAYERS, ALL_DISCARDS), np.int8), ("log_seat", (TRICKS, PLAYERS), np.int8),
    ("log_card", (TRICKS, PLAYERS), np.int8), ("log_winner", (TRICKS,), np.int8), ("excuse_owner", (), np.int64),
    ("exchange_card", (), np.int64), ("exchange_owed", (), np.int64), ("exchange_from_discards", (), np.bool_),
)
# the arrays of a row: the kernels' State, with the row's random stream (numpy's PCG64, tarot_env.vector.pcg)
State = NamedTuple("State", [(k, np.ndarray) for k in [f for f, _, _ in STATE_FIELDS] + ["rng_state", "rng_inc",
                                                                                         "rng_half"]])


# --- the kernels ------------------------------------------------------------------------------------
# Each kernel takes the State and the Tables and loops over its rows with scalar code, in short inlined
# functions by rule; compiled without reference counting (``_nrt=False``), so reading a field costs nothing.
@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _pay(disc_bits, won_bits, exchange_from_discards, exchange_card, bit, b, payer, card):
    """The Matto's payment: ``card`` moves from the payer's pile (his won cards; his discards only at
    the end of the hand) to the receiver's, in sight (decision 2: it shows in the receiver's ``won``
    and in ``exchanged``)."""
    x = bit[card]
    exchange_from_discards[b] = (disc_bits[b, payer] & x) != ZERO
    disc_bits[b, payer] &= ~x
    won_bits[b, payer] &= ~x
    won_bits[b, 1 - payer] |= x
    exchange_card[b] = card


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _put_tail(cols, vals, n, at, st, b, seat, max_hands):
    """The scalar features from ``leader`` to ``phase`` of ``seat``'s view of row ``b`` at their observation
    offsets from ``at`` (where ``seat_from_dealer`` starts; the state's tail is the same, seen from seat 0):
    the one-hots by their set feature, the others by their float64 quotients (rounded once to float32)."""
    other = 1 - seat
    n = put_one(cols, vals, n, at + Q_LEADER + ((st.leader[b] - seat) & 1))
    n = put(cols, vals, n, at + Q_HS, st.hand_sizes[b, seat] / MAX_HAND)
    n = put(cols, vals, n, at + Q_HS + 1, st.hand_sizes[b, other] / MAX_HAND)
    n = put(cols, vals, n, at + Q_STOCK, popcount(st.stock_bits[b]) / STOCK_SIZE)
    n = put(cols, vals, n, at + Q_TW, st.tricks_won[b, seat] / TRICKS)
    n = put(cols, vals, n, at + Q_TW + 1, st.tricks_won[b, other] / TRICKS)
    owed = st.exchange_owed[b]
    if owed >= 0:  # decision 3: by me, or by the opponent
        n = put_one(cols, vals, n, at + Q_OWED + ((owed - seat) & 1))
    n = put(cols, vals, n, at + Q_SCORES, st.scores[b, seat] / TARGET)
    n = put(cols, vals, n, at + Q_SCORES + 1, st.scores[b, other] / TARGET)
    n = put(cols, vals, n, at + Q_HP, min(st.hands_played[b] / max_hands, 1.0))
    return put_one(cols, vals, n, at + Q_PHASE + st.phase[b])


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _observe(cols, vals, st, tb, b, s, max_hands, cc, mdc):
    """Seat ``s``'s observation of row ``b`` (RULES.md H.1, H.1.1, H.2, H.4; seat-relative: me, then the
    opponent), laid out by ``OBS``: its nonzero features appended to one row's ``cols`` / ``vals``
    (``tarot_env.vector.sparse``) in column order; returns their count. The dense observation is these
    features in a zeroed row (:func:`_scatter`). The v2 sections come from the values the ``ComboCache``
    ``cc`` keeps (``combo_cache.write_view_sparse``: ``combos.pile_gains_kept`` with the B.5 tables)."""
    o = 1 - s
    n = put_cards(cols, vals, 0, st.hand_bits[b, s], O_HAND)
    n = put_cards(cols, vals, n, st.disc_bits[b, s], O_DISC)  # my discards only (H.4)
    n = put_cards(cols, vals, n, st.played_bits[b, s], O_PLAYED)
    n = put_cards(cols, vals, n, st.played_bits[b, o], O_PLAYED + N)
    c = st.lead[b]  # the trick on the table: at most the card led (the second card closes it)
    if c != NO_CARD:
        n = put_one(cols, vals, n, O_TRICK + (0 if st.lead_seat[b] == s else N) + c)
    n = put_cards(cols, vals, n, st.won_bits[b, s], O_WON)
    n = put_cards(cols, vals, n, st.won_bits[b, o], O_WON + N)
    if st.exchange_card[b] >= 0:  # decision 2: the payment is public
        n = put_one(cols, vals, n, O_EXCH + st.exchange_card[b])
    n = put_cards(cols, vals, n, st.claim_bits[b, s], O_CLAIM)
    n = put_cards(cols, vals, n, st.claim_bits[b, o], O_CLAIM + N)
    n = put_one(cols, vals, n, _GATHERED + Q_DEALER + ((s - st.dealer[b]) & 1))
    n = _put_tail(cols, vals, n, _GATHERED, st, b, s, max_hands)
    v = st.voids[b]
    for k in range(SUITS_SHOWN):
        n = put_flag(cols, vals, n, O_VOID + k, (v >> (s * SUITS_SHOWN + k)) & 1)
    for k in range(SUITS_SHOWN):
        n = put_flag(cols, vals, n, O_VOID + SUITS_SHOWN + k, (v >> (o * SUITS_SHOWN + k)) & 1)
    # v2: my whole pile (won cards and discards) and the opponent's won cards (suit_min_natural 2 as an int64, not a
    # literal: one compile of the B.5 scorer)
    return write_view_sparse(cc, b, 2 * s + WHOLE, st.won_bits[b, s] | st.disc_bits[b, s], 2 * o + WON_ONLY,
                             st.won_bits[b, o], mdc, np.int64(2), tb.exchange, cols, vals, n, O_PC)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _scatter(out, cols, vals, n):
    """``out`` := the dense form of ``n`` nonzero features: zeros, and ``vals[i]`` at ``cols[i]``."""
    for j in range(out.shape[0]):
        out[j] = 0.0
    for i in range(n):
        out[cols[i]] = vals[i]


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _legal(mask, hand, playing, lead, led_after, suit_bits):
    """``mask[:62]`` := the cards of ``hand`` that may be played: MIL-4.2 / B.4 in play
    (``kernels.legal_play``: follow, else trump, else anything; the Matto always), MIL-2.4 / 2.6 in the
    discards (anything but Honours and Kings)."""
    if playing:
        legal = legal_play(hand, NO_SUIT if lead == NO_CARD else led_after[NO_SUIT * N + lead], suit_bits)
    else:
        legal = hand & DISCARD_BITS
    for c in range(N):
        mask[c] = ((legal >> np.uint64(c)) & np.uint64(1)) != ZERO


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _encode(st, tb, b, obs, with_obs, sp, with_sparse, mask, seat, max_hands, cc, mdc):
    """Row ``b``'s next decision: the seat to act, its legal mask (:func:`_legal`) and, if asked, its
    observation (:func:`_observe`): in sparse form into row ``b`` of ``sp`` (``cols``, ``vals``, ``counts``;
    ``with_sparse``, ``obs_format="sparse"``), or into ``obs[b]`` (``with_obs``; ``sp`` is then a one-row
    scratch, ``MilloneRows._outputs``)."""
    s = st.current[b]
    seat[b] = s
    if with_obs or with_sparse:
        cols, vals, counts = sp
        k = b if with_sparse else 0
        n = _observe(cols[k], vals[k], st, tb, b, s, max_hands, cc, mdc)
        if with_sparse:
            finish(cols, vals, counts, b, n)
        else:
            _scatter(obs[b], cols[0], vals[0], n)
    _legal(mask[b], st.hand_bits[b, s], st.phase[b] == PLAY, st.lead[b], tb.led_after, tb.suit_bits)


@njit(cache=True, nogil=True, _nrt=False)
def _encode_rows(st, tb, rows, obs, mask, seat, max_hands, cc, mdc, with_obs, sp, with_sparse):
    """:func:`_encode` of each of ``rows``."""
    for j in range(rows.shape[0]):
        _encode(st, tb, rows[j], obs, with_obs, sp, with_sparse, mask, seat, max_hands, cc, mdc)


@njit(cache=True, nogil=True, _nrt=False)
def _observe_rows(st, tb, seats, out, max_hands, cc, mdc, scratch):
    """``out[b]`` := seat ``seats[b]``'s observation of row ``b`` (:func:`_observe`, dense; ``scratch``: a
    one-row sparse buffer): ``MilloneGame.observation``, every seat's view of a batch (tests)."""
    cols, vals = scratch[0][0], scratch[1][0]
    for b in range(seats.shape[0]):
        _scatter(out[b], cols, vals, _observe(cols, vals, st, tb, b, seats[b], max_hands, cc, mdc))


@njit(cache=True, nogil=True, _nrt=False)
def _deal(st, tb, rows, dealers, decks, shuffle):
    """MIL-2.2: a new hand in each of ``rows`` from its deck (62 ids; ``shuffle``: first drawn from the row's
    own stream, ``rng.permutation(62)``, ``TrickGame.shuffled_pack``): four rounds of 5, non-dealer first, the
    dealer taking 7 in the last; the other 20 cards are the stock (seen by no one, H.4). The non-dealer
    discards first (MIL-2.4)."""
    for j in range(rows.shape[0]):
        b, d = rows[j], dealers[j]
        if shuffle:
            permutation(st.rng_state, st.rng_inc, st.rng_half, b, decks[j])
        for a in (st.hand_bits, st.played_bits, st.won_bits, st.disc_bits, st.claim_bits):
            a[b, :] = ZERO
        st.stock_bits[b] = ZERO
        for i in range(N):
            c = st.deck[b, i] = decks[j, i]
            if i >= FIRST_N:
                st.stock_bits[b] |= tb.bit[c]
            else:  # FIRST_TO: 0 the non-dealer, 1 the dealer
                st.hand_bits[b, d if FIRST_TO[i] == 1 else 1 - d] |= tb.bit[c]
        st.hand_sizes[b, 1 - d], st.hand_sizes[b, d] = FIRST_DEAL
        st.dealer[b], st.current[b], st.leader[b], st.phase[b], st.lead[b] = d, 1 - d, 1 - d, DISCARD, NO_CARD
        st.exchange_from_discards[b] = False
        for a in (st.lead_seat, st.tricks, st.voids):
            a[b] = 0
        for a in (st.excuse_owner, st.exchange_card, st.exchange_owed):
            a[b] = -1
        for a in (st.tricks_won, st.disc_n):
            a[b, :] = 0


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _discard_card(st, tb, b, s, c):
    """MIL-2.4: seat ``s``'s card ``c`` (already out of its hand) goes face down into its pile (seen by it
    alone); after the first discards of the dealer the stock is dealt (MIL-2.5, :func:`_deal_stock`), after
    all of them the play starts (MIL-4.1: the non-dealer leads)."""
    d = st.dealer[b]
    st.disc_bits[b, s] |= tb.bit[c]
    k = st.disc_n[b, s]
    st.disc_log[b, s, k] = c
    k += 1
    st.disc_n[b, s] = k
    if st.phase[b] == DISCARD:
        if k == FIRST_DISCARD:
            if s != d:
                st.current[b] = d  # the dealer discards 10 next
            else:
                _deal_stock(st, tb, b, d)
    elif k == ALL_DISCARDS:
        st.phase[b] = PLAY
        st.current[b] = 1 - d  # MIL-4.1: the non-dealer leads
        st.leader[b] = 1 - d


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _deal_stock(st, tb, b, d):
    """MIL-2.5: two more rounds of 5 each from the stock, non-dealer first; MIL-2.6: the dealer discards 2
    more."""
    for i in range(STOCK_SIZE):
        card = st.deck[b, FIRST_N + i]
        st.hand_bits[b, d if SECOND_TO[i] == 1 else 1 - d] |= tb.bit[card]
    st.stock_bits[b] = ZERO
    st.hand_sizes[b, 0] += STOCK_SIZE // 2
    st.hand_sizes[b, 1] += STOCK_SIZE // 2
    st.phase[b] = SECOND


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _play_card(st, tb, b, s, c, mdc):
    """MIL-4.2: seat ``s``'s card ``c`` (already out of its hand) goes to the trick: it leads it, or it
    closes it (:func:`_close_trick`). Returns whether that was the hand's last trick."""
    st.played_bits[b, s] |= tb.bit[c]
    if c == MATTO:
        st.excuse_owner[b] = s
    if st.lead[b] == NO_CARD:  # the first card of the trick
        st.lead[b] = c
        st.lead_seat[b] = s
        st.current[b] = 1 - s
        return False
    return _close_trick(st, tb, b, s, c, mdc)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _close_trick(st, tb, b, s, c, mdc):
    """Seat ``s``'s card ``c`` answers the card led: the voids it shows (H.1.1), the winner (B.4.4), the
    cards to the winner's pile but the Matto (B.4.5), the trick logged, the winner leading (MIL-4.1), and
    the Matto's payment when it is due (MIL-4.3, :func:`_matto_debt`). Returns whether it was the hand's
    last trick (MIL-4.1: 20 tricks; the hand is then scored in Python, ``MilloneRows.end_hands``)."""
    bit, won_bits = tb.bit, st.won_bits
    c1, s1 = st.lead[b], st.lead_seat[b]
    # H.1.1: not following the suit led shows a void (kernels.shown_voids; the Matto shows nothing)
    v1, v2 = shown_voids(tb.led_after[NO_SUIT * N + c1], tb.suit[c])
    if v1 >= 0:
        st.voids[b] |= 1 << (s * SUITS_SHOWN + v1)
    if v2 >= 0:
        st.voids[b] |= 1 << (s * SUITS_SHOWN + v2)
    # B.4.4 (kernels.beats): the first card that is not the Matto takes the lead, the second may beat it
    best, w = N, -1
    if beats(tb.beats, N, N, c1):
        best, w = c1, s1
    if beats(tb.beats, N, best, c):
        w = s
    t = st.tricks[b]
    st.log_card[b, t, 0] = c1
    st.log_card[b, t, 1] = c
    st.log_seat[b, t, 0] = s1
    st.log_seat[b, t, 1] = s
    st.log_winner[b, t] = w
    # the winner takes both cards, except the Matto: to its player's pile (B.4.5)
    won_bits[b, s1 if c1 == MATTO else w] |= bit[c1]
    won_bits[b, s if c == MATTO else w] |= bit[c]
    st.tricks_won[b, w] += 1
    st.leader[b] = w  # MIL-4.1: the winner leads next
    st.current[b] = w
    st.lead[b] = NO_CARD
    st.tricks[b] = t + 1
    if c1 == MATTO or c == MATTO:  # its player owes an empty card (the Matto never wins)
        st.exchange_owed[b] = s1 if c1 == MATTO else s
    _matto_debt(st, tb, b, mdc)
    return t + 1 == TRICKS


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _matto_debt(st, tb, b, mdc):
    """MIL-4.3 (decisions 1, 3): the debtor pays as soon as he has won an empty card: the one of his cards
    won in tricks that decision 1 picks (``fool_payment_bits``, :func:`_pay`)."""
    owed = st.exchange_owed[b]
    if owed >= 0 and st.won_bits[b, owed] & EMPTY_BITS:
        card = fool_payment_bits(st.won_bits[b, owed], True, mdc, tb.exchange)
        _pay(st.disc_bits, st.won_bits, st.exchange_from_discards, st.exchange_card, tb.bit, b, owed, card)
        st.exchange_owed[b] = -1


@njit(cache=True, nogil=True, _nrt=False)
def _step(st, tb, actions, mdc, max_hands, obs, mask, seat, pending, cc, with_obs, sp, with_sparse):
    """One action per row, for its acting seat: a discard (:func:`_discard_card`) or a card played
    (:func:`_play_card`); then, in the same pass, the row's next decision (:func:`_encode`). The rows whose hand
    has ended (the 20th trick closed) go to ``pending`` for the end of the hand (``MilloneRows.end_hands``);
    returns how many."""
    current, phase, hand_bits, hand_sizes, bit = st.current, st.phase, st.hand_bits, st.hand_sizes, tb.bit
    n = 0
    for b in range(actions.shape[0]):
        c = actions[b]
        s = current[b]
        hand_bits[b, s] ^= bit[c]
        hand_sizes[b, s] -= 1
        if phase[b] != PLAY:
            _discard_card(st, tb, b, s, c)
        elif _play_card(st, tb, b, s, c, mdc):  # the hand is over: scored in Python (MilloneRows.end_hands)
            pending[n] = b
            n += 1
            continue
        _encode(st, tb, b, obs, with_obs, sp, with_sparse, mask, seat, max_hands, cc, mdc)
    return n


@njit(cache=True, nogil=True, _nrt=False)
def _states(st, out, max_hands, scratch):
    """``out`` (float32[B, 898]) := every row's ``MilloneGame.state_vector()`` (absolute seats), its nonzero
    features written as :func:`_observe` writes them (``scratch``: a one-row sparse buffer)."""
    cols, vals = scratch[0][0], scratch[1][0]
    for b in range(out.shape[0]):
        n = put_cards(cols, vals, 0, st.stock_bits[b], S_STOCK)
        for p in range(PLAYERS):
            n = put_cards(cols, vals, n, st.hand_bits[b, p], S_HANDS + p * N)
            n = put_cards(cols, vals, n, st.disc_bits[b, p], S_DISC + p * N)
            n = put_cards(cols, vals, n, st.played_bits[b, p], S_PLAYED + p * N)
            n = put_cards(cols, vals, n, st.won_bits[b, p], S_WON + p * N)
            n = put_cards(cols, vals, n, st.claim_bits[b, p], S_CLAIM + p * N)
        if st.lead[b] != NO_CARD:
            n = put_one(cols, vals, n, S_TRICK + st.lead_seat[b] * N + st.lead[b])
        if st.exchange_card[b] >= 0:
            n = put_one(cols, vals, n, S_EXCH + st.exchange_card[b])
        n = put_one(cols, vals, n, S_DEALER + st.dealer[b])
        n = put_one(cols, vals, n, S_CURRENT + st.current[b])  # rows are never over (auto-reset)
        n = _put_tail(cols, vals, n, S_LEADER - Q_LEADER, st, b, 0, max_hands)  # seen from seat 0
        for k in range(PLAYERS * SUITS_SHOWN):
            n = put_flag(cols, vals, n, S_VOID + k, (st.voids[b] >> k) & 1)
        _scatter(out[b], cols, vals, n)


@njit(cache=True, nogil=True)
def _random_playouts(st, tb, first, mdc, max_hands, no_obs, no_sparse, off, mask, seat, pending, cc, acts, seed, log):
    """``MilloneRows.random_playouts``: row ``b`` takes ``first[b]``, then uniformly random legal cards
    (``kernels.uniform_legal``) by the engine's own step (:func:`_step`, without observations) until the step
    that ends the rows' hands (every hand is the same number of moves, MIL-2.4, 2.6, 4.1): returns how many it
    ended (``pending[:n]``). ``log[b, i]`` := row ``b``'s ``i``-th action; ``mask``, ``seat``, ``acts``: scratch.
    ``off`` is False, passed in (a literal ``False`` here would compile :func:`_step` a second time)."""
    np.random.seed(seed)
    for b in range(first.shape[0]):
        acts[b] = first[b]
    for i in range(2 * FIRST_DISCARD + SECOND_DISCARD + PLAYERS * TRICKS):  # (the most moves a hand has)
        if i < log.shape[1]:
            for b in range(acts.shape[0]):
                log[b, i] = acts[b]
        n = _step(st, tb, acts, mdc, max_hands, no_obs, mask, seat, pending, cc, off, no_sparse, off)
        if n:
            return n
        for b in range(acts.shape[0]):
            acts[b] = uniform_legal(mask[b])
    return 0


# --- the declared state of B games, and the rules' bookkeeping between the kernels -------------------
ROW0 = np.zeros(1, dtype=np.int64)  # the row of a one-game state (never written)
_NO_OBS = np.zeros((1, 0), dtype=np.float32)  # the kernels' observation output when none is wanted
_NO_CC = ComboCache.empty(1, 2 * PLAYERS)  # ... and the v2 features' cache they then never read
# ... and their sparse output when none is wanted (``cols``, ``vals``, ``counts``)
NO_SPARSE = (np.zeros((0, 1), dtype=np.int32), np.zeros((0, 1), dtype=np.float32), np.zeros(0, dtype=np.int32))


def _scratch() -> tuple:
    """A one-row sparse buffer ``(cols, vals, counts)`` wide enough for any observation or state (each
    column at most once): where a dense row's features are written first (:func:`_scatter`)."""
    return np.zeros((1, STATE_SIZE), dtype=np.int32), np.zeros((1, STATE_SIZE), dtype=np.float32), np.zeros(1, np.int32)


# the record of a row's last history entry (a hand played out, MIL-5, or a claim, MIL-3): the source of
# MilloneGame.history's entries and of the final info's "last_result" (:func:`hand_record`)
RECORD_FIELDS = (
    ("kind", (), np.int64), ("hand", (), np.int64), ("dealer", (), np.int64), ("card_points", (2,), np.int64),
    ("last_trick", (), np.int64), ("combos", (2,), np.int64), ("scores", (2,), np.int64),
    ("tricks_won", (2,), np.int64), ("pile_sizes", (2,), np.int64), ("matto_owner", (), np.int64),
    ("matto_paid", (), np.int64), ("matto_deferred", (), np.int64), ("matto_surrendered", (), np.int64),
    ("disc_n", (2,), np.int64), ("claimant", (), np.int64), ("claims", (2,), np.int64),
    ("disc_log", (2, ALL_DISCARDS), np.int8), ("log_seat", (TRICKS, PLAYERS), np.int8),
    ("log_card", (TRICKS, PLAYERS), np.int8), ("log_winner", (TRICKS,), np.int8),
    ("shown", (), np.uint64),  # a claim's scoring cards, shown (MIL-3)
)


def record_arrays(B: int) -> dict[str, np.ndarray]:
    """Zeroed ``RECORD_FIELDS`` arrays for ``B`` rows."""
    return {k: np.zeros((B,) + shape, dtype=dt) for k, shape, dt in RECORD_FIELDS}


class MilloneRows(Rows):
    """The declared state of ``B`` Millone games: one array per field of ``STATE_FIELDS`` (batch axis first)
    as attributes of the same names, each row's random stream (``rng_*``, :mod:`tarot_env.vector.pcg`), the
    record of each row's last history entry (``last``, ``RECORD_FIELDS``) and the v2 features' cache
    (``_cc``). ``s`` is the State tuple the kernels take.

    The rules between the kernels are its methods over ``rows`` (int64 row indices): a new hand and its
    claim check (:meth:`start_hands`, MIL-2.2, MIL-3), the end of a hand (:meth:`end_hands`: MIL-4.3/4.4,
    D.5, MIL-6.1). ``MilloneGame`` holds one row (``game.row``); the batched engine ``MilloneVec`` is one."""

    one_row = False  # MilloneGame's row: its kernel calls skip the dispatcher once typed (``engine.row_call``)
    State = State
    ARRAYS = State._fields
    SHARED = ("config", "mdc", "max_hands", "pack_key", "one_row")

    def __init__(self, num_rows: int, config: MilloneConfig):
        self.config = config
        self._alloc(num_rows)

    def _alloc(self, B: int) -> None:
        cfg = self.config
        self.mdc = cfg.moors_double_count
        self.max_hands = cfg.max_hands
        self.pack_key = (BOLOGNESE if cfg.round_suits_inverted else BOLOGNESE_UNIFORM).key  # M-3
        for k, shape, dtype in STATE_FIELDS:
            setattr(self, k, np.zeros((B,) + shape, dtype=dtype))
        self.lead[:] = NO_CARD
        self.rng_state, self.rng_inc, self.rng_half = stream_arrays(B)
        self.last = record_arrays(B)
        self._pending = np.zeros(B, dtype=np.int64)  # _step's rows whose hand ended
        # the v2 features' values per row and pile (no pile valued yet: all-ones keys, never a real set)
        self._cc = ComboCache.empty(B, 2 * PLAYERS)
        self._obs_scratch = _scratch()
        self._bind()

    @property
    def tb(self) -> Tables:
        """The kernels' tables of the rows' pack (the trick order follows ``round_suits_inverted``, M-3)."""
        return tables(self.pack_key)

    def _extras_from(self, old: MilloneRows, rows_of, index: np.ndarray | None) -> None:
        """The record of the last history entry (of the rows), ``_step``'s scratch, the v2 features' cache
        (a selection of rows starts it empty)."""
        self.last = {k: rows_of(v) for k, v in old.last.items()}
        self._pending = np.zeros(len(self.dealer), dtype=np.int64)
        self._obs_scratch = _scratch()
        if index is None and "_cc" in vars(old):
            self._cc = ComboCache(*(a.copy() for a in old._cc))
        # else it starts empty, made when first read (__getattr__): a search's copies of a world that step
        # without observations (random_playouts) never make it

    def __getattr__(self, name: str):
        """``_cc``, the v2 features' cache, made empty when first read (a selection of rows starts without)."""
        if name == "_cc":
            self._cc = ComboCache.empty(len(self.dealer), 2 * PLAYERS)
            return self._cc
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- the kernels on these rows ------------------------------------------------------------------
    def step_rows(self, actions: np.ndarray, obs: np.ndarray, mask: np.ndarray, seat: np.ndarray,
                  with_obs: bool, sparse: tuple | None = None) -> int:
        """:func:`_step`: one action per row (every row), then each row's next seat, mask and (``with_obs``)
        observation (``sparse``: ``(cols, vals, counts)``, in sparse form there instead); returns how many rows
        ended their hand (``_pending[:n]``, for :meth:`end_hands`)."""
        args = (self.s, self.tb, actions, self.mdc, self.max_hands, obs, mask, seat, self._pending, self._cc,
                *self._outputs(with_obs, sparse))
        return row_call(_step, *args) if self.one_row else _step(*args)

    def encode_rows(self, rows: np.ndarray, obs: np.ndarray, mask: np.ndarray, seat: np.ndarray,
                    with_obs: bool, sparse: tuple | None = None) -> None:
        """:func:`_encode_rows`: the seat to act of each of ``rows``, its mask and (``with_obs``) observation
        (``sparse``: ``(cols, vals, counts)``, in sparse form there instead)."""
        _encode_rows(self.s, self.tb, rows, obs, mask, seat, self.max_hands, self._cc, self.mdc,
                     *self._outputs(with_obs, sparse))

    def _outputs(self, with_obs: bool, sparse: tuple | None) -> tuple:
        """The kernels' ``with_obs, sp, with_sparse``: the sparse output ``(cols, vals, counts)`` if any, else
        the scratch where a dense observation is written first (:func:`_encode`)."""
        return (False, sparse, True) if sparse is not None else (with_obs, self._obs_scratch, False)

    def play_out(self, who: str, first: np.ndarray, teams: np.ndarray, config: MilloneConfig, run) -> np.ndarray:
        """float64[B]: each row takes ``first[b]`` and plays to the end of its hand by ``run(first, mask, seat,
        acts)`` (a compiled loop of the engine's step, ``_random_playouts`` or the heuristic's, on these rows;
        the others are its scratch; it returns how many rows it ended); ``teams[b]``'s hand score minus the other
        player's as the hand's record scores it (:meth:`score_hands`: D.5; a claim at the next deal, MIL-3, is
        not played). A request (``who``: the method) is refused with a ``ValueError`` unless the rows play
        ``config``, take one first action and team each and are as far into a hand under way (every hand is the
        same number of moves, so the rows end theirs at the same step). Changes the rows."""
        B = len(self.dealer)
        if config != self.config:
            raise ValueError(f"{who}: these rows play {self.config}, not {config}")
        # the moves left in each row's hand: MIL-2.4, 2.6 the 22 discards, MIL-4.1 the 40 cards of 20 tricks
        left = 2 * FIRST_DISCARD + SECOND_DISCARD + PLAYERS * TRICKS - self.disc_n.sum(axis=1) - PLAYERS * self.tricks
        left = np.where(self.phase == OVER, 0, left - (self.lead != NO_CARD))
        if len(first) != B or len(teams) != B or left.min() < 1 or left.min() != left.max():
            raise ValueError(f"{who} needs one first action and team per row ({B} rows: got "
                             f"{len(first)}, {len(teams)}) and rows as far into a hand under way (moves left: "
                             f"{sorted(set(left.tolist()))})")
        mask, seat, acts = np.zeros((B, NUM_ACTIONS), dtype=bool), np.zeros(B, dtype=np.int64), np.zeros(B, np.int64)
        n = run(np.ascontiguousarray(first, dtype=np.int64), mask, seat, acts)
        assert n == B, "every row ends its hand at the same move"
        sc = self.score_hands(np.arange(B))["scores"]
        t, ar = np.asarray(teams, dtype=np.int64), np.arange(B)
        return (sc[ar, t] - sc[ar, 1 - t]).astype(np.float64)

    def random_playouts(self, first: np.ndarray, teams: np.ndarray, config: MilloneConfig, seed: int,
                        log: np.ndarray | None = None) -> np.ndarray:
        """:meth:`play_out` by uniformly random legal moves (:func:`_random_playouts`: the engine's step in
        compiled code). The rows must be as far into their hands (a search's worlds are: the same decision),
        with the rows' own ``config``. ``log`` (int64[B, L], optional): each row's first ``L`` actions,
        ``first[b]`` included (-1 after the hand's last)."""
        log = np.zeros((len(self.dealer), 0), dtype=np.int64) if log is None else log
        log[:] = -1
        return self.play_out("random_playouts", first, teams, config, lambda f, mask, seat, acts: _random_playouts(
            self.s, self.tb, f, self.mdc, self.max_hands, _NO_OBS, NO_SPARSE, False, mask, seat, self._pending,
            _NO_CC, acts, seed, log))

    def start_hands(self, rows: np.ndarray, dealers: np.ndarray, decks: np.ndarray | None = None) -> np.ndarray:
        """MIL-2.2: each row's pack shuffled from its own stream (``rng.permutation(62)``) or ``decks``
        (62 ids per row, MIL-2.2 order) and the first phase dealt (the kernel :func:`_deal`); then the
        claim check (MIL-2.3, MIL-3). Returns the rows whose game a claim ended."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        shuffle = decks is None
        decks = np.empty((len(rows), N), dtype=np.int64) if shuffle else np.ascontiguousarray(decks, dtype=np.int64)
        _deal(self.s, self.tb, rows, np.ascontiguousarray(dealers, dtype=np.int64), decks, shuffle)
        return self.check_claims(rows)

    def check_claims(self, rows: np.ndarray) -> np.ndarray:
        """MIL-3: claim = score + combinations in hand (every hand at once, ``combos.evaluate_many``: the
        points and the scoring cards); ``claimants`` says who wins at once, if anyone (MIL-3.1-3.3). The
        claimant's score becomes his claim, his scoring cards are shown (decision 5) and the game is over;
        ``last`` records the claim (its ``"scores"``: ``[combos, 0]``, claimant first in seat order).
        Returns the rows claimed."""
        points, scoring = evaluate_many(self.hand_bits[rows], moors_double_count=self.mdc)  # [k, 2]
        claims = self.scores[rows] + points
        who = claimants(claims)
        fire = np.flatnonzero(who >= 0)
        if not len(fire):
            return rows[:0]
        r, claimant = rows[fire], who[fire]
        shown = scoring[fire, claimant]
        self.claim_bits[r, claimant] = shown
        sc = np.where(np.arange(PLAYERS)[None, :] == claimant[:, None], points[fire], 0)  # [combos, 0]
        self.scores[r] += sc
        self._record(r, CLAIM_KIND, claimant=claimant, claims=claims[fire], combos=points[fire], shown=shown, scores=sc)
        self.phase[r] = OVER
        return r

    def _record(self, rows: np.ndarray, kind: int, **fields) -> None:
        """``last`` of ``rows`` := a history entry of ``kind`` (``RECORD_FIELDS``): ``fields``, with the hand's
        number and dealer."""
        fields.update(kind=kind, hand=self.hands_played[rows], dealer=self.dealer[rows])
        for k, v in fields.items():
            self.last[k][rows] = v

    # --- the end of a hand: the Matto (MIL-4.3, 4.4), scoring (MIL-5, D.5), the game (MIL-6.1) ----------
    def score_hands(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The rows whose 20th trick just closed: the Matto settled (:meth:`settle_matto`), each pile
        scored (D.5: card points, B.3.2, + 6 for the last trick, B.3.5, + the pile's combinations, B.5).
        Returns the hand's ``"scores"`` ([k, 2]) and their parts, by the names of the hand's record
        (``card_points``, ``combos``, ``last_trick``, ``pile_sizes``, ``matto_owner``, ``matto_deferred``,
        ``matto_surrendered``); nothing else changes (:meth:`end_hands` records and adds them)."""
        owner = self.excuse_owner[rows]
        has = owner >= 0
        ow = np.where(has, owner, 0)
        deferred = has & (self.exchange_owed[rows] >= 0)
        surrendered = has & (self.tricks_won[rows, ow] == 0)
        settle = deferred | surrendered
        for b in rows[settle].tolist():  # MIL-4.4, decisions 3 and 4 (rare: per row)
            self.settle_matto(b)
        pile_bits = self.won_bits[rows] | self.disc_bits[rows]  # [k, 2]
        piles = unpack_bits(pile_bits)  # [k, 2, 62]
        cp = card_points(piles)  # B.3.2
        combos = combo_points_many(pile_bits, moors_double_count=self.mdc)  # D.5, every pile at once
        last_trick = self.log_winner[rows, TRICKS - 1]
        sc = cp + combos + LAST_TRICK_BONUS * (np.arange(PLAYERS)[None, :] == last_trick[:, None])  # B.3.5
        return {"scores": sc, "card_points": cp, "combos": combos, "last_trick": last_trick,
                "pile_sizes": piles.sum(2, dtype=np.int64), "matto_owner": owner, "matto_deferred": deferred,
                "matto_surrendered": surrendered}

    def end_hands(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows whose 20th trick just closed: the hand scored (:meth:`score_hands`: the Matto settled,
        D.5), the scores added, ``last`` set to the hand's record, MIL-6.1 (``game_results``: a game over goes
        to ``GAME_OVER``; decision 6). Returns ``(scores [k, 2], winner [k])``: the hand's scores and the
        game's result per row (a seat, -1 a draw at the ``max_hands`` cap, ``PLAY_ON``). The next hand
        (MIL-2.1: the players deal alternately) is the driver's to start."""
        f = self.score_hands(rows)
        sc = f["scores"]
        self._record(rows, HAND_KIND, **f, matto_paid=np.where(f["matto_surrendered"], -1, self.exchange_card[rows]),
                     **{k: getattr(self, k)[rows] for k in ("tricks_won", "disc_n", "disc_log", "log_seat", "log_card",
                                                            "log_winner")})
        self.scores[rows] += sc
        hp = self.hands_played[rows] + 1
        self.hands_played[rows] = hp
        winner = game_results(self.scores[rows], hp, self.max_hands)  # MIL-6.1, decision 6
        self.phase[rows[winner != PLAY_ON]] = OVER
        return sc, winner

    def settle_matto(self, b: int) -> None:
        """The end of the hand of row ``b``, whose Matto was surrendered or is still owed: MIL-4.4, if
        its player won no trick the Matto goes to the opponent instead of the exchange (decision 4: no
        payment was made, a player who won no trick has won no empty card); else the payment still
        owed is made from his whole pile, discards included, the lowest-valued card (decision 3, M-5)."""
        owner = int(self.excuse_owner[b])
        if self.tricks_won[b, owner] == 0:
            self.won_bits[b, owner] &= ~MATTO_BIT
            self.won_bits[b, 1 - owner] |= MATTO_BIT
        else:
            tb = self.tb
            pile = self.won_bits[b, owner] | self.disc_bits[b, owner]
            card = fool_payment_bits(pile, False, self.mdc, tb.exchange)
            _pay(self.disc_bits, self.won_bits, self.exchange_from_discards, self.exchange_card, tb.bit, b,
                 owner, card)  # the kernels' own card move
        self.exchange_owed[b] = -1


def hand_record(f: dict[str, np.ndarray], i: int) -> dict:
    """Entry ``i`` of ``RECORD_FIELDS`` arrays as a history entry: ``MilloneGame.history``'s entries and
    the final info's ``last_result`` (before ``result_view``). A hand: its scores and their parts (D.5),
    the Matto (``owner`` -1: none played; ``paid``: the card's name; ``deferred``: still owed at the end of
    the hand; ``surrendered``: MIL-4.4), the discards in order and the tricks; a claim (MIL-3): the
    claims, the claimant's hand combinations and the cards he showed."""
    if f["kind"][i] == CLAIM_KIND:
        return {"hand": int(f["hand"][i]), "dealer": int(f["dealer"][i]), "claim": True,
                "claimant": int(f["claimant"][i]), "claims": f["claims"][i].tolist(),
                "combos": f["combos"][i].tolist(), "shown": BOLOGNESE.names_of(unpack_bits(f["shown"][i])),
                "scores": f["scores"][i].tolist()}
    paid = int(f["matto_paid"][i])
    return {
        "hand": int(f["hand"][i]), "dealer": int(f["dealer"][i]), "card_points": f["card_points"][i].tolist(),
        "last_trick": int(f["last_trick"][i]), "combos": f["combos"][i].tolist(),
        "scores": f["scores"][i].tolist(), "tricks_won": f["tricks_won"][i].tolist(),
        "pile_sizes": f["pile_sizes"][i].tolist(),
        "matto": {"owner": int(f["matto_owner"][i]), "paid": BOLOGNESE.names[paid] if paid >= 0 else None,
                  "deferred": bool(f["matto_deferred"][i]), "surrendered": bool(f["matto_surrendered"][i])},
        "discards": [f["disc_log"][i, p, :f["disc_n"][i, p]].tolist() for p in range(PLAYERS)],
        "tricks": [([[int(s), int(c)] for s, c in zip(f["log_seat"][i, t], f["log_card"][i, t])],
                    int(f["log_winner"][i, t])) for t in range(TRICKS)]}


# --- the one-game driver ------------------------------------------------------------------------------
_SET_FIELDS = {"hands": "hand_bits", "played": "played_bits", "won": "won_bits", "discards": "disc_bits",
               "claim_shown": "claim_bits", "stock": "stock_bits"}
VIEWS = (*_SET_FIELDS, "trick_by", "exchanged", "shown_void")  # what card_view reads


def card_view(r: MilloneRows, name: str) -> np.ndarray:
    """The view ``name`` (of ``VIEWS``) of every row of ``r``, a fresh bool array ``[B, ...]``: a card set of
    each seat (``[B, 2, 62]``) or the stock (``[B, 62]``), the card led by seat (``trick_by``: a trick of two
    closes with its second card), the card paid for the Matto (``exchanged``, decision 2) or the voids shown
    (``shown_void``: seat x suit, 4 suits and trumps, H.1.1)."""
    if name in _SET_FIELDS:
        return unpack_bits(getattr(r, _SET_FIELDS[name]))
    B = len(r.dealer)
    if name == "shown_void":
        return ((r.voids[:, None] >> np.arange(PLAYERS * SUITS_SHOWN)) & 1).astype(bool).reshape(B, PLAYERS, -1)
    if name == "trick_by":
        out, led = np.zeros((B, PLAYERS, N), dtype=bool), np.flatnonzero(r.lead != NO_CARD)
        out[led, r.lead_seat[led], r.lead[led]] = True
        return out
    out, paid = np.zeros((B, N), dtype=bool), np.flatnonzero(r.exchange_card >= 0)
    out[paid, r.exchange_card[paid]] = True
    return out


def _view(name: str, doc: str) -> property:
    """A game's read-only view ``name`` of its row (:func:`card_view`)."""
    def get(self) -> np.ndarray:
        out = card_view(self.row, name)[0]
        out.setflags(write=False)
        return out
    return property(get, doc=doc)


def checked_deck(deck, dealer: int) -> np.ndarray:
    """``deck`` (a hand's deck in MIL-2.2 order), refused with a ``ValueError`` unless it is a permutation
    of the 62 card ids and ``dealer`` a seat."""
    deck = np.asarray(deck)
    if deck.shape != (N,) or sorted(deck.tolist()) != list(range(N)):
        raise ValueError(f"deck must be a permutation of the {N} card ids 0..{N - 1}")
    if dealer not in (0, 1):
        raise ValueError(f"dealer must be seat 0 or 1, got {dealer!r}")
    return deck.astype(np.int64)


class MilloneGame(TrickGame):
    """One Millone game: a one-row :class:`MilloneRows` (``self.row``) driven by the batch's kernels and
    bookkeeping, plus the game's record (``history``, ``winner``, ``truncated``). What a reader expects
    (``hands``, ``won``, ``trick``, ``dealer`` …) are read-only views of the row (``scores``, ``tricks_won`` and
    ``deck`` its own arrays). Cloning is copying the row; :meth:`place_cards` writes hidden cards into it."""

    RESULT_FIELDS = ("winner", "game_over", "truncated")  # truncated: ended at max_hands (a draw)

    name = "millone"
    pack = BOLOGNESE  # ids, names, sizes; a game's own: the pack its round_suits_inverted option plays (M-3)
    num_players = PLAYERS
    team_of = (0, 1)  # each player is his own side
    num_teams = 2
    hand_size = TRICKS
    num_actions = NUM_ACTIONS
    Phase = Phase
    Config = MilloneConfig
    Rows = MilloneRows
    OBS = OBS
    STATE = STATE
    sparse_width = staticmethod(lambda config: SPARSE_WIDTH)  # obs_format="sparse": the same for every option set
    # B.5 points are at most 846 (combos.COMBO_BOUND): a pile's, or what one card adds, / COMBO_SCALE
    OBS_HIGH = {"pile_combos": combos.COMBO_BOUND / COMBO_SCALE, "combo_gain": combos.COMBO_BOUND / COMBO_SCALE}
    signals: list = []  # Millone has no signals
    pending_signal = -1

    def _setup(self, config: MilloneConfig, history: list, row: MilloneRows,
               result: tuple = (None, False, False)) -> MilloneGame:
        """The game's fields: ``config``, its record (``history``: every finished hand, D.5, and a claim, MIL-3;
        ``result``: ``winner``, MIL-6.1, -1 a draw, decision 6; ``game_over``; ``truncated``, ended at
        ``max_hands``), its one row and the kernels' scratch."""
        self.config, self.history, self.row = config, history, row
        self.pack = BOLOGNESE if config.round_suits_inverted else BOLOGNESE_UNIFORM  # M-3
        self.tables = _tables(self.pack)
        self.winner, self.game_over, self.truncated = result
        row.one_row = True
        self._one, self._seat = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        self._mask = np.zeros((1, NUM_ACTIONS), dtype=bool)
        return self

    def next_game(self, seed: int | None = None) -> MilloneGame:
        """A new game; the player who did not deal the last hand deals first (decision 7)."""
        if seed is None:
            seed = int(self.row.streams.next_game_seeds(ROW0)[0])  # rng.integers(2**63)
        return MilloneGame(self.config, seed, first_dealer=1 - self.dealer)

    # --- deal (MIL-2) ------------------------------------------------------------------------------
    def start_hand(self, dealer: int, deck: np.ndarray | None = None) -> None:
        """MIL-2.2 and the claim check (MIL-2.3, MIL-3): :meth:`MilloneRows.start_hands` on this row; a claim
        is recorded and ends the game. ``deck`` (a permutation of the 62 ids, MIL-2.2 order) fixes the deal,
        for tests and golden games; otherwise it is shuffled from the game's random stream."""
        decks = None if deck is None else np.asarray(deck, dtype=np.int64)[None]
        if len(self.row.start_hands(ROW0, np.array([dealer], dtype=np.int64), decks)):
            self.history.append(hand_record(self.row.last, 0))
            self._end_game(int(self.row.last["claimant"][0]))

    _first_deal = start_hand  # (TrickGame.__init__; MIL-2.1: the first dealer)

    def set_deck(self, dealer: int, deck) -> None:
        """Start the hand from an explicit deck order (62 ids, MIL-2.2 order) — golden games, tests."""
        self.start_hand(dealer, checked_deck(deck, dealer))

    def _end_game(self, winner: int) -> None:
        self.row.phase[0] = OVER
        self.game_over = True
        self.winner = winner

    # --- the driver API ----------------------------------------------------------------------------
    def legal_mask(self) -> np.ndarray:
        """MIL-2.4, 2.6 (no Honours, no Kings) in the discards; MIL-4.2 / B.4 in the play (:func:`_legal`)."""
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        if not self.game_over:
            r, tb = self.row, self.row.tb
            _legal(mask, r.hand_bits[0, r.current[0]], r.phase[0] == PLAY, r.lead[0], tb.led_after, tb.suit_bits)
        return mask

    def apply_unchecked(self, action: int) -> None:
        """The action of the seat to act (:func:`_step`; no signals in Millone: ids >= 62 are never
        legal); a hand's end is scored and recorded (:meth:`MilloneRows.end_hands`), then the game ends
        (MIL-6.1) or the next hand is dealt (MIL-2.1: the players deal alternately)."""
        r = self.row
        self._one[0] = action
        if r.step_rows(self._one, _NO_OBS, self._mask, self._seat, False):
            _, winner = r.end_hands(ROW0)
            self.history.append(hand_record(r.last, 0))
            w = int(winner[0])
            if w != PLAY_ON:
                self.truncated = w == -1
                self._end_game(w)
            else:
                self.start_hand(1 - self.dealer)

    # --- encoders (the batch's kernels, on this row) ------------------------------------------------
    def observation(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """What ``seat`` knows (RULES.md H.1, H.1.1, H.2, H.4), laid out by ``OBS`` (:func:`_observe`)."""
        r, seat = self.row, int(seat)
        return written_into(out, OBS_SIZE, lambda o: row_call(_observe_rows, r.s, r.tb, np.full(1, seat), o[None],
                                                               r.max_hands, r._cc, r.mdc, r._obs_scratch))

    def state_vector(self, out: np.ndarray | None = None) -> np.ndarray:
        """Everything (both hands, both discards, the stock), for centralised critics in training only."""
        o = np.empty(STATE_SIZE, dtype=np.float32) if out is None else out
        r = self.row
        _states(r.s, o.reshape(1, STATE_SIZE), r.max_hands, r._obs_scratch)
        if self.game_over:
            o[STATE.current] = 0.0  # nobody is to act
        return o

    # --- read-only views of the row -------------------------------------------------------------------
    hands = _view("hands", "bool[2, 62]: the cards each seat holds")
    played = _view("played", "bool[2, 62]: the cards each seat played to tricks this hand")
    won = _view("won", "bool[2, 62]: each seat's cards taken in tricks, the Matto, the card paid for it")
    discards = _view("discards", "bool[2, 62]: each seat's discards, face down in his pile (MIL-2.4)")
    claim_shown = _view("claim_shown", "bool[2, 62]: the scoring cards shown by a claim (MIL-3)")
    stock = _view("stock", "bool[62]: the cards not yet dealt (MIL-2.5)")
    trick_by = _view("trick_by", "bool[2, 62]: the current trick, by seat")
    exchanged = _view("exchanged", "bool[62]: the card paid for the Matto this hand (public, decision 2)")
    shown_void = _view("shown_void", "bool[2, 5]: seat x suit (4 suits, trumps) it has shown it lacks (H.1.1)")
    dealer = row_number("dealer", "the seat that deals this hand")
    current = row_number("current", "the seat to act")
    leader = row_number("leader", "the seat that led the current trick")
    hands_played = row_number("hands_played", "hands played in this game")
    excuse_owner = row_number("excuse_owner", "the seat that played the Matto this hand, or -1")
    exchange_card = row_number("exchange_card", "the card paid for the Matto this hand, or -1 (decision 1)")
    exchange_owed = row_number("exchange_owed", "the seat that owes the Matto's payment, or -1 (decision 3)")

    exchange_from_discards = property(lambda self: bool(self.row.exchange_from_discards[0]), doc="The card paid for "
                                      "the Matto came from the payer's discards (only at the end of a hand, M-5).")

    @property
    def deck(self) -> np.ndarray:
        """int64[62]: this hand's deck, in MIL-2.2 order (the row's own array: the stock is dealt from it)."""
        return self.row.deck[0]

    @deck.setter
    def deck(self, deck: np.ndarray) -> None:
        self.row.deck[0] = deck

    @property
    def stock_pos(self) -> int:
        """The deck position of the stock's first card (42 until the stock is dealt, MIL-2.5, then 62)."""
        return N - int(popcount(self.row.stock_bits[0]))

    @property
    def discarded(self) -> list[list[int]]:
        """Each seat's discards this hand, in order."""
        r = self.row
        return [r.disc_log[0, p, :r.disc_n[0, p]].tolist() for p in range(PLAYERS)]

    @property
    def trick(self) -> list[tuple[int, int]]:
        """The current trick, ``(seat, card)``: at most the card led (the second card closes it)."""
        c = int(self.row.lead[0])
        return [] if c == NO_CARD else [(int(self.row.lead_seat[0]), c)]

    @property
    def tricks(self) -> list[tuple[list[tuple[int, int]], int]]:
        """The finished tricks of this hand: ``([(seat, card), ...], winner)``."""
        return logged_tricks(self.row)

    def place_cards(self, hands: np.ndarray | None = None, discards: np.ndarray | None = None,
                    stock: np.ndarray | None = None, discarded: list[list[int] | None] | None = None) -> None:
        """Put cards in the hands (``bool[2, 62]``), the discards (``bool[2, 62]``) and the stock
        (``bool[62]``) without a rule, and (``discarded``: per seat, a list or None to keep it) the order of
        each seat's discards: a world of the sampler, a re-deal of a leak test. The hand sizes follow;
        everything else is kept (the deck is ``deck``'s to set). Check the result with :meth:`check_state`."""
        r = self.row
        for name, cards in (("hands", hands), ("discards", discards), ("stock", stock)):
            if cards is not None:
                getattr(r, _SET_FIELDS[name])[0] = pack_bits(np.asarray(cards, dtype=bool))
        if hands is not None:
            r.hand_sizes[0] = np.asarray(hands, dtype=bool).sum(axis=1)
        for p, order in enumerate(discarded or ()):
            if order is not None:
                r.disc_log[0, p] = 0
                r.disc_log[0, p, :len(order)] = order
                r.disc_n[0, p] = len(order)

    # --- what a state must hold (checked when a state comes from outside: TrickGame.check_state) ------
    def _row_sets(self) -> dict[str, list[int] | int]:
        r = self.row
        return {"hands": r.hand_bits[0].tolist(), "played": r.played_bits[0].tolist(), "won": r.won_bits[0].tolist(),
                "trick_by": pack_bits(self.trick_by).tolist(), "discards": r.disc_bits[0].tolist(),
                "stock": int(r.stock_bits[0])}  # MIL-2.5: the stock, until dealt

    def phase_problems(self, sets: dict) -> list[str]:
        """MIL-2.2, 2.5: the stock is the deck after ``stock_pos``; MIL-4.1: in the play each seat holds
        20 less the cards it played; the discards in order are the discards; the counters in range."""
        out = []
        r, stock = self.row, 0
        for c in np.asarray(self.deck)[self.stock_pos:].tolist():
            stock |= 1 << c
        if stock != sets["stock"] or self.stock_pos not in (FIRST_N, N):
            out.append(f"the stock is not the deck's cards after position {self.stock_pos} (MIL-2.5)")
        if self.phase == Phase.PLAY:
            have = [h.bit_count() + p.bit_count() for h, p in zip(sets["hands"], sets["played"])]
            if have != [TRICKS] * PLAYERS:
                out.append(f"phase PLAY: hand plus played cards are {have}, not {TRICKS} each (MIL-4.1)")
        if not (0 <= r.tricks[0] <= TRICKS and (r.disc_n[0] >= 0).all() and (r.disc_n[0] <= ALL_DISCARDS).all()
                and -1 <= r.exchange_owed[0] < PLAYERS and -1 <= r.exchange_card[0] < N and 0 <= r.phase[0] <= OVER):
            out.append(f"tricks {r.tricks[0]}, discard counts {r.disc_n[0].tolist()}, phase {r.phase[0]} or the "
                       f"Matto's payment out of range")
        return out

    # --- what a player may not know (RULES.md H.4, H.6), for the leak tests ---------------------------
    def hidden_from(self, seat: int) -> dict[str, np.ndarray]:
        """Where the cards ``seat`` cannot see are: the opponent's hand, his discards, the stock."""
        opp = 1 - seat
        return {"hand": self.hands[opp].copy(), "discards": self.discards[opp].copy(),
                "stock": self.stock.copy()}


    @classmethod
    def result_view(cls, result: dict, seat: int) -> dict:
        """What ``seat`` knows of a finished hand's record ``result`` (a ``history`` entry; the AEC env's
        ``info["last_result"]``, the env's page says what), RULES.md H.4: his own discards only (MIL-2.4; a card
        paid for the Matto from them is public anyway, MIL-4.3); after a claim (MIL-3) the claimant's
        combinations, not the other's. Applying it again to its own output changes nothing."""
        view = dict(result)
        other = 1 - seat
        if "discards" in result:
            hidden = list(result.get("discards_hidden", [0, 0]))
            discards = [list(d) for d in result["discards"]]
            hidden[other] += len(discards[other])
            discards[other] = []
            view["discards"], view["discards_hidden"] = discards, hidden
        if result.get("claim") and result["claimant"] == seat:  # the other showed nothing
            for key in ("combos", "claims"):
                view[key] = [v if p != other else None for p, v in enumerate(result[key])]
        return view

    def render_seat_extra(self, seat: int, viewer: int | None = None) -> str:
        """``seat``'s discards (to their owner; the opponent sees a count, MIL-2.4, H.4), an owed Matto
        payment, the card received for the Matto (public, decision 2), a claim's shown cards (MIL-3),
        and the stock's size, in ``viewer``'s table view (``tarot_env.view``; None: everything)."""
        parts = []
        if self.discards[seat].any():
            if viewer is None or viewer == seat:
                parts.append("discarded: " + " ".join(BOLOGNESE.names_of(self.discards[seat])))
            else:
                parts.append(f"discarded {int(self.discards[seat].sum())} face down")
        if seat == self.exchange_owed:
            parts.append("owes a card for the Matto")
        if (self.exchanged & self.won[seat]).any():
            parts.append("received for the Matto: " + " ".join(BOLOGNESE.names_of(self.exchanged)))
        if self.claim_shown[seat].any():
            parts.append("claimed with: " + " ".join(BOLOGNESE.names_of(self.claim_shown[seat])))
        text = ("  | " + "; ".join(parts)) if parts else ""
        if seat == self.dealer and not self.game_over and self.stock.any():
            text += f"\n  stock: {int(self.stock.sum())} cards"
        return text
