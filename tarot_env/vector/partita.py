"""Partita, batched: ``num_envs`` games of RULES.md Part E stepped together by compiled kernels.

The game is the one of :mod:`tarot_env.rules.partita` (the readable reference, the AEC env's rules
object), held for the whole batch in one declared set of arrays with the batch axis first (pgx style,
:class:`State`, also the engine's attributes of the same names):

* the reference's boolean state ``block`` (``TrickGame.block_fields()``): its 19 rows of 54 cards
  (hands, played, trick_by per seat; won per team; discards per seat; public_discards) as card sets,
  one uint64 each with bit ``c`` for card ``c`` (``sets``, the convention of :mod:`tarot_env.kernels`),
  and its other cells (signal_table, shown_void, signal_card) as bools (``table``). ``m.block`` rebuilds
  the reference layout (``SET_CELLS``, ``TABLE_CELLS``: the block position of every bit and cell);
* the per-game numbers: dealer, seat to act, leader, phase, pending signal, suit led, the deal's
  tricks (seat and card in play order, winners), tricks won, hand sizes, scores, deals played, the
  trick of every played card (``card_trick``, H.1.1), the last deal's points;
* each row's random stream: ``np.random.default_rng(seed)``'s PCG64 state (:mod:`.pcg`).

A step is two ``numba`` kernels (``@njit(cache=True)``), each a loop over the rows with scalar code
that reads like the reference methods it mirrors (clause ids in the comments):

* :func:`_apply_rows`, the action (``PartitaGame.apply_unchecked``): a discard
  (``PartitaGame.discard``, PAR-4.2, 4.5), a signal (PAR-7.1) or a card (``TrickGame.play_card``:
  shown voids, H.1.1; the suit led; the signal the card carries), closing a full trick
  (``TrickGame._close_trick``: B.4.4 / PAR-2, the Fool back to its owner's team, PAR-5.3) and scoring
  a finished deal (``PartitaGame.on_hand_played``, PAR-6);
* :func:`_encode_rows`, the next decision: the acting seat, its observation
  (``PartitaGame.observation``) written straight into the float32 output, once per feature (the card
  sections where the reference's own gather tables ``_OBS_GATHER`` / ``_OBS_POS`` put them, a card set
  8 features at a time; the scalar features; ``played_trick``), and its legal mask.

Between the two, a row whose deal was scored goes through the end-of-deal bookkeeping in Python
(rewards, the record behind ``final_info``, the next deal or game) and :func:`_deal_rows` deals it
(PAR-4.1, the pack shuffled from the row's stream as ``rng.permutation(54)``). Row
``i`` plays exactly the reference game of seed ``row_seeds[i]`` (first dealer ``rng.integers(4)``,
drawn by numpy at a reset; one permutation per deal) and, after each automatic reset, its
``next_game()`` (seeded from ``rng.integers(2**63)``, dealt first by the partner of the last dealer,
PAR-3.3).

The rules themselves are called, not re-derived: legal play (B.4.1–4.3, PAR-5.2) is
``kernels.legal_play``, the trick order (B.4.4) ``kernels.trick_winner_index`` over the ``beats``
table of ``kernels.play_tables(FRENCH54)``, the suit led its ``led_after`` table, the shown voids
``kernels.shown_voids``; the discard rule (PAR-4.3, 4.4) and the count (PAR-6) are the kernels of the
rules module (``discard_legal``, ``discard_trumps_needed``, ``pile_points``), which the reference
calls too; the rewards are ``tarot_env.rewards.deal_rewards`` (and ``VecEnv._game_result_rewards``).
What is written here again is the bookkeeping of the reference's methods (which cell a played card
sets, the dealing order of PAR-4.1) and the scalar features of the observation and the state.

``state()`` is one more kernel (``PartitaGame.state_vector``); ``m.block``, ``m.obs`` (every seat's
observation), ``scalars`` and ``hand_bits`` are read back for the tests. ``tests/test_vector_partita.py``
drives this engine and the registered AEC environment with the same random actions and compares every
observation, mask, reward, final info, state block and ``state()``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..cards import FRENCH54, TRUMP
from ..engine import NUM_SIGNALS
from ..kernels import NO_SUIT, legal_play, play_tables, shown_voids, trick_winner_index
from ..rewards import deal_rewards, final_info
from ..rules.partita import (
    _OBS_GATHER, _OBS_POS, _PLAYED_TRICK, _STATE_GATHER, _STATE_POS, DEALER_EXTRA, DISCARD_SIZE, FOOL,
    HALF_TOTAL, HAND_SIZE, OBS, PLAYERS, STATE, TEAM_OF, N, PartitaGame, Phase, discard_legal,
    discard_trumps_needed, pile_points, popcount,
)
from .base import VecEnv, pack_cards, unpack_cards
from .pcg import Streams, permutation, stream_arrays

# --- the shared card-play tables (tarot_env.kernels) -------------------------------------------------
_T = play_tables(FRENCH54)
BIT, SUIT, SUIT_BITS, BEATS, LED_AFTER = _T.bit, _T.suit, _T.suit_bits, _T.beats, _T.led_after
TEAM = np.array(TEAM_OF, dtype=np.int64)  # PAR-3.1: seat -> team
DISCARD, PLAY = int(Phase.DISCARD), int(Phase.PLAY)
NOT_OVER = -2  # final_winner of an episode that ended with the game still going (episode="deal")

# --- the reference's state block, as card sets and a small table -------------------------------------
# PartitaGame.block (bool, block_index() positions) holds 19 rows of 54 cards: hands, played and
# trick_by per seat, won per team, discards per seat, public_discards. Here each of those rows is one
# card set (a uint64, bit c = card c: ``sets[B, 19]``, 152 bytes a game where the block takes 1280),
# and the other cells (signal_table, shown_void, signal_card) stay bools (``table[B, 254]``). SET_CELLS
# and TABLE_CELLS give the block position of every bit and table cell: the block is one gather away.
_IX = PartitaGame.block_index()
BLOCK = PartitaGame.block_size()
_SET_FIELDS = ("hands", "played", "trick_by", "won", "discards", "public_discards")
_TABLE_FIELDS = ("signal_table", "shown_void", "signal_card")
SET_CELLS = np.concatenate([np.asarray(getattr(_IX, f)).reshape(-1, N) for f in _SET_FIELDS])  # [19, 54]
TABLE_CELLS = np.concatenate([np.asarray(getattr(_IX, f)).ravel() for f in _TABLE_FIELDS])    # [254]
assert sorted(np.r_[SET_CELLS.ravel(), TABLE_CELLS]) == list(range(BLOCK))
_first_set = np.cumsum([0] + [np.asarray(getattr(_IX, f)).size // N for f in _SET_FIELDS])
HANDS, PLAYED, TRICK_BY, WON, DISCARDS, PUBLIC = (int(x) for x in _first_set[:-1])  # first set of each
SETS = int(_first_set[-1])
_first_cell = np.cumsum([0] + [np.asarray(getattr(_IX, f)).size for f in _TABLE_FIELDS])
SIGNAL_TABLE, VOID, SIGNAL_CARD = (int(x) for x in _first_cell[:-1])  # table offsets, [seat, ...] row-major
TABLE = int(_first_cell[-1])
SUITS_SHOWN = _IX.shown_void.shape[1]  # shown_void[seat, suit]: the 4 suits and trumps
SIGNAL_SUITS = _IX.signal_table.shape[2]  # signal_table[seat, signal, suit of the card]


def _sections(gather: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A reference gather table (block cell ``gather[j]`` goes to position ``pos[j]``) in this
    engine's terms: the card sets it shows whole, ``(set, first position)``, and the table cells as
    contiguous runs, ``(table start, first position, length)``. (Unsigned, so that numba's indexing
    needs no negative-index wrap-around and the copy loops vectorise.)"""
    where = {int(c): (k, i) for k, row in enumerate(SET_CELLS) for i, c in enumerate(row)}
    tix = {int(c): i for i, c in enumerate(TABLE_CELLS)}
    sets, cells = [], []
    j = 0
    while j < len(gather):
        c = int(gather[j])
        if c in where:  # a card set: shown whole, in card order
            k, i = where[c]
            assert i == 0 and list(gather[j:j + N]) == list(SET_CELLS[k])
            assert list(np.diff(pos[j:j + N])) == [1] * (N - 1)
            sets.append((k, pos[j]))
            j += N
        else:
            cells.append((tix[c], pos[j]))
            j += 1
    runs = []
    for t, p in cells:
        if runs and runs[-1][0] + runs[-1][2] == t and runs[-1][1] + runs[-1][2] == p:
            runs[-1][2] += 1
        else:
            runs.append([t, p, 1])
    return np.array(sets, dtype=np.uint64), np.array(runs, dtype=np.uint64)


# the card sections of each seat's observation and of the state, from the reference's gather tables
_OBS_SECTIONS = [_sections(np.asarray(g), np.asarray(_OBS_POS)) for g in _OBS_GATHER]
OBS_SETS = np.stack([a for a, _ in _OBS_SECTIONS])  # [seat, k, (set, position)]
OBS_TABLE_RUNS = np.zeros((PLAYERS, max(len(r) for _, r in _OBS_SECTIONS), 3), dtype=np.uint64)
for _s, (_, _r) in enumerate(_OBS_SECTIONS):
    OBS_TABLE_RUNS[_s, :len(_r)] = _r  # (padded with empty runs)
STATE_SETS, STATE_TABLE_RUNS = _sections(np.asarray(_STATE_GATHER), np.asarray(_STATE_POS))
# a card set's 54 features, 8 at a time: EXPAND[byte] is the 8 floats of its bits (bit 0 first)
EXPAND = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.float32)
# the observation's features that are not card cells: the scalars (pending_signal .. phase), then
# played_trick; the state's likewise
O_PENDING, O_FROM_DEALER, O_LEADER, O_HAND_SIZES, O_TRICKS_WON, O_SCORES, O_DEAL, O_PHASE, O_END, O_PT = (
    OBS.pending_signal.start, OBS.seat_from_dealer.start, OBS.leader.start, OBS.hand_sizes.start,
    OBS.tricks_won.start, OBS.scores.start, OBS.deal.start, OBS.phase.start, OBS.phase.stop,
    OBS.played_trick.start)
S_PENDING, S_DEALER, S_CURRENT, S_LEADER, S_TRICKS_WON, S_SCORES, S_DEAL, S_PHASE, S_END, S_PT = (
    STATE.pending_signal.start, STATE.dealer.start, STATE.current.start, STATE.leader.start,
    STATE.tricks_won.start, STATE.scores.start, STATE.deal.start, STATE.phase.start, STATE.phase.stop,
    STATE.played_trick.start)
assert np.setdiff1d(np.arange(OBS.size), np.r_[_OBS_POS, O_PENDING:O_END, OBS.played_trick]).size == 0
assert np.setdiff1d(np.arange(STATE.size), np.r_[_STATE_POS, S_PENDING:S_END, STATE.played_trick]).size == 0
DEALER_HAND = HAND_SIZE + DEALER_EXTRA  # 15: the hand_sizes feature is a count / 15

pack_bits = pack_cards  # bool[..., 54] -> uint64[...]


def unpack_bits(bits: np.ndarray) -> np.ndarray:
    """uint64[...] card sets -> bool[..., 54]."""
    return unpack_cards(bits, N)


class State(NamedTuple):
    """Every row's game (batch axis first): the reference's fields, as the kernels take them.

    The arrays are the engine's attributes of the same names (``venv.dealer`` …), which is what its
    checkpoint (``get_state``) saves; this tuple only hands them to the kernels in one argument.
    """

    sets: np.ndarray          # uint64[B, 19]: the block's card rows as card sets (hands[seat] is
                              #   sets[:, HANDS + seat], ... public_discards sets[:, PUBLIC])
    table: np.ndarray         # bool[B, 254]: the block's other cells (signal_table, shown_void, signal_card)
    hand_sizes: np.ndarray    # int64[B, 4]
    card_trick: np.ndarray    # uint8[B, 54]: t + 1 once played in trick t this deal (H.1.1), else 0
    dealer: np.ndarray        # int64[B]
    current: np.ndarray       # int64[B]: the seat to act
    leader: np.ndarray        # int64[B]: the seat that led the current trick
    phase: np.ndarray         # int64[B]: Phase.DISCARD / Phase.PLAY (a finished game is reset at once)
    pending: np.ndarray       # int64[B]: the signal chosen for the acting seat's next card, or -1
    led: np.ndarray           # int64[B]: the suit led of the current trick (NO_SUIT: none yet)
    trick_len: np.ndarray     # int64[B]: cards on the current trick
    tricks: np.ndarray        # int64[B]: tricks finished this deal
    log_seat: np.ndarray      # int8[B, 13, 4]: every trick of the deal, seat and card in play order
    log_card: np.ndarray      # int8[B, 13, 4]   (the current trick is log_*[b, tricks[b], :trick_len[b]])
    log_winner: np.ndarray    # int8[B, 13]
    tricks_won: np.ndarray    # int64[B, 2]: per team
    trumps_needed: np.ndarray  # int64[B]: PAR-4.4, fixed at the deal
    scores: np.ndarray        # int64[B, 2]: game scores per team
    deals_played: np.ndarray  # int64[B]
    points: np.ndarray        # int64[B, 2]: X of the last scored deal per team (PAR-6)
    deal_scores: np.ndarray   # int64[B, 2]: X − 40 of the last scored deal (PAR-6.6)
    deal_over: np.ndarray     # bool[B]: the row's deal was scored in the last step
    rng_state: np.ndarray     # uint64[B, 2]: each row's PCG64 generator (tarot_env.vector.pcg), the
    rng_inc: np.ndarray       # uint64[B, 2]   stream of np.random.default_rng(seed) of its game
    rng_half: np.ndarray      # int64[B]


# --- the kernels ------------------------------------------------------------------------------------
# They allocate nothing, and are compiled without numba's reference counting (``_nrt=False``; numba
# refuses to compile an allocation there): with it, every helper below that takes the State would
# count references to each of its arrays, per row, which costs more than the rules themselves.
@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _take_from_hand(s: State, b: int, seat: int, card: int) -> None:
    """TrickGame.take_from_hand: ``card`` leaves ``seat``'s hand."""
    s.sets[b, HANDS + seat] ^= BIT[card]
    s.hand_sizes[b, seat] -= 1


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _discard(s: State, b: int, card: int) -> None:
    """PartitaGame.discard: PAR-4.2 the card goes face down into the dealer's team pile; PAR-4.5 a
    trump is announced; after the second, PAR-5.1: the play starts and the dealer leads."""
    d = s.dealer[b]
    _take_from_hand(s, b, d, card)
    s.sets[b, DISCARDS + d] |= BIT[card]
    if SUIT[card] == TRUMP:
        s.sets[b, PUBLIC] |= BIT[card]
    if popcount(s.sets[b, DISCARDS + d]) == DISCARD_SIZE:
        s.phase[b] = PLAY
        s.current[b] = d
        s.leader[b] = d


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _play_card(s: State, b: int, seat: int, card: int) -> None:
    """TrickGame.play_card: ``card`` from ``seat``'s hand goes on the trick."""
    led = s.led[b]
    a, v = shown_voids(led, SUIT[card])  # H.1.1: not following shows voids (TrickGame._note_void)
    if a >= 0:
        s.table[b, VOID + seat * SUITS_SHOWN + a] = True
    if v >= 0:
        s.table[b, VOID + seat * SUITS_SHOWN + v] = True
    _take_from_hand(s, b, seat, card)
    s.sets[b, PLAYED + seat] |= BIT[card]
    s.sets[b, TRICK_BY + seat] |= BIT[card]
    t = s.tricks[b]
    s.card_trick[b, card] = t + 1
    i = s.trick_len[b]
    s.log_seat[b, t, i] = seat
    s.log_card[b, t, i] = card
    s.trick_len[b] = i + 1
    p = s.pending[b]
    if p >= 0:  # PAR-7.1: the signal chosen goes with this card, in public
        s.table[b, SIGNAL_TABLE + (seat * NUM_SIGNALS + p) * SIGNAL_SUITS + SUIT[card]] = True
        s.table[b, SIGNAL_CARD + card * NUM_SIGNALS + p] = True  # H.1.1: which card carried it
        s.pending[b] = -1
    s.led[b] = LED_AFTER[led * N + card]  # the first card other than the Fool sets the suit (B.4.3)
    if i + 1 == PLAYERS:
        _close_trick(s, b)
    else:
        s.current[b] = (seat + 1) % PLAYERS  # next(seat): to the right


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _close_trick(s: State, b: int) -> None:
    """TrickGame._close_trick: B.4.4 / PAR-2 the best card takes the trick, PAR-5.3 the Fool goes back
    to its owner's team; the winner leads the next trick; after the 13th, the deal is scored."""
    t = s.tricks[b]
    winner = s.log_seat[b, t, trick_winner_index(BEATS, N, s.log_card[b, t])]
    team = TEAM[winner]
    for i in range(PLAYERS):
        seat, card = s.log_seat[b, t, i], s.log_card[b, t, i]
        pile = TEAM[seat] if card == FOOL else team
        s.sets[b, WON + pile] |= BIT[card]
        s.sets[b, TRICK_BY + seat] = 0  # the trick leaves the table
    s.tricks_won[b, team] += 1
    s.log_winner[b, t] = winner
    s.tricks[b] = t + 1
    s.trick_len[b] = 0
    s.led[b] = NO_SUIT
    s.leader[b] = winner
    s.current[b] = winner
    if t + 1 == HAND_SIZE:  # PAR-5.4: 13 tricks
        _score_deal(s, b)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _score_deal(s: State, b: int) -> None:
    """PartitaGame.on_hand_played: PAR-6 each team's pile (its tricks, and the dealer's discards for
    his team, PAR-4.2) counts X points; the deal scores X − 40 (PAR-6.6). What follows (the next deal,
    or the end of the game) is the engine's bookkeeping in Python."""
    d = s.dealer[b]
    for team in range(2):
        pile = s.sets[b, WON + team]
        if team == TEAM[d]:
            pile |= s.sets[b, DISCARDS + d]
        x = pile_points(pile)
        s.points[b, team] = x
        s.deal_scores[b, team] = x - HALF_TOTAL
        s.scores[b, team] += x - HALF_TOTAL
    s.deal_over[b] = True


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _apply_action(s: State, b: int, a: int) -> None:
    """PartitaGame.apply_unchecked: row ``b``'s action ``a`` for its seat to act."""
    s.deal_over[b] = False
    if s.phase[b] == DISCARD:
        _discard(s, b, a)
    elif a >= N:
        s.pending[b] = a - N  # PAR-7.1: the signal goes with this seat's next card
    else:
        _play_card(s, b, s.current[b], a)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _expand(cards: np.uint64, o: np.ndarray, at: np.uint64) -> None:
    """A card set as 54 features ``o[at:at + 54]`` (1.0 for the cards in it), 8 at a time."""
    for k in range(N // 8):
        bits = (cards >> np.uint64(8 * k)) & np.uint64(255)
        for i in range(8):
            o[at + np.uint64(8 * k + i)] = EXPAND[bits, i]
    for c in range(N // 8 * 8, N):
        o[at + np.uint64(c)] = (cards >> np.uint64(c)) & np.uint64(1)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _copy_cells(s: State, b: int, runs: np.ndarray, o: np.ndarray) -> None:
    """The table cells of ``runs`` (table start, position, length) into ``o``."""
    for r in range(runs.shape[0]):
        src, dst, n = runs[r, 0], runs[r, 1], runs[r, 2]
        for i in range(n):
            o[dst + i] = s.table[b, src + i]


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _observe(s: State, b: int, seat: int, deals_per_game: int, o: np.ndarray) -> None:
    """PartitaGame.observation(seat) of row ``b`` into ``o`` (float32[OBS]), each feature written once:
    the card sections where the reference's gather table (``_OBS_GATHER``) puts them, the scalars."""
    for k in range(OBS_SETS.shape[1]):
        _expand(s.sets[b, OBS_SETS[seat, k, 0]], o, OBS_SETS[seat, k, 1])
    _copy_cells(s, b, OBS_TABLE_RUNS[seat], o)
    o[O_PENDING:O_END] = 0.0
    if s.pending[b] >= 0 and seat == s.current[b]:
        o[O_PENDING + s.pending[b]] = 1.0
    o[O_FROM_DEALER + (seat - s.dealer[b]) % PLAYERS] = 1.0
    o[O_LEADER + (s.leader[b] - seat) % PLAYERS] = 1.0
    for i in range(PLAYERS):  # seat-relative: me, my right, my partner, my left
        o[O_HAND_SIZES + i] = s.hand_sizes[b, (seat + i) % PLAYERS] / DEALER_HAND
    my = TEAM[seat]
    o[O_TRICKS_WON] = s.tricks_won[b, my] / HAND_SIZE
    o[O_TRICKS_WON + 1] = s.tricks_won[b, 1 - my] / HAND_SIZE
    o[O_SCORES] = s.scores[b, my] / HALF_TOTAL
    o[O_SCORES + 1] = s.scores[b, 1 - my] / HALF_TOTAL
    o[O_DEAL] = s.deals_played[b] / deals_per_game
    o[O_DEAL + 1] = (deals_per_game - s.deals_played[b]) / deals_per_game
    o[O_PHASE + s.phase[b]] = 1.0
    for c in range(N):  # H.1.1: when each card was played
        o[O_PT + c] = _PLAYED_TRICK[s.card_trick[b, c]]


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _legal(s: State, b: int, signals: bool, mask: np.ndarray) -> None:
    """PartitaGame.legal_mask of row ``b`` into ``mask`` (bool[57])."""
    if s.phase[b] == DISCARD:  # PAR-4.3, 4.4
        d = s.dealer[b]
        ok = discard_legal(s.sets[b, HANDS + d], s.sets[b, DISCARDS + d], s.trumps_needed[b])
    else:  # B.4.1–4.3, PAR-5.2, 5.3: follow, else trump, else anything; the Fool always
        ok = legal_play(s.sets[b, HANDS + s.current[b]], s.led[b], SUIT_BITS)
    for c in range(N):
        mask[c] = (ok >> np.uint64(c)) & np.uint64(1)
    sig = signals and s.phase[b] == PLAY and s.pending[b] < 0  # PAR-7.1: one signal per card
    for i in range(NUM_SIGNALS):
        mask[N + i] = sig


@njit(cache=True, nogil=True, _nrt=False)
def _apply_rows(s: State, actions: np.ndarray) -> int:
    """Every row's action; returns the number of rows whose deal was scored (``s.deal_over``)."""
    over = 0
    for b in range(len(actions)):
        _apply_action(s, b, actions[b])
        over += s.deal_over[b]
    return over


@njit(cache=True, nogil=True, _nrt=False)
def _encode_rows(s: State, rows: np.ndarray, seats: np.ndarray, deals_per_game: int, signals: bool,
                 seat: np.ndarray, obs: np.ndarray, mask: np.ndarray, with_obs: bool = True) -> None:
    """Row ``rows[i]``: ``seats[i]``'s observation (straight into ``obs``; not with ``with_obs`` false, the
    engine's ``observe=False``), the seat to act and its legal mask (into ``seat`` and ``mask``)."""
    for i in range(len(rows)):
        b = rows[i]
        seat[b] = s.current[b]
        if with_obs:
            _observe(s, b, seats[i], deals_per_game, obs[b])
        _legal(s, b, signals, mask[b])


@njit(cache=True, nogil=True, _nrt=False)
def _state_rows(s: State, deals_per_game: int, out: np.ndarray) -> None:
    """PartitaGame.state_vector() of every row (absolute seats) into ``out`` (float32[B, STATE])."""
    for b in range(out.shape[0]):
        o = out[b]
        for k in range(STATE_SETS.shape[0]):
            _expand(s.sets[b, STATE_SETS[k, 0]], o, STATE_SETS[k, 1])
        _copy_cells(s, b, STATE_TABLE_RUNS, o)
        o[S_PENDING:S_END] = 0.0
        if s.pending[b] >= 0:
            o[S_PENDING + s.pending[b]] = 1.0
        o[S_DEALER + s.dealer[b]] = 1.0
        o[S_CURRENT + s.current[b]] = 1.0  # rows are never over (auto-reset)
        o[S_LEADER + s.leader[b]] = 1.0
        for t in range(2):
            o[S_TRICKS_WON + t] = s.tricks_won[b, t] / HAND_SIZE
            o[S_SCORES + t] = s.scores[b, t] / HALF_TOTAL
        o[S_DEAL] = s.deals_played[b] / deals_per_game
        o[S_DEAL + 1] = (deals_per_game - s.deals_played[b]) / deals_per_game
        o[S_PHASE + s.phase[b]] = 1.0
        for c in range(N):
            o[S_PT + c] = _PLAYED_TRICK[s.card_trick[b, c]]


@njit(cache=True, nogil=True, _nrt=False)
def _deal_rows(s: State, rows: np.ndarray, dealers: np.ndarray, deck: np.ndarray) -> None:
    """PartitaGame.start_deal for ``rows``: the row's pack shuffled from its own stream
    (``rng.permutation(54)``, TrickGame.shuffled_pack); PAR-4.1 13 cards to each player from the
    dealer's right, the last 2 to the dealer; PAR-4.4 the trumps the dealer will have to discard;
    the dealer discards first (PAR-4.2). ``deck`` is scratch space (int64[54])."""
    for i in range(len(rows)):
        b, d = rows[i], dealers[i]
        permutation(s.rng_state, s.rng_inc, s.rng_half, b, deck)
        s.sets[b] = 0
        s.table[b] = False
        s.card_trick[b] = 0
        for p in range(N):
            seat = (d + 1 + p // HAND_SIZE) % PLAYERS if p < PLAYERS * HAND_SIZE else d
            s.sets[b, HANDS + seat] |= BIT[deck[p]]
        s.hand_sizes[b] = HAND_SIZE
        s.hand_sizes[b, d] = DEALER_HAND
        s.trumps_needed[b] = discard_trumps_needed(s.sets[b, HANDS + d])
        s.dealer[b] = d
        s.current[b] = d
        s.leader[b] = d
        s.phase[b] = DISCARD
        s.pending[b] = -1
        s.led[b] = NO_SUIT
        s.trick_len[b] = 0
        s.tricks[b] = 0
        s.tricks_won[b] = 0


# the record of a finished episode's last deal (the reference's history[-1]), for final_info
_LAST = (("deal", ()), ("dealer", ()), ("points", (2,)), ("scores", (2,)), ("tricks_won", (2,)),
         ("fool_team", ()), ("discards", (DISCARD_SIZE,)), ("log_seat", (HAND_SIZE, PLAYERS)),
         ("log_card", (HAND_SIZE, PLAYERS)), ("log_winner", (HAND_SIZE,)))


class _Views:
    """Read-back views for the tests: ``block`` (bool[B, BLOCK], the reference layout, rebuilt from the
    card sets and the table), ``obs`` (every seat's observation, float32[B, 4, OBS]) and
    ``field(name)`` (a block field, ``[B, *shape]``)."""

    def __init__(self, env: PartitaVec):
        self._env = env

    @property
    def block(self) -> np.ndarray:
        e = self._env
        block = np.zeros((e.num_envs, BLOCK), dtype=bool)
        block[:, SET_CELLS.ravel()] = unpack_bits(e.sets).reshape(e.num_envs, -1)
        block[:, TABLE_CELLS] = e.table
        return block

    @property
    def obs(self) -> np.ndarray:
        e = self._env
        out = np.zeros((e.num_envs, PLAYERS, OBS.size), dtype=np.float32)
        seat, mask = np.zeros(e.num_envs, dtype=np.int64), np.zeros((e.num_envs, e.num_actions), dtype=bool)
        for v in range(PLAYERS):
            seat_obs = np.zeros((e.num_envs, OBS.size), dtype=np.float32)
            _encode_rows(e._s, e._ar, np.full(e.num_envs, v), e.deals_per_game, e.signals, seat, seat_obs, mask)
            out[:, v] = seat_obs
        return out

    def field(self, name: str) -> np.ndarray:
        ix = getattr(_IX, name)
        start = int(ix.flat[0])
        return self.block[:, start:start + ix.size].reshape((self._env.num_envs,) + ix.shape)


class PartitaVec(VecEnv):
    """``num_envs`` Partita games in lockstep (see the module docstring and :class:`VecEnv`)."""

    Game = PartitaGame

    def __init__(self, num_envs: int, seed: int | None = None, **options: Any):
        super().__init__(num_envs, seed, **options)
        B = self.num_envs
        self.signals = self.config.partita_signals == "bolognese3"  # PAR-7.1
        self.deals_per_game = self.config.deals_per_game
        i64 = lambda *shape: np.zeros((B,) + shape, dtype=np.int64)  # noqa: E731
        u64 = lambda *shape: np.zeros((B,) + shape, dtype=np.uint64)  # noqa: E731
        # the batch's state (State): one array per field, batch axis first
        self.sets, self.table, self.hand_sizes = u64(SETS), np.zeros((B, TABLE), dtype=bool), i64(PLAYERS)
        self.card_trick = np.zeros((B, N), dtype=np.uint8)
        self.dealer, self.current, self.leader, self.phase = i64(), i64(), i64(), i64()
        self.pending, self.led, self.trick_len, self.tricks = i64() - 1, i64() + NO_SUIT, i64(), i64()
        i8 = lambda *shape: np.zeros((B,) + shape, dtype=np.int8)  # noqa: E731
        self.log_seat, self.log_card, self.log_winner = i8(HAND_SIZE, PLAYERS), i8(HAND_SIZE, PLAYERS), i8(HAND_SIZE)
        self.tricks_won, self.trumps_needed = i64(2), i64()
        self.scores, self.deals_played, self.points, self.deal_scores = i64(2), i64(), i64(2), i64(2)
        self.deal_over = np.zeros(B, dtype=bool)
        # dealing: each row's generator, in arrays (tarot_env.vector.pcg); ``rngs`` are numpy's
        # Generators that draw a reset's first dealers (VecEnv._reseed_first_dealers)
        self.rng_state, self.rng_inc, self.rng_half = stream_arrays(B)
        self.rngs: list[np.random.Generator] = []
        self._deck = np.zeros(N, dtype=np.int64)
        # each row's last finished episode: final scores and winner, and its last deal's record
        self.final = {k: i64(*s) for k, s in (("scores", (2,)), ("winner", ()))}
        self.final_last = {k: i64(*s) for k, s in _LAST}
        self._bind()

    def _bind(self) -> None:
        """The kernels' view of the state arrays (and the tests' read-back views)."""
        self._s = State(*(getattr(self, f) for f in State._fields))
        self._streams = Streams(self.rng_state, self.rng_inc, self.rng_half)
        self.m = _Views(self)

    # --- checkpoints: the state arrays by name (the State tuple and the views are rebuilt) -----------
    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        for k in ("_s", "_streams", "m"):
            state.pop(k, None)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._bind()

    @property
    def hand_bits(self) -> np.ndarray:
        """uint64[B, 4]: every hand as a card set (a view of ``sets``)."""
        return self.sets[:, HANDS:HANDS + PLAYERS]

    @property
    def scalars(self) -> np.ndarray:
        """float32[B, 4, 24]: every seat's scalar features (pending_signal .. phase), for the tests."""
        return self.m.obs[:, :, O_PENDING:O_END]

    # --- episodes ------------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        B = self.num_envs
        dealers = self._reseed_first_dealers()  # numpy's Generators: default_rng(seed), integers(4)
        self._streams.load(range(B), self.rngs)  # ... whose streams go on in the arrays
        self.scores[:] = 0
        self.deals_played[:] = 0
        for v in (*self.final.values(), *self.final_last.values()):
            v[...] = 0
        self._start_deal(np.arange(B, dtype=np.int64), dealers)

    def _start_deal(self, rows: np.ndarray, dealers: np.ndarray) -> None:
        """PAR-4.1: shuffle each row's pack from its own stream and deal it (:func:`_deal_rows`)."""
        _deal_rows(self._s, rows.astype(np.int64), dealers.astype(np.int64), self._deck)

    def _end_deals(self, rows: np.ndarray) -> None:
        """After PAR-6 (scored by the kernel): the rewards, then the next deal (PAR-3.3: next(dealer)
        deals) or, the game over, the episode's end and the next game."""
        s, cfg = self._s, self.env_config
        self._dirty = True  # rewards and/or ended episodes in this step
        if cfg.reward == "deal":
            self._step_rew[rows] += deal_rewards(s.deal_scores[rows], TEAM_OF, cfg.reward_scale)
        played = s.deals_played[rows] + 1
        over = played >= self.deals_per_game
        if cfg.episode == "deal":
            self._finish(rows, over)
        elif over.any():
            self._finish(rows[over], over[over])
        s.deals_played[rows] = played
        cont, go = rows[~over], rows[over]
        if len(cont):
            self._start_deal(cont, (s.dealer[cont] + 1) % PLAYERS)  # PAR-3.3: next(dealer)
        if len(go):
            self._new_game(go)

    def _finish(self, rows: np.ndarray, over: np.ndarray) -> None:
        """The episode of ``rows`` ends with the deal just scored: record the final info (and, for
        games over, the result)."""
        s, fl = self._s, self.final_last
        total = s.scores[rows, 0]
        winner = np.where(total > 0, 0, np.where(total < 0, 1, -1))  # PAR-6.7: 0 is a draw
        self.final["scores"][rows] = s.scores[rows]
        self.final["winner"][rows] = np.where(over, winner, NOT_OVER)
        fl["deal"][rows] = s.deals_played[rows]
        fl["dealer"][rows] = s.dealer[rows]
        fl["points"][rows] = s.points[rows]
        fl["scores"][rows] = s.deal_scores[rows]
        fl["tricks_won"][rows] = s.tricks_won[rows]
        fl["fool_team"][rows] = (s.sets[rows, WON + 1] & BIT[FOOL]) != 0  # PAR-5.3: never discarded
        discards = s.sets[rows, DISCARDS + s.dealer[rows]]
        fl["discards"][rows] = np.nonzero(unpack_bits(discards))[1].reshape(-1, DISCARD_SIZE)  # card order
        fl["log_seat"][rows] = s.log_seat[rows]
        fl["log_card"][rows] = s.log_card[rows]
        fl["log_winner"][rows] = s.log_winner[rows]
        self._done[rows] = True
        if self.env_config.reward == "game" and over.any():
            self._game_result_rewards(rows[over], winner[over])

    def _new_game(self, rows: np.ndarray) -> None:
        """PartitaGame.next_game: seeded from the row's stream; the last dealer's partner deals."""
        self._streams.reseed(rows, self._streams.next_game_seeds(rows))
        self.scores[rows] = 0
        self.deals_played[rows] = 0
        self._start_deal(rows, (self.dealer[rows] + 2) % PLAYERS)

    def _load_rows(self, groups: list[tuple[np.ndarray, PartitaGame]]) -> None:
        """``VecEnv.load_games``: each game's state into its rows. The block's card rows become the card
        sets (``SET_CELLS``) and its other cells the table (``TABLE_CELLS``); the deal's closed tricks and
        the current one go to the trick log (the current trick at ``log_*[tricks]``); the suit led is the
        reference's ``led_suit()``; the last deal's points come from its history entry (PAR-6); the stream
        is the game's ``rng``."""
        for r, g in groups:
            self.sets[r] = pack_bits(g.block[SET_CELLS])
            self.table[r] = g.block[TABLE_CELLS]
            self.hand_sizes[r], self.card_trick[r] = g.hand_sizes, g.card_trick
            self.dealer[r], self.current[r], self.leader[r], self.phase[r] = g.dealer, g.current, g.leader, int(g.phase)
            self.pending[r] = g.pending_signal
            led = g.led_suit()
            self.led[r] = NO_SUIT if led is None else led
            self.trick_len[r], self.tricks[r] = len(g.trick), len(g.tricks)
            self.log_seat[r], self.log_card[r], self.log_winner[r] = 0, 0, 0
            for t, (trick, w) in enumerate([*g.tricks, (g.trick, 0)]):
                if trick:
                    self.log_seat[r, t, :len(trick)] = [seat for seat, _ in trick]
                    self.log_card[r, t, :len(trick)] = [card for _, card in trick]
                self.log_winner[r, t] = w
            self.tricks_won[r], self.trumps_needed[r] = g.tricks_won, g.discard_trumps_needed
            self.scores[r], self.deals_played[r] = g.scores, g.deals_played
            last = g.history[-1] if g.history else {"points": [0, 0], "scores": [0, 0]}
            self.points[r], self.deal_scores[r] = last["points"], last["scores"]
            self.deal_over[r] = False
            for v in (*self.final.values(), *self.final_last.values()):
                v[r] = 0
            self._streams.load_into(r, g.rng)

    # --- one step ------------------------------------------------------------------------------------
    def _apply(self, a: np.ndarray) -> None:
        """Every row's action (:func:`_apply_rows`); the rows whose deal was scored go through the
        end-of-deal bookkeeping and are dealt again."""
        if _apply_rows(self._s, np.ascontiguousarray(a, dtype=np.int64)):
            self._end_deals(np.flatnonzero(self.deal_over))

    def _encode(self) -> None:
        """Every row's next decision (:func:`_encode_rows`): the seat to act, its observation, its mask."""
        _encode_rows(self._s, self._ar, self.current, self.deals_per_game, self.signals, self._seat, self._obs,
                     self._mask, self.observe)

    # --- full information ----------------------------------------------------------------------------
    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, STATE]: ``PartitaGame.state_vector()`` of every row (centralised critics only);
        ``out`` (float32[B, STATE]) is filled instead of a new array."""
        shape = (self.num_envs, STATE.size)
        if out is not None and (out.shape != shape or out.dtype != np.float32 or not out.flags.c_contiguous):
            raise ValueError(f"state(out=...) needs a C-contiguous float32 array of shape {shape}; got "
                             f"{out.dtype} {out.shape}")
        o = np.empty(shape, dtype=np.float32) if out is None else out
        _state_rows(self._s, self.deals_per_game, o)
        return o

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"final_scores": self.final["scores"], "final_winner": self.final["winner"],
                "final_deal_scores": self.final_last["scores"]}

    def final_info(self, row: int) -> dict[str, Any]:
        """Row ``row``'s last finished episode as the AEC env's final ``infos[agent]`` dict
        (:func:`tarot_env.rewards.final_info`, with the full record of the episode's last deal)."""
        w = int(self.final["winner"][row])
        fl = {k: v[row] for k, v in self.final_last.items()}
        last = {"deal": int(fl["deal"]), "dealer": int(fl["dealer"]), "points": fl["points"].tolist(),
                "scores": fl["scores"].tolist(), "tricks_won": fl["tricks_won"].tolist(),
                "fool_team": int(fl["fool_team"]), "discards": fl["discards"].tolist(),
                "tricks": [([[int(s), int(c)] for s, c in zip(fl["log_seat"][i], fl["log_card"][i])],
                            int(fl["log_winner"][i])) for i in range(HAND_SIZE)]}
        return final_info(self.final["scores"][row], None if w == NOT_OVER else w, last)
