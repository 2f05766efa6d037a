"""Millone, batched: ``num_envs`` games of RULES.md Part D stepped together by compiled kernels.

The rules are those of :mod:`tarot_env.rules.millone` (the readable reference), on arrays with the
batch axis first, and every rule is written once:

* **the step** is one ``numba`` kernel (:func:`_step`, ``@njit(cache=True)``) that loops over the rows
  with scalar code: a discard (MIL-2.4, the stock dealt after the dealer's 10, MIL-2.5, the second
  discard MIL-2.6), or a card played (MIL-4.1, 4.2), the second card of a trick closing it (B.4.4,
  B.4.5) and the Matto payment (MIL-4.3 as amended: from the cards won in tricks, owed until the
  debtor wins an empty card, the cheapest card by ``rules.millone.fool_payment_bits`` (decision 1,
  ``combos.cheapest_card`` over the compiled B.5 scorer); then, in the same pass, the row's next
  observation and mask. Only a row whose hand has ended leaves the kernel for Python;
* **the card-play rules** are those of :mod:`tarot_env.kernels`: ``legal_play`` (follow, else trump,
  else anything; the Matto always, B.4.1-B.4.3, MIL-4.2), the trick order from
  ``play_tables(pack).beats`` (B.4.4; the pack follows ``round_suits_inverted``, M-3) and the suit led
  from its ``led_after``, and ``shown_voids`` (H.1.1); the discard rule (MIL-2.4, 2.6: no Honours, no
  Kings) is the reference's ``DISCARDABLE`` as a bit set;
* **card sets** are 62-bit sets (one ``uint64`` per seat): hands, won cards, discards;
* **the observation**: every seat's observation card sections live in a
  :class:`~tarot_env.vector.base.BlockMirror` (``m.obs``, one byte per feature, written cell by cell
  by the kernels through the mirror's own position tables, ``flat``; the stock, which no seat sees, in
  ``m.hidden``; the full-information state's sections in ``m.smir`` once ``state()`` has been asked
  for). The acting seat's row is written once, straight into the float32 output, followed by its 18
  scalar features (:func:`_scalars`, the reference's ``seat_from_dealer`` + ``_tail``);
* **per hand, in Python over the rows that need it**: the end of the hand (:meth:`MilloneVec._end_hand`:
  the Matto settlement of MIL-4.4 and the deferred payment (decisions 3, 4) in a kernel, D.5 scoring
  with ``rules.millone.card_points`` and ``combos.combo_points_many``, the rewards of
  ``tarot_env.rewards``, MIL-6.1 by ``rules.millone.game_results``), the deal (each row's
  ``np.random.Generator``: first dealer ``rng.integers(2)``, one ``rng.permutation(62)`` per hand, the
  next game seeded from ``rng.integers(2**63)`` and dealt first by the player who did not deal the
  last hand, decision 7, so row ``i`` plays exactly the reference game of seed ``row_seeds[i]`` and,
  after each automatic reset, its ``next_game()``), the cards dealt by the kernel :func:`_deal`, and
  the claim check (MIL-3, ``rules.millone.claimants``; the hands' points and scoring cards by
  ``combos.evaluate_many``).

Every hand lasts exactly 62 decisions (10 + 10 + 2 discards, 40 cards played), and a claim ends a
game at the start of a hand, so the rows of a batch usually end their hands in the same step.

Outputs are :class:`~tarot_env.vector.base.VecStep`; ``info`` holds, valid where ``done``:
``final_scores`` (int64[B, 2]), ``final_winner`` (the seat, -1 a draw, -2 an ``episode="deal"``
episode that ended with the game going on), ``truncated`` (the game ended at ``max_hands``: the AEC
env reports a truncation) and ``final_hand_scores`` (the last history entry's ``"scores"``: the last
hand's, or a claim's); ``final_info(row)`` gives the AEC env's whole final info dict.

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
from ..rules.combos import ComboTables, combo_points, combo_points_many, combo_tables, evaluate_many
from ..rules.millone import (
    _GATHERED, _OBS_GATHER, _OBS_POS, _STATE_GATHER, _STATE_GATHERED, BOLOGNESE_UNIFORM,
    DEALER_LAST_PACKET, DISCARDABLE, EMPTY, FIRST_DEAL, FIRST_DISCARD, FIRST_ROUNDS, LAST_TRICK_BONUS,
    MATTO, MAX_HAND, N, OBS, PACKET, PLAY_ON, PLAYERS, SECOND_DISCARD, SECOND_ROUNDS, STATE, STOCK_SIZE,
    TARGET, TRICKS,
    MilloneGame, Phase, card_points, claimants, fool_payment_bits, game_results,
)
from .base import BlockMirror, VecEnv, VecStep, pack_cards, unpack_cards

DISCARD, SECOND, PLAY, OVER = (int(p) for p in (Phase.DISCARD, Phase.SECOND_DISCARD, Phase.PLAY,
                                                 Phase.GAME_OVER))
NO_CARD = N  # "nothing led yet"
NOT_OVER = -2  # final_winner of an episode that ended with the game still going (episode="deal")
ALL_DISCARDS = FIRST_DISCARD + SECOND_DISCARD  # the dealer's 12
HAND_KIND, CLAIM_KIND = 0, 1  # what the last history entry of a row is
OW = OBS.size
ZERO = np.uint64(0)
assert N <= 64

pack_bits = pack_cards  # bool[..., 62] -> uint64[...]


def unpack_bits(bits: np.ndarray) -> np.ndarray:
    """uint64[...] card sets -> bool[..., 62]."""
    return unpack_cards(bits, N)


DISCARD_BITS = pack_bits(DISCARDABLE)  # MIL-2.4, MIL-2.6: no Honours, no Kings
EMPTY_BITS = pack_bits(EMPTY)  # MIL-1.2: the empty cards (value 1; never the Matto, worth 5)
MATTO_BIT = np.uint64(1) << np.uint64(MATTO)
assert not EMPTY[MATTO]


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


# --- the kernels' tables and state ----------------------------------------------------------------
class Tables(NamedTuple):
    """What the kernels read, built once per pack (:func:`tables`).

    ``bit``, ``suit``, ``suit_bits``, ``beats``, ``led_after``: the pack's card-play tables
    (``kernels.play_tables``); ``flat[cell]`` the two seats' positions of a block cell in a row of the
    mirror (``BlockMirror.flat``), ``hcol[cell]`` its column in ``hidden`` (-1: some seat sees it),
    ``spos[cell]`` its column in the state mirror; ``cell_*`` the block cells of the reference's
    fields (``MilloneGame.block_index()``); ``first_to`` / ``second_to``: who receives each card of
    the deck (0 the non-dealer, 1 the dealer, MIL-2.2, MIL-2.5); ``exchange`` the combination tables
    of the Matto payment (``combos.combo_tables()``).
    """

    bit: np.ndarray
    suit: np.ndarray
    suit_bits: np.ndarray
    beats: np.ndarray
    led_after: np.ndarray
    flat: np.ndarray
    hcol: np.ndarray
    spos: np.ndarray
    cell_hand: np.ndarray
    cell_played: np.ndarray
    cell_trick: np.ndarray
    cell_won: np.ndarray
    cell_disc: np.ndarray
    cell_stock: np.ndarray
    cell_exch: np.ndarray
    cell_void: np.ndarray
    cell_claim: np.ndarray
    first_to: np.ndarray
    second_to: np.ndarray
    exchange: ComboTables


_TABLES: dict[str, Tables] = {}


def tables(pack) -> Tables:
    """The kernels' tables for ``pack`` (BOLOGNESE, or BOLOGNESE_UNIFORM for M-3), built once."""
    if pack.key not in _TABLES:
        t = play_tables(pack)
        proto = BlockMirror(MilloneGame, _OBS_GATHER, 1, obs_pos=_OBS_POS, hidden_ok=True)
        proto.enable_state(_STATE_GATHER)
        ix = MilloneGame.block_index()
        cells = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
        _TABLES[pack.key] = Tables(
            bit=t.bit, suit=t.suit, suit_bits=t.suit_bits, beats=t.beats, led_after=t.led_after,
            flat=np.ascontiguousarray(proto.flat), hcol=proto.hidden_col.copy(), spos=proto.spos.copy(),
            cell_hand=cells(ix.hands), cell_played=cells(ix.played), cell_trick=cells(ix.trick_by),
            cell_won=cells(ix.won), cell_disc=cells(ix.discards), cell_stock=cells(ix.stock),
            cell_exch=cells(ix.exchanged), cell_void=cells(ix.shown_void), cell_claim=cells(ix.claim_shown),
            first_to=FIRST_TO, second_to=SECOND_TO, exchange=combo_tables())
    return _TABLES[pack.key]


class State(NamedTuple):
    """The engine's arrays as the kernels see them (built per call from :class:`MilloneVec`'s
    attributes, which stay the state): per row ``[B]``, per row and seat ``[B, 2]``; ``mir`` is the
    mirror ``m.obs`` as ``uint8[B, 2 * OBS]`` (bytes: the copy into the float32 output vectorises),
    ``smir`` the state mirror (``[0, 1]`` until ``state()``)."""

    dealer: np.ndarray
    current: np.ndarray
    leader: np.ndarray
    phase: np.ndarray
    hands_played: np.ndarray
    scores: np.ndarray
    stock_left: np.ndarray
    deck: np.ndarray
    lead: np.ndarray
    lead_seat: np.ndarray
    tricks: np.ndarray
    tricks_won: np.ndarray
    hand_sizes: np.ndarray
    hand_bits: np.ndarray
    won_bits: np.ndarray
    disc_bits: np.ndarray
    disc_n: np.ndarray
    disc_log: np.ndarray
    log_seat: np.ndarray
    log_card: np.ndarray
    log_winner: np.ndarray
    excuse_owner: np.ndarray
    exchange_card: np.ndarray
    exchange_owed: np.ndarray
    exchange_from_discards: np.ndarray
    mir: np.ndarray
    hidden: np.ndarray
    smir: np.ndarray


# --- the kernels ------------------------------------------------------------------------------------
# Each kernel unpacks State and Tables into local arrays once, then loops over the rows with scalar
# code; the helpers take the arrays they use (a NamedTuple field read inside the loop would cost a
# reference count and reloads at every access).
@njit(cache=True, nogil=True)
def _put(mir, hidden, smir, flat, hcol, spos, b, cell, value):
    """Block cell ``cell`` of row ``b`` := ``value``, wherever it shows: in both seats' observations
    (a seat that does not see it writes a scratch slot), in ``hidden`` (the stock) and in the state."""
    mir[b, flat[cell, 0]] = value
    mir[b, flat[cell, 1]] = value
    h = hcol[cell]
    if h >= 0:
        hidden[b, h] = value
    if smir.shape[0] > 0:
        smir[b, spos[cell]] = value


@njit(cache=True, nogil=True)
def _pay(disc_bits, won_bits, exchange_from_discards, exchange_card, mir, hidden, smir, flat, hcol, spos,
         cell_disc, cell_won, cell_exch, bit, b, payer, card):
    """The Matto's payment: ``card`` moves from the payer's pile (his won cards; his discards only at
    the end of the hand) to the receiver's, in sight (decision 2: it shows in the receiver's ``won``
    and in ``exchanged``)."""
    x = bit[card]
    from_disc = (disc_bits[b, payer] & x) != ZERO
    exchange_from_discards[b] = from_disc
    disc_bits[b, payer] &= ~x
    won_bits[b, payer] &= ~x
    won_bits[b, 1 - payer] |= x
    _put(mir, hidden, smir, flat, hcol, spos, b, cell_disc[payer, card] if from_disc else cell_won[payer, card], 0)
    _put(mir, hidden, smir, flat, hcol, spos, b, cell_won[1 - payer, card], 1)
    _put(mir, hidden, smir, flat, hcol, spos, b, cell_exch[card], 1)
    exchange_card[b] = card


@njit(cache=True, nogil=True)
def _scalars(out, o, at, dealer, leader, hand_sizes, stock_left, tricks_won, exchange_owed, scores,
             hands_played, phase, r, seat, max_hands):
    """``out[o, at:at + 18]``: the scalar features of ``seat``'s view of row ``r`` (the reference's
    ``seat_from_dealer`` + ``_tail``: float64 quotients rounded once to float32, as it does)."""
    other = 1 - seat
    for i in range(SCALARS):
        out[o, at + i] = 0.0
    out[o, at + Q_DEALER + ((seat - dealer[r]) & 1)] = 1.0
    out[o, at + Q_LEADER + ((leader[r] - seat) & 1)] = 1.0
    out[o, at + Q_HS] = hand_sizes[r, seat] / MAX_HAND
    out[o, at + Q_HS + 1] = hand_sizes[r, other] / MAX_HAND
    out[o, at + Q_STOCK] = stock_left[r] / STOCK_SIZE
    out[o, at + Q_TW] = tricks_won[r, seat] / TRICKS
    out[o, at + Q_TW + 1] = tricks_won[r, other] / TRICKS
    owed = exchange_owed[r]
    if owed >= 0:
        out[o, at + Q_OWED + ((owed - seat) & 1)] = 1.0
    out[o, at + Q_SCORES] = scores[r, seat] / TARGET
    out[o, at + Q_SCORES + 1] = scores[r, other] / TARGET
    out[o, at + Q_HP] = min(hands_played[r] / max_hands, 1.0)
    out[o, at + Q_PHASE + phase[r]] = 1.0


@njit(cache=True, nogil=True)
def _copy_row(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True, nogil=True)
def _unpack_row(legal, bit, dst):
    for c in range(bit.shape[0]):
        dst[c] = (legal & bit[c]) != ZERO


@njit(cache=True, nogil=True)
def _encode_rows(st, tb, rows, obs, mask, seat, max_hands):
    """The acting seat of each of ``rows``, its observation (its mirror row, written once into the
    float32 output, then its scalars) and its legal mask: MIL-4.2 / B.4 in play
    (``kernels.legal_play``), MIL-2.4 / 2.6 in the discards (no Honours, no Kings)."""
    (dealer, current, leader, phase, hands_played, scores, stock_left, _deck, lead, _lead_seat, _tricks,
     tricks_won, hand_sizes, hand_bits, _won_bits, _disc_bits, _disc_n, _disc_log, _log_seat, _log_card,
     _log_winner, _excuse_owner, _exchange_card, exchange_owed, _from_discards, mir, _hidden, _smir) = st
    bit, suit_bits, led_after = tb.bit, tb.suit_bits, tb.led_after
    for j in range(rows.shape[0]):
        b = rows[j]
        s = current[b]
        seat[b] = s
        _copy_row(mir[b, s * OW:(s + 1) * OW], obs[b])
        _scalars(obs, b, _GATHERED, dealer, leader, hand_sizes, stock_left, tricks_won, exchange_owed, scores,
                 hands_played, phase, b, s, max_hands)
        hand = hand_bits[b, s]
        if phase[b] == PLAY:
            c = lead[b]
            legal = legal_play(hand, NO_SUIT if c == NO_CARD else led_after[NO_SUIT * N + c], suit_bits)
        else:
            legal = hand & DISCARD_BITS
        _unpack_row(legal, bit, mask[b])


@njit(cache=True, nogil=True)
def _deal(st, tb, rows, dealers, decks):
    """MIL-2.2: a new hand in each of ``rows`` from its deck (62 ids): four rounds of 5, non-dealer
    first, the dealer taking 7 in the last; the other 20 cards are the stock (seen by no one, H.4).
    The non-dealer discards first (MIL-2.4)."""
    (dealer, current, leader, phase, _hands_played, _scores, stock_left, deck, lead, lead_seat, tricks,
     tricks_won, hand_sizes, hand_bits, won_bits, disc_bits, disc_n, _disc_log, _log_seat, _log_card,
     _log_winner, excuse_owner, exchange_card, exchange_owed, exchange_from_discards, mir, hidden, smir) = st
    bit, flat, hcol, spos = tb.bit, tb.flat, tb.hcol, tb.spos
    cell_hand, cell_stock, first_to = tb.cell_hand, tb.cell_stock, tb.first_to
    for j in range(rows.shape[0]):
        b, d = rows[j], dealers[j]
        nd = 1 - d
        mir[b, :] = 0
        hidden[b, :] = False
        if smir.shape[0] > 0:
            smir[b, :] = False
        hand_bits[b, 0] = ZERO
        hand_bits[b, 1] = ZERO
        for i in range(N):
            c = decks[j, i]
            deck[b, i] = c
            if i < FIRST_N:
                to = d if first_to[i] == 1 else nd
                hand_bits[b, to] |= bit[c]
                _put(mir, hidden, smir, flat, hcol, spos, b, cell_hand[to, c], 1)
            else:
                _put(mir, hidden, smir, flat, hcol, spos, b, cell_stock[c], 1)
        hand_sizes[b, nd] = NON_DEALER_FIRST
        hand_sizes[b, d] = DEALER_FIRST
        dealer[b] = d
        current[b] = nd
        leader[b] = nd
        phase[b] = DISCARD
        stock_left[b] = STOCK_SIZE
        lead[b] = NO_CARD
        lead_seat[b] = 0
        tricks[b] = 0
        excuse_owner[b] = -1
        exchange_card[b] = -1
        exchange_owed[b] = -1
        exchange_from_discards[b] = False
        for p in range(PLAYERS):
            tricks_won[b, p] = 0
            won_bits[b, p] = ZERO
            disc_bits[b, p] = ZERO
            disc_n[b, p] = 0


@njit(cache=True, nogil=True)
def _step(st, tb, actions, mdc, max_hands, obs, mask, seat, pending):
    """One action per row, for its acting seat; then the row's next observation and mask (as
    ``_encode_rows``). The rows whose hand has ended (the 20th trick closed) go to ``pending`` for the
    end of the hand (``MilloneVec._end_hand``); returns how many."""
    (dealer, current, leader, phase, hands_played, scores, stock_left, deck, lead, lead_seat, tricks,
     tricks_won, hand_sizes, hand_bits, won_bits, disc_bits, disc_n, disc_log, log_seat, log_card,
     log_winner, excuse_owner, exchange_card, exchange_owed, from_discards, mir, hidden, smir) = st
    (bit, suit, suit_bits, beats_table, led_after, flat, hcol, spos, cell_hand, cell_played, cell_trick,
     cell_won, cell_disc, cell_stock, cell_exch, cell_void, _cell_claim, _first_to, second_to, exchange) = tb
    n = 0
    for b in range(actions.shape[0]):
        c = actions[b]
        s = current[b]
        d = dealer[b]
        x = bit[c]
        hand_bits[b, s] ^= x
        hand_sizes[b, s] -= 1
        _put(mir, hidden, smir, flat, hcol, spos, b, cell_hand[s, c], 0)
        if phase[b] != PLAY:
            # MIL-2.4: the card goes face down into its player's pile (seen by him alone)
            disc_bits[b, s] |= x
            _put(mir, hidden, smir, flat, hcol, spos, b, cell_disc[s, c], 1)
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
                            to = d if second_to[i] == 1 else 1 - d
                            hand_bits[b, to] |= bit[card]
                            _put(mir, hidden, smir, flat, hcol, spos, b, cell_hand[to, card], 1)
                            _put(mir, hidden, smir, flat, hcol, spos, b, cell_stock[card], 0)
                        hand_sizes[b, 0] += STOCK_SIZE // 2
                        hand_sizes[b, 1] += STOCK_SIZE // 2
                        stock_left[b] = 0
                        phase[b] = SECOND  # MIL-2.6: the dealer discards 2 more
            elif k == ALL_DISCARDS:
                phase[b] = PLAY
                current[b] = 1 - d  # MIL-4.1: the non-dealer leads
                leader[b] = 1 - d
        else:
            # MIL-4.2: the card goes to the trick
            _put(mir, hidden, smir, flat, hcol, spos, b, cell_played[s, c], 1)
            _put(mir, hidden, smir, flat, hcol, spos, b, cell_trick[s, c], 1)
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
                    _put(mir, hidden, smir, flat, hcol, spos, b, cell_void[s, v1], 1)
                if v2 >= 0:
                    _put(mir, hidden, smir, flat, hcol, spos, b, cell_void[s, v2], 1)
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
                to1 = s1 if c1 == MATTO else w
                to2 = s if c == MATTO else w
                won_bits[b, to1] |= bit[c1]
                won_bits[b, to2] |= x
                _put(mir, hidden, smir, flat, hcol, spos, b, cell_won[to1, c1], 1)
                _put(mir, hidden, smir, flat, hcol, spos, b, cell_won[to2, c], 1)
                _put(mir, hidden, smir, flat, hcol, spos, b, cell_trick[s1, c1], 0)
                _put(mir, hidden, smir, flat, hcol, spos, b, cell_trick[s, c], 0)
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
                if owed >= 0:
                    card = fool_payment_bits(won_bits[b, owed], True, mdc, exchange)
                    if card >= 0:
                        _pay(disc_bits, won_bits, from_discards, exchange_card, mir, hidden, smir, flat, hcol,
                             spos, cell_disc, cell_won, cell_exch, bit, b, owed, card)
                        exchange_owed[b] = -1
                if t + 1 == TRICKS:  # the hand is over: scored in Python (MilloneVec._end_hand)
                    pending[n] = b
                    n += 1
                    continue
        # the row's next decision
        s = current[b]
        seat[b] = s
        _copy_row(mir[b, s * OW:(s + 1) * OW], obs[b])
        _scalars(obs, b, _GATHERED, dealer, leader, hand_sizes, stock_left, tricks_won, exchange_owed, scores,
                 hands_played, phase, b, s, max_hands)
        hand = hand_bits[b, s]
        if phase[b] == PLAY:
            c1 = lead[b]
            legal = legal_play(hand, NO_SUIT if c1 == NO_CARD else led_after[NO_SUIT * N + c1], suit_bits)
        else:
            legal = hand & DISCARD_BITS
        _unpack_row(legal, bit, mask[b])
    return n


@njit(cache=True, nogil=True)
def _settle_matto(st, tb, rows, mdc):
    """The end of the hand of ``rows``, whose Matto was surrendered or is still owed: MIL-4.4, if
    its player won no trick the Matto goes to the opponent instead of the exchange (decision 4: no
    payment was made, a player who won no trick has won no empty card); else the payment still owed
    is made from his whole pile, discards included, the lowest-valued card (decision 3, M-5)."""
    flat, hcol, spos, bit, cell_won = tb.flat, tb.hcol, tb.spos, tb.bit, tb.cell_won
    mir, hidden, smir, won_bits, disc_bits = st.mir, st.hidden, st.smir, st.won_bits, st.disc_bits
    for j in range(rows.shape[0]):
        b = rows[j]
        owner = st.excuse_owner[b]
        if st.tricks_won[b, owner] == 0:
            won_bits[b, owner] &= ~MATTO_BIT
            won_bits[b, 1 - owner] |= MATTO_BIT
            _put(mir, hidden, smir, flat, hcol, spos, b, cell_won[owner, MATTO], 0)
            _put(mir, hidden, smir, flat, hcol, spos, b, cell_won[1 - owner, MATTO], 1)
        else:
            card = fool_payment_bits(won_bits[b, owner] | disc_bits[b, owner], False, mdc, tb.exchange)
            _pay(disc_bits, won_bits, st.exchange_from_discards, st.exchange_card, mir, hidden, smir, flat, hcol,
                 spos, tb.cell_disc, cell_won, tb.cell_exch, bit, b, owner, card)
        st.exchange_owed[b] = -1


@njit(cache=True, nogil=True)
def _show_claims(st, tb, rows, claimants, shown):
    """MIL-3 (decision 5): each claimant's scoring cards are shown to both (``claim_shown``)."""
    mir, hidden, smir, flat, hcol, spos, bit, cell_claim = st.mir, st.hidden, st.smir, tb.flat, tb.hcol, tb.spos, \
        tb.bit, tb.cell_claim
    for j in range(rows.shape[0]):
        for c in range(N):
            if shown[j] & bit[c]:
                _put(mir, hidden, smir, flat, hcol, spos, rows[j], cell_claim[claimants[j], c], 1)


@njit(cache=True, nogil=True)
def _scalars_rows(st, seats, out, max_hands):
    for b in range(seats.shape[0]):
        _scalars(out, b, 0, st.dealer, st.leader, st.hand_sizes, st.stock_left, st.tricks_won, st.exchange_owed,
                 st.scores, st.hands_played, st.phase, b, seats[b], max_hands)


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
        self.m = BlockMirror(MilloneGame, _OBS_GATHER, B, obs_pos=_OBS_POS, hidden_ok=True)
        i64 = lambda *shape: np.zeros((B,) + shape, dtype=np.int64)  # noqa: E731
        u64 = lambda *shape: np.zeros((B,) + shape, dtype=np.uint64)  # noqa: E731
        self.dealer, self.current, self.leader, self.phase = i64(), i64(), i64(), i64()
        self.hands_played, self.scores = i64(), i64(PLAYERS)
        self.stock_left = i64()  # cards still in the stock (20, then 0)
        self.deck = i64(N)
        self.lead, self.lead_seat = np.full(B, NO_CARD, dtype=np.int64), i64()
        self.tricks, self.tricks_won, self.hand_sizes = i64(), i64(PLAYERS), i64(PLAYERS)
        self.hand_bits, self.won_bits, self.disc_bits = u64(PLAYERS), u64(PLAYERS), u64(PLAYERS)
        self.disc_n, self.disc_log = i64(PLAYERS), i64(PLAYERS, ALL_DISCARDS)  # discards in order
        self.log_seat, self.log_card, self.log_winner = i64(TRICKS, PLAYERS), i64(TRICKS, PLAYERS), i64(TRICKS)
        self.excuse_owner, self.exchange_card, self.exchange_owed = i64(), i64(), i64()
        self.exchange_from_discards = np.zeros(B, dtype=bool)
        self.rngs: list[np.random.Generator] = []
        # the last history entry of each row (a hand's result, or a claim) and the final episode info
        self.last = {k: i64(*s) for k, s in (
            ("kind", ()), ("hand", ()), ("dealer", ()), ("card_points", (2,)), ("last_trick", ()),
            ("combos", (2,)), ("scores", (2,)), ("tricks_won", (2,)), ("pile_sizes", (2,)),
            ("matto_owner", ()), ("matto_paid", ()), ("matto_deferred", ()), ("matto_surrendered", ()),
            ("disc_n", (2,)), ("disc_log", (2, ALL_DISCARDS)), ("log_seat", (TRICKS, PLAYERS)),
            ("log_card", (TRICKS, PLAYERS)), ("log_winner", (TRICKS,)), ("claimant", ()), ("claims", (2,)))}
        self.last["shown"] = np.zeros(B, dtype=np.uint64)  # a claim's scoring cards, shown (MIL-3)
        self.final = {k: i64(*s) for k, s in (("scores", (2,)), ("winner", ()))}
        self.final_truncated = np.zeros(B, dtype=bool)
        self._finished = np.zeros(B, dtype=bool)  # the row has finished an episode since reset()
        self.final_last = {k: v.copy() for k, v in self.last.items()}
        self._pending = i64()  # _step's rows whose hand ended
        self._encoded = False  # _apply has encoded every row already (VecEnv.step calls _encode next)

    # --- the kernels' view of the state ------------------------------------------------------------
    def _st(self) -> State:
        m = self.m
        smir = m.smir if m.smir is not None else np.zeros((0, 1), dtype=bool)
        return State(
            self.dealer, self.current, self.leader, self.phase, self.hands_played, self.scores, self.stock_left,
            self.deck, self.lead, self.lead_seat, self.tricks, self.tricks_won, self.hand_sizes, self.hand_bits,
            self.won_bits, self.disc_bits, self.disc_n, self.disc_log, self.log_seat, self.log_card,
            self.log_winner, self.excuse_owner, self.exchange_card, self.exchange_owed,
            self.exchange_from_discards, m.obs.reshape(self.num_envs, -1).view(np.uint8), m.hidden, smir)

    @property
    def _tb(self) -> Tables:
        return tables(BOLOGNESE if self.pack_key == BOLOGNESE.key else BOLOGNESE_UNIFORM)

    # --- episodes ------------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        dealers = self._reseed_first_dealers()
        self.scores[:] = 0
        self.hands_played[:] = 0
        for v in (*self.last.values(), *self.final.values(), *self.final_last.values()):
            v[...] = 0
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
            rngs = self.rngs
            decks = np.array([rngs[r].permutation(N) for r in rows.tolist()], dtype=np.int64).reshape(len(rows), N)
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
        _show_claims(self._st(), self._tb, r, claimant, shown)
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

    # --- one action per row ----------------------------------------------------------------------------
    def _apply(self, a: np.ndarray) -> None:
        """The kernel :func:`_step` plays every row's action and encodes its next decision; the rows
        whose hand ended are scored here (``_end_hand``) and encoded after."""
        st = self._st()
        n = _step(st, self._tb, a, self.mdc, self.max_hands, self._obs, self._mask, self._seat, self._pending)
        if n:
            rows = self._pending[:n].copy()
            self._end_hand(rows)
            _encode_rows(self._st(), self._tb, rows, self._obs, self._mask, self._seat, self.max_hands)
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
        if settle.any():  # MIL-4.4, decisions 3 and 4
            _settle_matto(self._st(), self._tb, rows[settle], self.mdc)
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
        self._reseed_next_games(rows)
        self.scores[rows] = 0
        self.hands_played[rows] = 0
        claimed = self._start_hand(rows, 1 - self.dealer[rows])
        assert not len(claimed), "a claim with no score is impossible (combinations < 1000)"

    # --- encoders ------------------------------------------------------------------------------------
    def scalars(self, seat: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, 18]: the scalar features of ``seat``'s observation in every row
        (``MilloneGame.observation``'s tail: ``seat_from_dealer`` + ``_tail(seat)``)."""
        t = np.empty((self.num_envs, SCALARS), dtype=np.float32) if out is None else out
        _scalars_rows(self._st(), np.ascontiguousarray(seat, dtype=np.int64), t, self.max_hands)
        return t

    def _encode(self) -> None:
        """Every row's acting seat, its observation (as ``MilloneGame.observation``) and legal mask
        (after ``_apply``, which encoded them already, nothing to do)."""
        if self._encoded:
            self._encoded = False
            return
        _encode_rows(self._st(), self._tb, self._ar, self._obs, self._mask, self._seat, self.max_hands)

    # --- full information ----------------------------------------------------------------------------
    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, STATE]: ``MilloneGame.state_vector()`` of every row (centralised critics only).

        The first call starts mirroring the state's card sections incrementally (a few more writes
        per step from then on); ``out`` (float32[B, STATE]) is filled instead of a new array.
        """
        B, ar = self.num_envs, self._ar
        o = np.empty((B, STATE.size), dtype=np.float32) if out is None else out
        if self.m.smir is None:
            self.m.enable_state(_STATE_GATHER)
        smir = self.m.smir
        np.copyto(o[:, :_STATE_GATHERED], smir[:, :_STATE_GATHERED])
        o[:, _STATE_GATHERED:] = 0.0
        o[ar, STATE.dealer.start + self.dealer] = 1.0
        o[ar, STATE.current.start + self.current] = 1.0  # rows are never over (auto-reset)
        o[:, STATE.leader.start:STATE.phase.stop] = self.scalars(np.zeros(B, dtype=np.int64))[:, Q_LEADER:]
        o[:, STATE.shown_void] = smir[:, _STATE_GATHERED:len(_STATE_GATHER)]  # v1 (H.1.1)
        return o

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"final_scores": self.final["scores"], "final_winner": self.final["winner"],
                "truncated": self.final_truncated, "final_hand_scores": self.final_last["scores"]}

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
