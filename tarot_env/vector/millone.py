"""Millone, batched: ``num_envs`` games of RULES.md Part D stepped together by compiled kernels.

The rules are those of :mod:`tarot_env.rules.millone` (the readable reference), on arrays with the
batch axis first (``State``: one entry per row, or per row and seat), and each rule is written once:

* **the step** is one ``numba`` kernel (:func:`_step`, ``@njit(cache=True)``) that loops over the rows
  with scalar code: a discard (MIL-2.4; after the dealer's 10 the stock is dealt, MIL-2.5; the
  dealer's 2 more, MIL-2.6), or a card played (MIL-4.1, 4.2), the second card of a trick closing it
  (B.4.4, B.4.5) with the Matto payment (MIL-4.3 as amended: from the cards won in tricks, owed until
  the debtor holds an empty card won, the card chosen by ``rules.millone.fool_payment_bits``: decision
  1, ``combos.cheapest_card`` over the compiled B.5 scorer); then, in the same pass while the row is in
  cache, the row's next observation and mask. Only a row whose hand has ended leaves the kernel;
* **the card-play rules** are those of :mod:`tarot_env.kernels`: ``legal_play`` (follow, else trump,
  else anything; the Matto always: B.4.1-B.4.3, MIL-4.2), the trick order of
  ``play_tables(pack).beats`` (B.4.4; the pack follows ``round_suits_inverted``, M-3), the suit led by
  its ``led_after`` and the voids a card shows by ``shown_voids`` (H.1.1); the discard rule (MIL-2.4,
  2.6: no Honours, no Kings) is the reference's ``DISCARDABLE`` as a bit set;
* **card sets** are 62-bit sets (one ``uint64``: bit ``c`` = card ``c``): hands, discards, cards
  played, won, shown by a claim, the stock; the card on the table is ``lead`` (the second card closes
  the trick), the card paid for the Matto ``exchange_card``, the shown voids the bits of ``voids``;
* **the observation** is written once, straight into the float32 output, section by section from
  those sets (:func:`_observe`, the layout of ``MilloneGame.observation``: seat-relative card
  sections, the 18 scalar features of ``_tail``, the v1 ``shown_void``, the v2 combination values
  from a per-row ``ComboCache`` that re-values a pile only when it changed); ``state()`` likewise
  (:func:`_states`, ``MilloneGame.state_vector``), and the reference's ``block`` for tests and
  tools (``m.block``, ``m.obs`` and the block fields as attributes, built on demand by
  :func:`_blocks`);
* **dealing** keeps each row's ``np.random.Generator`` stream in arrays (:mod:`tarot_env.vector.pcg`:
  numpy's draws in compiled code): first dealer ``rng.integers(2)`` (numpy's own ``Generator`` at a
  reset), one ``rng.permutation(62)`` per hand (:func:`_shuffled`, dealt by :func:`_deal`, MIL-2.2),
  the next game seeded from ``rng.integers(2**63)`` and dealt first by the player who did not deal
  the last hand (decision 7), so row ``i`` plays exactly the reference game of seed ``row_seeds[i]``
  and, after each automatic reset, its ``next_game()``;
* **per hand, in Python over the rows that ended one** (:meth:`MilloneVec._end_hand`): the Matto
  settlement of MIL-4.4 and the payment still owed (decisions 3, 4; per row, with the kernels'
  ``_pay``), D.5 scoring (``rules.millone.card_points``, ``combos.combo_points_many``,
  B.3.5's last trick), the rewards of :mod:`tarot_env.rewards` (``deal_rewards``; ``game_rewards``
  through ``VecEnv._game_result_rewards``), MIL-6.1 by ``rules.millone.game_results``, the next
  deal and its claim check (MIL-3: ``rules.millone.claimants`` over ``combos.evaluate_many``'s
  points and scoring cards).

Each kernel unpacks ``State`` and ``Tables`` into local arrays once and runs without reference
counting (``_nrt=False``: nothing is allocated), so a row costs little more than writing its
observation. Every hand lasts exactly 62 decisions (10 + 10 + 2 discards, 40 cards played), and a
claim ends a game at the start of a hand, so the rows of a batch usually end their hands in the
same step.

Outputs are :class:`~tarot_env.vector.base.VecStep`; ``info`` holds, valid where ``done``:
``final_scores`` (int64[B, 2]), ``final_winner`` (the seat, -1 a draw, -2 an ``episode="deal"``
episode that ended with the game going on), ``truncated`` (the game ended at ``max_hands``: the AEC
env reports a truncation), ``final_hand_scores`` (the last history entry's ``"scores"``: the last
hand's, or a claim's) and ``final_deal_scores`` (the last hand played out's D.5 scores, also when a
claim followed it: what a search reads as the value of a deal, ``agents/pimc.py``); ``final_info(row)``
gives the AEC env's whole final info dict. ``load_games`` starts rows from ``MilloneGame`` objects.

``tests/test_vector_millone.py`` drives this engine and the registered AEC environment with the same
actions and compares every observation, mask, reward, final info, state block and ``state()``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..cards import BOLOGNESE
from ..kernels import NO_SUIT, beats, legal_play, play_tables, shown_voids
from ..rewards import deal_rewards
from ..rules.combos import (ComboTables, combo_points, combo_points_many, combo_tables,
                            evaluate_many, popcount)
from ..rules.millone import (
    _GATHERED, BOLOGNESE_UNIFORM,
    DEALER_LAST_PACKET, DISCARDABLE, EMPTY_BITS, FIRST_DEAL, FIRST_DISCARD, FIRST_ROUNDS, LAST_TRICK_BONUS,
    MATTO, MATTO_BIT, MAX_HAND, N, OBS, PACKET, PLAY_ON, PLAYERS, SECOND_DISCARD, SECOND_ROUNDS, STATE, STOCK_SIZE,
    TARGET, TRICKS,
    MilloneGame, Phase, card_points, claimants, fool_payment_bits, game_results,
)
from .base import VecEnv, VecStep, pack_cards, unpack_cards
from .combo_cache import ComboCache, write_view
from .pcg import Streams, permutation, stream_arrays

DISCARD, SECOND, PLAY, OVER = (int(p) for p in (Phase.DISCARD, Phase.SECOND_DISCARD, Phase.PLAY,
                                                 Phase.GAME_OVER))
NO_CARD = N  # "nothing led yet"
NOT_OVER = -2  # final_winner of an episode that ended with the game still going (episode="deal")
ALL_DISCARDS = FIRST_DISCARD + SECOND_DISCARD  # the dealer's 12
HAND_KIND, CLAIM_KIND = 0, 1  # what the last history entry of a row is
ZERO = np.uint64(0)
assert N <= 64

pack_bits = pack_cards  # bool[..., 62] -> uint64[...]


def unpack_bits(bits: np.ndarray) -> np.ndarray:
    """uint64[...] card sets -> bool[..., 62]."""
    return unpack_cards(bits, N)


DISCARD_BITS = pack_bits(DISCARDABLE)  # MIL-2.4, MIL-2.6: no Honours, no Kings


def _deal_order() -> tuple[np.ndarray, np.ndarray]:
    """Deck position -> receiver (0 = the non-dealer, 1 = the dealer), as MilloneGame.start_hand
    (MIL-2.2: four rounds of 5, non-dealer first, the dealer taking 7 last) and _deal_second_phase
    (MIL-2.5: two rounds of 5 each from the stock)."""
    first = []
    for r in range(FIRST_ROUNDS):
        for who in (0, 1):
            first += [who] * (DEALER_LAST_PACKET if (who == 1 and r == FIRST_ROUNDS - 1) else PACKET)
    second = []
    for _ in range(SECOND_ROUNDS):
        for who in (0, 1):
            second += [who] * PACKET
    assert len(first) == sum(FIRST_DEAL) and len(second) == STOCK_SIZE
    return np.array(first, dtype=np.int64), np.array(second, dtype=np.int64)


FIRST_TO, SECOND_TO = _deal_order()
FIRST_N = len(FIRST_TO)  # 42 cards dealt before the claim check; the rest is the stock
NON_DEALER_FIRST, DEALER_FIRST = FIRST_DEAL  # 20 and 22 cards (MIL-2.2)

# the scalar features after the card sections (seat-relative), offsets from their start
SCALARS = OBS.phase.stop - _GATHERED  # (the v1 shown_void follows them)
Q_DEALER, Q_LEADER, Q_HS, Q_STOCK, Q_TW, Q_OWED, Q_SCORES, Q_HP, Q_PHASE = (
    getattr(OBS, name).start - _GATHERED for name in (
        "seat_from_dealer", "leader", "hand_sizes", "stock_size", "tricks_won", "exchange_owed",
        "scores", "hands_played", "phase"))
assert SCALARS == STATE.phase.stop - STATE.dealer.start - 2  # the state: dealer, current, then the same tail


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
    order follows ``round_suits_inverted``, M-3), who receives each card of the deck (``first_to``,
    ``second_to``: 0 the non-dealer, 1 the dealer, MIL-2.2, MIL-2.5) and the combination tables of the
    Matto payment (``exchange``: ``combos.combo_tables()``)."""

    bit: np.ndarray
    suit: np.ndarray
    suit_bits: np.ndarray
    beats: np.ndarray
    led_after: np.ndarray
    first_to: np.ndarray
    second_to: np.ndarray
    exchange: ComboTables


_TABLES: dict[str, Tables] = {}


def tables(pack) -> Tables:
    """The kernels' tables for ``pack`` (BOLOGNESE, or BOLOGNESE_UNIFORM for M-3), built once."""
    if pack.key not in _TABLES:
        t = play_tables(pack)
        _TABLES[pack.key] = Tables(bit=t.bit, suit=t.suit, suit_bits=t.suit_bits, beats=t.beats,
                                   led_after=t.led_after, first_to=FIRST_TO, second_to=SECOND_TO,
                                   exchange=combo_tables())
    return _TABLES[pack.key]


class State(NamedTuple):
    """The engine's arrays as the kernels see them (built per call from :class:`MilloneVec`'s
    attributes, which are the state): per row ``[B]``, per row and seat ``[B, 2]``. Card sets are
    uint64 (bit ``c`` = card ``c``); ``voids`` holds bit ``5 * seat + suit`` of ``shown_void``."""

    dealer: np.ndarray
    current: np.ndarray
    leader: np.ndarray
    phase: np.ndarray
    hands_played: np.ndarray
    scores: np.ndarray
    deck: np.ndarray
    lead: np.ndarray
    lead_seat: np.ndarray
    tricks: np.ndarray
    tricks_won: np.ndarray
    hand_sizes: np.ndarray
    hand_bits: np.ndarray
    played_bits: np.ndarray
    won_bits: np.ndarray
    disc_bits: np.ndarray
    claim_bits: np.ndarray
    stock_bits: np.ndarray
    voids: np.ndarray
    disc_n: np.ndarray
    disc_log: np.ndarray
    log_seat: np.ndarray
    log_card: np.ndarray
    log_winner: np.ndarray
    excuse_owner: np.ndarray
    exchange_card: np.ndarray
    exchange_owed: np.ndarray
    exchange_from_discards: np.ndarray


# --- the kernels ------------------------------------------------------------------------------------
# Each kernel unpacks State and Tables into local arrays once, then loops over the rows with scalar
# code; the helpers take the arrays they use (a NamedTuple field read inside the loop would cost a
# reference count and reloads at every access).
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
def _cards(bits, out, at):
    """``out[at:at + 62]`` := the card set ``bits`` (1.0 where held)."""
    for c in range(N):
        out[at + c] = (bits >> np.uint64(c)) & np.uint64(1)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _tail(out, at, dealer, leader, hand_sizes, stock_bits, tricks_won, exchange_owed, scores, hands_played, phase,
          b, seat, max_hands):
    """``out[at:at + 18]``: the scalar features of ``seat``'s view of row ``b`` (the reference's
    ``seat_from_dealer`` + ``_tail``: float64 quotients rounded once to float32, as it does)."""
    other = 1 - seat
    for i in range(SCALARS):
        out[at + i] = 0.0
    out[at + Q_DEALER + ((seat - dealer[b]) & 1)] = 1.0
    out[at + Q_LEADER + ((leader[b] - seat) & 1)] = 1.0
    out[at + Q_HS] = hand_sizes[b, seat] / MAX_HAND
    out[at + Q_HS + 1] = hand_sizes[b, other] / MAX_HAND
    out[at + Q_STOCK] = popcount(stock_bits[b]) / STOCK_SIZE
    out[at + Q_TW] = tricks_won[b, seat] / TRICKS
    out[at + Q_TW + 1] = tricks_won[b, other] / TRICKS
    owed = exchange_owed[b]
    if owed >= 0:
        out[at + Q_OWED + ((owed - seat) & 1)] = 1.0
    out[at + Q_SCORES] = scores[b, seat] / TARGET
    out[at + Q_SCORES + 1] = scores[b, other] / TARGET
    out[at + Q_HP] = min(hands_played[b] / max_hands, 1.0)
    out[at + Q_PHASE + phase[b]] = 1.0


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _observe(out, b, s, hand_bits, disc_bits, played_bits, won_bits, claim_bits, lead, lead_seat, exchange_card,
             voids, bit, dealer, leader, hand_sizes, stock_bits, tricks_won, exchange_owed, scores, hands_played,
             phase, max_hands, cc, mdc, combo_t):
    """``out`` (float32[836]) := seat ``s``'s observation of row ``b``, section by section as
    ``MilloneGame.observation`` (seat-relative: me, then the opponent); the v2 sections from the values
    of the ``ComboCache`` ``cc`` (``combos.pile_gains_kept`` with the B.5 tables ``combo_t``)."""
    o = 1 - s
    _cards(hand_bits[b, s], out, O_HAND)
    _cards(disc_bits[b, s], out, O_DISC)  # my discards only (H.4)
    _cards(played_bits[b, s], out, O_PLAYED)
    _cards(played_bits[b, o], out, O_PLAYED + N)
    c = lead[b]  # the trick on the table: at most the card led (the second card closes it)
    on_table = bit[c] if c != NO_CARD else ZERO
    _cards(on_table if lead_seat[b] == s else ZERO, out, O_TRICK)
    _cards(on_table if lead_seat[b] == o else ZERO, out, O_TRICK + N)
    _cards(won_bits[b, s], out, O_WON)
    _cards(won_bits[b, o], out, O_WON + N)
    paid = exchange_card[b]
    _cards(bit[paid] if paid >= 0 else ZERO, out, O_EXCH)
    _cards(claim_bits[b, s], out, O_CLAIM)
    _cards(claim_bits[b, o], out, O_CLAIM + N)
    _tail(out, _GATHERED, dealer, leader, hand_sizes, stock_bits, tricks_won, exchange_owed, scores, hands_played,
          phase, b, s, max_hands)
    v = voids[b]
    for k in range(SUITS_SHOWN):
        out[O_VOID + k] = (v >> (s * SUITS_SHOWN + k)) & 1
        out[O_VOID + SUITS_SHOWN + k] = (v >> (o * SUITS_SHOWN + k)) & 1
    # v2: my whole pile and the opponent's won cards
    write_view(cc, b, 2 * s + WHOLE, won_bits[b, s] | disc_bits[b, s], 2 * o + WON_ONLY, won_bits[b, o], mdc, 2,
               combo_t, out, O_PC)


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


@njit(cache=True, nogil=True, _nrt=False)
def _encode_rows(st, tb, rows, obs, mask, seat, max_hands, cc, mdc, with_obs):
    """The acting seat of each of ``rows``, its observation (written once, into the float32 output;
    not with ``with_obs`` false: ``observe=False``) and its legal mask."""
    (dealer, current, leader, phase, hands_played, scores, _deck, lead, lead_seat, _tricks, tricks_won,
     hand_sizes, hand_bits, played_bits, won_bits, disc_bits, claim_bits, stock_bits, voids, _disc_n, _disc_log,
     _log_seat, _log_card, _log_winner, _excuse_owner, exchange_card, exchange_owed, _from_discards) = st
    bit, suit_bits, led_after = tb.bit, tb.suit_bits, tb.led_after
    for j in range(rows.shape[0]):
        b = rows[j]
        s = current[b]
        seat[b] = s
        if with_obs:
            _observe(obs[b], b, s, hand_bits, disc_bits, played_bits, won_bits, claim_bits, lead, lead_seat,
                     exchange_card, voids, bit, dealer, leader, hand_sizes, stock_bits, tricks_won, exchange_owed,
                     scores, hands_played, phase, max_hands, cc, mdc, tb.exchange)
        _legal(mask[b], hand_bits[b, s], phase[b] == PLAY, lead[b], led_after, suit_bits)


@njit(cache=True, nogil=True, _nrt=False)
def _observe_all(st, tb, seats, out, max_hands, cc, mdc):
    for b in range(seats.shape[0]):
        _observe(out[b], b, seats[b], st.hand_bits, st.disc_bits, st.played_bits, st.won_bits, st.claim_bits,
                 st.lead, st.lead_seat, st.exchange_card, st.voids, tb.bit, st.dealer, st.leader, st.hand_sizes,
                 st.stock_bits, st.tricks_won, st.exchange_owed, st.scores, st.hands_played, st.phase, max_hands,
                 cc, mdc, tb.exchange)


@njit(cache=True, nogil=True, _nrt=False)
def _shuffled(rng_state, rng_inc, rng_half, rows, decks):
    """Each row's ``rng.permutation(62)`` (``TrickGame.shuffled_pack``), from its own stream."""
    for j in range(rows.shape[0]):
        permutation(rng_state, rng_inc, rng_half, rows[j], decks[j])


@njit(cache=True, nogil=True, _nrt=False)
def _deal(st, tb, rows, dealers, decks):
    """MIL-2.2: a new hand in each of ``rows`` from its deck (62 ids): four rounds of 5, non-dealer
    first, the dealer taking 7 in the last; the other 20 cards are the stock (seen by no one, H.4).
    The non-dealer discards first (MIL-2.4)."""
    bit, first_to = tb.bit, tb.first_to
    for j in range(rows.shape[0]):
        b, d = rows[j], dealers[j]
        nd = 1 - d
        to_dealer, to_other, stock = ZERO, ZERO, ZERO
        for i in range(N):
            c = decks[j, i]
            st.deck[b, i] = c
            if i >= FIRST_N:
                stock |= bit[c]
            elif first_to[i] == 1:
                to_dealer |= bit[c]
            else:
                to_other |= bit[c]
        st.stock_bits[b] = stock
        st.hand_sizes[b, nd] = NON_DEALER_FIRST
        st.hand_sizes[b, d] = DEALER_FIRST
        st.dealer[b] = d
        st.current[b] = nd
        st.leader[b] = nd
        st.phase[b] = DISCARD
        st.lead[b] = NO_CARD
        st.lead_seat[b] = 0
        st.tricks[b] = 0
        st.voids[b] = 0
        st.excuse_owner[b] = -1
        st.exchange_card[b] = -1
        st.exchange_owed[b] = -1
        st.exchange_from_discards[b] = False
        st.hand_bits[b, d] = to_dealer
        st.hand_bits[b, nd] = to_other
        for p in range(PLAYERS):
            st.tricks_won[b, p] = 0
            st.played_bits[b, p] = ZERO
            st.won_bits[b, p] = ZERO
            st.disc_bits[b, p] = ZERO
            st.claim_bits[b, p] = ZERO
            st.disc_n[b, p] = 0


@njit(cache=True, nogil=True, _nrt=False)
def _step(st, tb, actions, mdc, max_hands, obs, mask, seat, pending, cc, with_obs):
    """One action per row, for its acting seat; then the row's next observation and mask (as
    ``_encode_rows``). The rows whose hand has ended (the 20th trick closed) go to ``pending`` for the
    end of the hand (``MilloneVec._end_hand``); returns how many."""
    (dealer, current, leader, phase, hands_played, scores, deck, lead, lead_seat, tricks, tricks_won,
     hand_sizes, hand_bits, played_bits, won_bits, disc_bits, claim_bits, stock_bits, voids, disc_n, disc_log,
     log_seat, log_card, log_winner, excuse_owner, exchange_card, exchange_owed, from_discards) = st
    bit, suit, suit_bits, beats_table, led_after, second_to, exchange = (tb.bit, tb.suit, tb.suit_bits, tb.beats,
                                                                         tb.led_after, tb.second_to, tb.exchange)
    n = 0
    for b in range(actions.shape[0]):
        c = actions[b]
        s = current[b]
        d = dealer[b]
        x = bit[c]
        hand_bits[b, s] ^= x
        hand_sizes[b, s] -= 1
        if phase[b] != PLAY:
            # MIL-2.4: the card goes face down into its player's pile (seen by him alone)
            disc_bits[b, s] |= x
            k = disc_n[b, s]
            disc_log[b, s, k] = c
            k += 1
            disc_n[b, s] = k
            if phase[b] == DISCARD:
                if k == FIRST_DISCARD:
                    if s != d:
                        current[b] = d  # the dealer discards 10 next
                    else:  # MIL-2.5: two more rounds of 5 each from the stock, non-dealer first
                        for i in range(STOCK_SIZE):
                            card = deck[b, FIRST_N + i]
                            hand_bits[b, d if second_to[i] == 1 else 1 - d] |= bit[card]
                        stock_bits[b] = ZERO
                        hand_sizes[b, 0] += STOCK_SIZE // 2
                        hand_sizes[b, 1] += STOCK_SIZE // 2
                        phase[b] = SECOND  # MIL-2.6: the dealer discards 2 more
            elif k == ALL_DISCARDS:
                phase[b] = PLAY
                current[b] = 1 - d  # MIL-4.1: the non-dealer leads
                leader[b] = 1 - d
        else:
            # MIL-4.2: the card goes to the trick
            played_bits[b, s] |= x
            if c == MATTO:
                excuse_owner[b] = s
            c1 = lead[b]
            if c1 == NO_CARD:  # the first card of the trick
                lead[b] = c
                lead_seat[b] = s
                current[b] = 1 - s
            else:
                s1 = lead_seat[b]
                # H.1.1: not following the suit led shows a void (kernels.shown_voids; the Matto
                # shows nothing)
                v1, v2 = shown_voids(led_after[NO_SUIT * N + c1], suit[c])
                if v1 >= 0:
                    voids[b] |= 1 << (s * SUITS_SHOWN + v1)
                if v2 >= 0:
                    voids[b] |= 1 << (s * SUITS_SHOWN + v2)
                # B.4.4 (kernels.beats): the first card that is not the Matto takes the lead, the
                # second may beat it
                best, w = N, -1
                if beats(beats_table, N, N, c1):
                    best, w = c1, s1
                if beats(beats_table, N, best, c):
                    w = s
                t = tricks[b]
                log_card[b, t, 0] = c1
                log_card[b, t, 1] = c
                log_seat[b, t, 0] = s1
                log_seat[b, t, 1] = s
                log_winner[b, t] = w
                # the winner takes both cards, except the Matto: to its player's pile (B.4.5)
                won_bits[b, s1 if c1 == MATTO else w] |= bit[c1]
                won_bits[b, s if c == MATTO else w] |= x
                tricks_won[b, w] += 1
                leader[b] = w  # MIL-4.1: the winner leads next
                current[b] = w
                lead[b] = NO_CARD
                tricks[b] = t + 1
                if c1 == MATTO or c == MATTO:  # its player owes an empty card (the Matto never wins)
                    exchange_owed[b] = s1 if c1 == MATTO else s
                # MIL-4.3 (on_excuse_trick, on_trick_closed): the debtor pays as soon as he has won
                # an empty card: the one of his cards won in tricks that decision 1 picks
                owed = exchange_owed[b]
                if owed >= 0 and won_bits[b, owed] & EMPTY_BITS:
                    card = fool_payment_bits(won_bits[b, owed], True, mdc, exchange)
                    _pay(disc_bits, won_bits, from_discards, exchange_card, bit, b, owed, card)
                    exchange_owed[b] = -1
                if t + 1 == TRICKS:  # the hand is over: scored in Python (MilloneVec._end_hand)
                    pending[n] = b
                    n += 1
                    continue
        # the row's next decision
        s = current[b]
        seat[b] = s
        if with_obs:
            _observe(obs[b], b, s, hand_bits, disc_bits, played_bits, won_bits, claim_bits, lead, lead_seat,
                     exchange_card, voids, bit, dealer, leader, hand_sizes, stock_bits, tricks_won, exchange_owed,
                     scores, hands_played, phase, max_hands, cc, mdc, exchange)
        _legal(mask[b], hand_bits[b, s], phase[b] == PLAY, lead[b], led_after, suit_bits)
    return n


@njit(cache=True, nogil=True, _nrt=False)
def _tails(st, seats, out, max_hands):
    for b in range(seats.shape[0]):
        _tail(out[b], 0, st.dealer, st.leader, st.hand_sizes, st.stock_bits, st.tricks_won, st.exchange_owed,
              st.scores, st.hands_played, st.phase, b, seats[b], max_hands)


@njit(cache=True, nogil=True, _nrt=False)
def _states(st, tb, out, max_hands):
    """``out`` (float32[B, 898]) := every row's ``MilloneGame.state_vector()`` (absolute seats)."""
    bit = tb.bit
    for b in range(out.shape[0]):
        row = out[b]
        for p in range(PLAYERS):
            _cards(st.hand_bits[b, p], row, S_HANDS + p * N)
            _cards(st.disc_bits[b, p], row, S_DISC + p * N)
            _cards(st.played_bits[b, p], row, S_PLAYED + p * N)
            lead = st.lead[b]
            _cards(bit[lead] if lead != NO_CARD and st.lead_seat[b] == p else ZERO, row, S_TRICK + p * N)
            _cards(st.won_bits[b, p], row, S_WON + p * N)
            _cards(st.claim_bits[b, p], row, S_CLAIM + p * N)
        _cards(st.stock_bits[b], row, S_STOCK)
        paid = st.exchange_card[b]
        _cards(bit[paid] if paid >= 0 else ZERO, row, S_EXCH)
        # the tail from leader to phase, seen from seat 0 (its seat_from_dealer lands on ``current``,
        # written after it)
        _tail(row, S_LEADER - Q_LEADER, st.dealer, st.leader, st.hand_sizes, st.stock_bits, st.tricks_won,
              st.exchange_owed, st.scores, st.hands_played, st.phase, b, 0, max_hands)
        for i in range(S_DEALER, S_LEADER):
            row[i] = 0.0
        row[S_DEALER + st.dealer[b]] = 1.0
        row[S_CURRENT + st.current[b]] = 1.0  # rows are never over (auto-reset)
        v = st.voids[b]
        for k in range(PLAYERS * SUITS_SHOWN):
            row[S_VOID + k] = (v >> k) & 1


@njit(cache=True, nogil=True, _nrt=False)
def _blocks(st, tb, ix_hands, ix_played, ix_trick, ix_won, ix_disc, ix_stock, ix_exch, ix_claim, ix_void, out):
    """``out`` (bool[B, BLOCK]) := every row's reference state block (``MilloneGame.block``)."""
    bit = tb.bit
    for b in range(out.shape[0]):
        for c in range(N):
            x = bit[c]
            for p in range(PLAYERS):
                out[b, ix_hands[p, c]] = (st.hand_bits[b, p] & x) != ZERO
                out[b, ix_played[p, c]] = (st.played_bits[b, p] & x) != ZERO
                out[b, ix_trick[p, c]] = st.lead[b] == c and st.lead_seat[b] == p
                out[b, ix_won[p, c]] = (st.won_bits[b, p] & x) != ZERO
                out[b, ix_disc[p, c]] = (st.disc_bits[b, p] & x) != ZERO
                out[b, ix_claim[p, c]] = (st.claim_bits[b, p] & x) != ZERO
            out[b, ix_stock[c]] = (st.stock_bits[b] & x) != ZERO
            out[b, ix_exch[c]] = st.exchange_card[b] == c
        for p in range(PLAYERS):
            for k in range(SUITS_SHOWN):
                out[b, ix_void[p, k]] = ((st.voids[b] >> (p * SUITS_SHOWN + k)) & 1) != 0


_BLOCK_INDEX = MilloneGame.block_index()
_BLOCK_FIELDS = frozenset(name for name, _ in MilloneGame.block_fields())


class _Views:
    """The reference's per-card views of a :class:`MilloneVec`, built on demand from its card sets
    (tests compare them with the AEC env's): ``block`` (bool[B, BLOCK], ``MilloneGame.block``) and
    ``obs`` (bool[B, 2, OBS], every seat's observation, ``MilloneGame.observation``)."""

    def __init__(self, env: MilloneVec):
        self._env = env

    @property
    def block(self) -> np.ndarray:
        e, ix = self._env, _BLOCK_INDEX
        out = np.zeros((e.num_envs, MilloneGame.block_size()), dtype=bool)
        _blocks(e._st(), e._tb, *(np.ascontiguousarray(getattr(ix, f), dtype=np.int64) for f in (
            "hands", "played", "trick_by", "won", "discards", "stock", "exchanged", "claim_shown", "shown_void")),
            out)
        return out

    @property
    def obs(self) -> np.ndarray:
        e = self._env
        out = np.zeros((PLAYERS, e.num_envs, OBS.size), dtype=np.float32)
        for s in range(PLAYERS):
            _observe_all(e._st(), e._tb, np.full(e.num_envs, s, dtype=np.int64), out[s], e.max_hands, e._cc,
                         e.mdc)
        return np.ascontiguousarray(out.transpose(1, 0, 2)).astype(bool)


class MilloneVec(VecEnv):
    """``num_envs`` Millone games in lockstep (see the module docstring and :class:`VecEnv`)."""

    Game = MilloneGame
    default_reward_scale = 200.0  # tarot_env.envs.millone.raw_env's

    def __init__(self, num_envs: int, seed: int | None = None, **options: Any):
        super().__init__(num_envs, seed, **options)
        B = self.num_envs
        cfg = self.config
        self.mdc = cfg.moors_double_count
        self.max_hands = cfg.max_hands
        self.pack_key = (BOLOGNESE if cfg.round_suits_inverted else BOLOGNESE_UNIFORM).key  # M-3
        i64 = lambda *shape: np.zeros((B,) + shape, dtype=np.int64)  # noqa: E731
        u64 = lambda *shape: np.zeros((B,) + shape, dtype=np.uint64)  # noqa: E731
        self.dealer, self.current, self.leader, self.phase = i64(), i64(), i64(), i64()
        self.hands_played, self.scores = i64(), i64(PLAYERS)
        self.deck = i64(N)
        self.lead, self.lead_seat = np.full(B, NO_CARD, dtype=np.int64), i64()
        self.tricks, self.tricks_won, self.hand_sizes = i64(), i64(PLAYERS), i64(PLAYERS)
        self.hand_bits, self.won_bits, self.disc_bits = u64(PLAYERS), u64(PLAYERS), u64(PLAYERS)
        self.played_bits, self.claim_bits, self.stock_bits = u64(PLAYERS), u64(PLAYERS), u64()
        self.voids = i64()  # shown_void (H.1.1): bit 5 * seat + suit
        i8 = lambda *shape: np.zeros((B,) + shape, dtype=np.int8)  # noqa: E731  (the logs: small, in cache)
        self.disc_n, self.disc_log = i64(PLAYERS), i8(PLAYERS, ALL_DISCARDS)  # discards in order
        self.log_seat, self.log_card, self.log_winner = i8(TRICKS, PLAYERS), i8(TRICKS, PLAYERS), i8(TRICKS)
        self.excuse_owner, self.exchange_card, self.exchange_owed = i64(), i64(), i64()
        self.exchange_from_discards = np.zeros(B, dtype=bool)
        # dealing: each row's PCG64 stream in arrays (tarot_env.vector.pcg: numpy's draws, in compiled
        # code); ``rngs`` are numpy's Generators, used for a reset's first dealers only
        self.rng_state, self.rng_inc, self.rng_half = stream_arrays(B)
        self.rngs: list[np.random.Generator] = []
        # the last history entry of each row (a hand's result, or a claim) and the final episode info
        self.last = {k: i64(*s) for k, s in (
            ("kind", ()), ("hand", ()), ("dealer", ()), ("card_points", (2,)), ("last_trick", ()),
            ("combos", (2,)), ("scores", (2,)), ("tricks_won", (2,)), ("pile_sizes", (2,)),
            ("matto_owner", ()), ("matto_paid", ()), ("matto_deferred", ()), ("matto_surrendered", ()),
            ("disc_n", (2,)), ("claimant", ()), ("claims", (2,)))}
        self.last.update({k: i8(*s) for k, s in (("disc_log", (2, ALL_DISCARDS)), ("log_seat", (TRICKS, PLAYERS)),
                                                  ("log_card", (TRICKS, PLAYERS)), ("log_winner", (TRICKS,)))})
        self.last["shown"] = np.zeros(B, dtype=np.uint64)  # a claim's scoring cards, shown (MIL-3)
        self.final = {k: i64(*s) for k, s in (("scores", (2,)), ("winner", ()))}
        self.final_truncated = np.zeros(B, dtype=bool)
        # the D.5 scores of the episode's last hand played out (its history entry's; ``final_hand_scores``
        # is a claim's when one followed that hand at the next deal, MIL-3)
        self.final_deal = i64(PLAYERS)
        self._finished = np.zeros(B, dtype=bool)  # the row has finished an episode since reset()
        self.final_last = {k: v.copy() for k, v in self.last.items()}
        self._pending = i64()  # _step's rows whose hand ended
        # the v2 features' values per row and pile (no pile valued yet: all-ones keys, never a real set)
        self._cc = ComboCache.empty(B, 2 * PLAYERS)
        self._encoded = False  # _apply has encoded every row already (VecEnv.step calls _encode next)
        self._state_view: State | None = None  # _st()

    # --- the kernels' view of the state ------------------------------------------------------------
    def _st(self) -> State:
        """The state arrays as one ``State`` (built once: the arrays are only ever written in place;
        ``set_state`` builds it again)."""
        st = self.__dict__.get("_state_view")
        if st is None:
            st = self._state_view = State(*(getattr(self, name) for name in State._fields))
        return st

    def _streams(self) -> Streams:
        return Streams(self.rng_state, self.rng_inc, self.rng_half)

    @property
    def _tb(self) -> Tables:
        return tables(BOLOGNESE if self.pack_key == BOLOGNESE.key else BOLOGNESE_UNIFORM)

    # --- checkpoints: the arrays only (the State view is rebuilt from them) ------------------------------
    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        state.pop("_state_view", None)
        state.pop("_cc", None)  # a cache that checks its keys: rebuilt as needed, kept across set_state
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._state_view = None

    # --- episodes ------------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        dealers = self._reseed_first_dealers()  # numpy's Generators: default_rng(seed), integers(2)
        self._streams().load(range(self.num_envs), self.rngs)
        self.rngs = []  # the streams go on in the arrays
        self.scores[:] = 0
        self.hands_played[:] = 0
        for v in (*self.last.values(), *self.final.values(), *self.final_last.values()):
            v[...] = 0
        self.final_deal[:] = 0
        self.final_truncated[:] = False
        self._finished[:] = False
        claimed = self._start_hand(self._ar.copy(), dealers)
        assert not len(claimed), "a claim with no score is impossible (combinations < 1000)"

    def set_deck(self, row: int, dealer: int, deck) -> None:
        """Restart row ``row``'s current hand from an explicit deck (``MilloneGame.set_deck``: 62 ids
        in MIL-2.2 order; scores and hands played are kept), for tests and golden games. Call it
        between steps, then read the row from the next step's output (or ``peek()``)."""
        if not self._ready:
            raise ValueError("call reset() before set_deck()")
        deck = np.asarray(deck)
        if deck.shape != (N,) or sorted(deck.tolist()) != list(range(N)):
            raise ValueError(f"deck must be a permutation of the {N} card ids 0..{N - 1}")
        if dealer not in (0, 1):
            raise ValueError(f"dealer must be seat 0 or 1, got {dealer!r}")
        if not 0 <= row < self.num_envs:
            raise ValueError(f"row must be in 0..{self.num_envs - 1}, got {row!r}")
        first = deck[:FIRST_N]
        seats = np.where(FIRST_TO == 0, 1 - dealer, dealer)
        claims = [int(self.scores[row, p]) + combo_points(first[seats == p].tolist(),
                                                          moors_double_count=self.mdc) for p in range(PLAYERS)]
        if max(claims) >= TARGET:
            raise ValueError(f"this deck lets a player claim the game (MIL-3: claims {claims}); "
                             "choose a deck without a claim")
        self._start_hand(np.array([row]), np.array([dealer]), deck[None].astype(np.int64))
        self._encode()

    def peek(self) -> VecStep:
        """The current outputs (seat, obs, mask …) without stepping (after ``set_deck``)."""
        return self._result()

    def _start_hand(self, rows: np.ndarray, dealers: np.ndarray, decks: np.ndarray | None = None) -> np.ndarray:
        """MIL-2.2: shuffle each row's pack from its own stream and deal the first phase (the kernel
        :func:`_deal`); then the claim check (MIL-2.3, MIL-3). Returns the rows whose game a claim ended."""
        if decks is None:
            decks = np.empty((len(rows), N), dtype=np.int64)
            _shuffled(self.rng_state, self.rng_inc, self.rng_half, rows, decks)  # rng.permutation(62) per row
        _deal(self._st(), self._tb, rows, np.ascontiguousarray(dealers, dtype=np.int64), decks)
        return self._check_claims(rows)

    def _check_claims(self, rows: np.ndarray) -> np.ndarray:
        """MIL-3: claim = score + combinations in hand (every hand at once, ``combos.evaluate_many``:
        the points and the scoring cards); ``claimants`` says who wins at once, if anyone. The
        claimant's score becomes his claim and his scoring cards are shown (decision 5)."""
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
        last = self.last
        last["kind"][r] = CLAIM_KIND
        last["hand"][r] = self.hands_played[r]
        last["dealer"][r] = self.dealer[r]
        last["claimant"][r] = claimant
        last["claims"][r] = claims[fire]
        last["combos"][r] = points[fire]
        last["shown"][r] = shown
        last["scores"][r] = sc  # final_hand_scores: history[-1]["scores"], the claim's here
        self.phase[r] = OVER
        self.final["winner"][r] = claimant  # provisional: _finish records it
        cfg = self.env_config
        if cfg.reward == "deal":
            self._step_rew[r] += deal_rewards(sc, MilloneGame.team_of, cfg.reward_scale)
        self._dirty = True
        return r

    def _load_rows(self, groups: list[tuple[np.ndarray, MilloneGame]]) -> None:
        """``VecEnv.load_games``: each game's state into its rows: the block's card rows as card sets,
        the card on the table (``lead``: a trick holds at most one card between decisions), the shown
        voids as bits, the discards in order (``discarded``), the closed tricks, the Matto's payment
        (MIL-4.3), the deck (the stock is dealt from it, MIL-2.5) and the stream (the game's ``rng``)."""
        streams = self._streams()
        for r, g in groups:
            self.dealer[r], self.current[r], self.leader[r], self.phase[r] = g.dealer, g.current, g.leader, int(g.phase)
            self.hands_played[r], self.scores[r], self.deck[r] = g.hands_played, g.scores, g.deck
            self.lead[r], self.lead_seat[r] = (g.trick[0][1], g.trick[0][0]) if g.trick else (NO_CARD, 0)
            self.tricks[r], self.tricks_won[r], self.hand_sizes[r] = len(g.tricks), g.tricks_won, g.hand_sizes
            self.hand_bits[r], self.played_bits[r] = pack_bits(g.hands), pack_bits(g.played)
            self.won_bits[r] = pack_bits(g.won)
            self.disc_bits[r], self.claim_bits[r] = pack_bits(g.discards), pack_bits(g.claim_shown)
            self.stock_bits[r] = pack_bits(g.stock)
            self.voids[r] = sum(1 << (SUITS_SHOWN * p + k) for p, k in zip(*np.nonzero(g.shown_void)))
            self.disc_n[r] = [len(d) for d in g.discarded]
            self.disc_log[r] = 0
            for p, d in enumerate(g.discarded):
                self.disc_log[r, p, :len(d)] = d
            self.log_seat[r], self.log_card[r], self.log_winner[r] = 0, 0, 0
            for t, (trick, w) in enumerate(g.tricks):
                self.log_seat[r, t], self.log_card[r, t] = [s for s, _ in trick], [c for _, c in trick]
                self.log_winner[r, t] = w
            self.excuse_owner[r], self.exchange_card[r], self.exchange_owed[r] = (g.excuse_owner, g.exchange_card,
                                                                                  g.exchange_owed)
            self.exchange_from_discards[r] = g.exchange_from_discards
            for v in (*self.last.values(), *self.final.values(), *self.final_last.values()):
                v[r] = 0
            self.final_deal[r] = 0
            self.final_truncated[r] = self._finished[r] = False
            streams.load_into(r, g.rng)

    # --- one action per row ----------------------------------------------------------------------------
    def _apply(self, a: np.ndarray) -> None:
        """The kernel :func:`_step` plays every row's action and encodes its next decision; the rows
        whose hand ended are scored here (``_end_hand``) and encoded after."""
        st = self._st()
        n = _step(st, self._tb, a, self.mdc, self.max_hands, self._obs, self._mask, self._seat, self._pending,
                  self._cc, self.observe)
        if n:
            rows = self._pending[:n].copy()
            self._end_hand(rows)
            _encode_rows(self._st(), self._tb, rows, self._obs, self._mask, self._seat, self.max_hands, self._cc,
                         self.mdc, self.observe)
        self._encoded = True

    # --- scoring (MIL-5), the game (MIL-6) -------------------------------------------------------------
    def _end_hand(self, rows: np.ndarray) -> None:
        """D.5: card points + 6 for the last trick + pile combinations; MIL-6.1; the next hand."""
        self._dirty = True
        last = self.last
        owner = self.excuse_owner[rows]
        has = owner >= 0
        ow = np.where(has, owner, 0)
        deferred = has & (self.exchange_owed[rows] >= 0)
        surrendered = has & (self.tricks_won[rows, ow] == 0)
        settle = deferred | surrendered
        for b in rows[settle].tolist():  # MIL-4.4, decisions 3 and 4 (rare: per row)
            self._settle_matto(b)
        pile_bits = self.won_bits[rows] | self.disc_bits[rows]  # [k, 2]
        piles = unpack_bits(pile_bits)  # [k, 2, 62]
        cp = card_points(piles)  # B.3.2
        combos = combo_points_many(pile_bits, moors_double_count=self.mdc)  # D.5, every pile at once
        last_trick = self.log_winner[rows, TRICKS - 1]
        sc = cp + combos + LAST_TRICK_BONUS * (np.arange(PLAYERS)[None, :] == last_trick[:, None])  # B.3.5
        last["kind"][rows] = HAND_KIND
        last["hand"][rows] = self.hands_played[rows]
        last["dealer"][rows] = self.dealer[rows]
        last["card_points"][rows] = cp
        last["last_trick"][rows] = last_trick
        last["combos"][rows] = combos
        last["scores"][rows] = sc
        last["tricks_won"][rows] = self.tricks_won[rows]
        last["pile_sizes"][rows] = piles.sum(2, dtype=np.int64)
        last["matto_owner"][rows] = owner
        last["matto_paid"][rows] = np.where(surrendered, -1, self.exchange_card[rows])
        last["matto_deferred"][rows] = deferred
        last["matto_surrendered"][rows] = surrendered
        last["disc_n"][rows] = self.disc_n[rows]
        last["disc_log"][rows] = self.disc_log[rows]
        last["log_seat"][rows] = self.log_seat[rows]
        last["log_card"][rows] = self.log_card[rows]
        last["log_winner"][rows] = self.log_winner[rows]
        self.scores[rows] += sc
        self.final_deal[rows] = sc  # (valid where an episode ends: the last hand played out)
        cfg = self.env_config
        if cfg.reward == "deal":
            self._step_rew[rows] += deal_rewards(sc, MilloneGame.team_of, cfg.reward_scale)
        hp = self.hands_played[rows] + 1
        self.hands_played[rows] = hp
        winner = game_results(self.scores[rows], hp, self.max_hands)  # MIL-6.1, decision 6
        over = winner != PLAY_ON
        truncated = winner == -1  # the max_hands cap: a draw
        self.final["winner"][rows[over]] = winner[over]
        self.phase[rows[over]] = OVER
        cont = ~over
        if cont.any():  # MIL-2.1: the players deal alternately
            rc = rows[cont]
            claimed = self._start_hand(rc, 1 - self.dealer[rc])
            if len(claimed):
                over |= np.isin(rows, claimed)
        if cfg.episode == "deal":
            self._finish(rows, over, truncated)
        elif over.any():
            self._finish(rows[over], np.ones(int(over.sum()), dtype=bool), truncated[over])
        if over.any():
            self._new_game(rows[over])

    def _settle_matto(self, b: int) -> None:
        """The end of the hand of row ``b``, whose Matto was surrendered or is still owed: MIL-4.4, if
        its player won no trick the Matto goes to the opponent instead of the exchange (decision 4: no
        payment was made, a player who won no trick has won no empty card); else the payment still
        owed is made from his whole pile, discards included, the lowest-valued card (decision 3, M-5)."""
        owner = int(self.excuse_owner[b])
        if self.tricks_won[b, owner] == 0:
            self.won_bits[b, owner] &= ~MATTO_BIT
            self.won_bits[b, 1 - owner] |= MATTO_BIT
        else:
            pile = self.won_bits[b, owner] | self.disc_bits[b, owner]
            card = fool_payment_bits(pile, False, self.mdc, self._tb.exchange)
            _pay(self.disc_bits, self.won_bits, self.exchange_from_discards, self.exchange_card, self._tb.bit, b,
                 owner, card)  # the kernels' own card move
        self.exchange_owed[b] = -1

    def _finish(self, rows: np.ndarray, over: np.ndarray, truncated: np.ndarray) -> None:
        """The episode of ``rows`` ends: record the final info (and, for games over, the result)."""
        winner = self.final["winner"][rows]  # set for the games over
        self.final["scores"][rows] = self.scores[rows]
        self.final["winner"][rows] = np.where(over, winner, NOT_OVER)
        self.final_truncated[rows] = truncated
        for k, v in self.last.items():
            self.final_last[k][rows] = v[rows]
        self._done[rows] = True
        self._finished[rows] = True
        self._dirty = True
        if self.env_config.reward == "game" and over.any():
            self._game_result_rewards(rows[over], winner[over])

    def _new_game(self, rows: np.ndarray) -> None:
        """MilloneGame.next_game: seeded from the row's stream; the last hand's non-dealer deals."""
        streams = self._streams()
        streams.reseed(rows, streams.next_game_seeds(rows))  # default_rng(rng.integers(2**63))
        self.scores[rows] = 0
        self.hands_played[rows] = 0
        claimed = self._start_hand(rows, 1 - self.dealer[rows])
        assert not len(claimed), "a claim with no score is impossible (combinations < 1000)"

    # --- encoders ------------------------------------------------------------------------------------
    def scalars(self, seat: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, 18]: the scalar features of ``seat``'s observation in every row
        (``MilloneGame.observation``'s tail: ``seat_from_dealer`` + ``_tail(seat)``)."""
        t = np.empty((self.num_envs, SCALARS), dtype=np.float32) if out is None else out
        _tails(self._st(), np.ascontiguousarray(seat, dtype=np.int64), t, self.max_hands)
        return t

    def _encode(self) -> None:
        """Every row's acting seat, its observation (as ``MilloneGame.observation``) and legal mask
        (after ``_apply``, which encoded them already, nothing to do)."""
        if self._encoded:
            self._encoded = False
            return
        _encode_rows(self._st(), self._tb, self._ar, self._obs, self._mask, self._seat, self.max_hands, self._cc,
                     self.mdc, self.observe)

    # --- full information ----------------------------------------------------------------------------
    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, STATE]: ``MilloneGame.state_vector()`` of every row (centralised critics only),
        written from the card sets by the kernel :func:`_states`; ``out`` (float32[B, STATE]) is
        filled instead of a new array."""
        o = np.empty((self.num_envs, STATE.size), dtype=np.float32) if out is None else out
        _states(self._st(), self._tb, o, self.max_hands)
        return o

    # --- the reference's views, for tests and tools ----------------------------------------------------
    @property
    def m(self) -> _Views:
        """Every row's reference state ``block`` and every seat's observation ``obs`` (fresh arrays)."""
        return _Views(self)

    def __getattr__(self, name: str):
        """The reference's block fields (``hands``, ``won``, …) as fresh ``[B, ...]`` arrays, for tests."""
        if name in _BLOCK_FIELDS and "dealer" in self.__dict__:
            ix = getattr(_BLOCK_INDEX, name)
            start = int(ix.flat[0])
            return self.m.block[:, start:start + ix.size].reshape((self.num_envs,) + ix.shape)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"final_scores": self.final["scores"], "final_winner": self.final["winner"],
                "truncated": self.final_truncated, "final_hand_scores": self.final_last["scores"],
                "final_deal_scores": self.final_deal}

    def final_info(self, row: int) -> dict[str, Any]:
        """Row ``row``'s last finished episode as the AEC env's final ``infos[agent]`` dict."""
        if not self._finished[row]:
            raise ValueError(f"row {row} has not finished an episode yet")
        w = int(self.final["winner"][row])
        fl = {k: v[row] for k, v in self.final_last.items()}
        if fl["kind"] == CLAIM_KIND:  # MilloneGame._check_claims' history entry
            result = {"hand": int(fl["hand"]), "dealer": int(fl["dealer"]), "claim": True,
                      "claimant": int(fl["claimant"]), "claims": fl["claims"].tolist(),
                      "combos": fl["combos"].tolist(), "shown": BOLOGNESE.names_of(unpack_bits(fl["shown"])),
                      "scores": fl["scores"].tolist()}
        else:
            paid = int(fl["matto_paid"])
            result = {
                "hand": int(fl["hand"]), "dealer": int(fl["dealer"]), "card_points": fl["card_points"].tolist(),
                "last_trick": int(fl["last_trick"]), "combos": fl["combos"].tolist(),
                "scores": fl["scores"].tolist(), "tricks_won": fl["tricks_won"].tolist(),
                "pile_sizes": fl["pile_sizes"].tolist(),
                "matto": {"owner": int(fl["matto_owner"]), "paid": BOLOGNESE.names[paid] if paid >= 0 else None,
                          "deferred": bool(fl["matto_deferred"]), "surrendered": bool(fl["matto_surrendered"])},
                "discards": [fl["disc_log"][p, :fl["disc_n"][p]].tolist() for p in range(PLAYERS)],
                "tricks": [([[int(s), int(c)] for s, c in zip(fl["log_seat"][i], fl["log_card"][i])],
                            int(fl["log_winner"][i])) for i in range(TRICKS)]}
        return {"scores": self.final["scores"][row].tolist(), "winner": None if w == NOT_OVER else w,
                "last_result": result}
