"""Partita, vectorised: ``num_envs`` games of RULES.md Part E stepped together with numpy.

The rules are those of :mod:`tarot_env.rules.partita` (the readable reference), written as boolean
algebra over card tables built once from the same constants, on arrays with the batch axis first:

* legal moves: each hand is also a 54-bit set (``hand_bits``, one uint64 per seat), so follow suit /
  else trump / else anything / the Fool always (B.4.2, PAR-5.2, 5.3) and the discard rule (PAR-4.3,
  4.4) are a few integer operations per row, unpacked once into the ``[B, 57]`` mask;
* the trick: the best card so far is updated as each card falls, through one ``BEATS[best, card]``
  table (PAR-2: trumps over suits, I–V equal with the last played winning, the Fool never wins);
* per-card state: every seat's observation card sections, kept up to date incrementally by
  :class:`~tarot_env.vector.base.BlockMirror` through the reference's own gather tables
  (``_OBS_GATHER``), so the two encoders cannot drift apart; the reference's state ``block`` of a row
  is read back from it (``m.block``, the ``hands``/``played``/… properties, ``state()``);
* the 24 scalar features of every seat (``scalars``, float32 ``[B, 4, 24]``) are kept up to date the
  same way; an observation is two row gathers (cards from the bool mirror, cast once; scalars) and
  one copy of ``played_trick`` (float32 ``[B, 54]``, v1 table memory H.1.1: the trick of every played
  card, the same for every seat, written as each card falls); the v1 ``signal_cards`` are mirror cells
  placed after the scalars (``_OBS_POS``);
* per-row integers: dealer, seat to act, leader, phase, pending signal, the trick log, tricks, hand
  sizes, scores, deals played;
* the step stays on numpy's fast paths (a step is ~40 array operations, so their per-element cost
  is what counts): every table lookup uses one flat key (``BEATS`` as ``_BEATS[best * 54 + card]``,
  offset tables as rows taken with ``np.take(..., axis=0)``), every scatter a 1-D index with a
  scalar value, and row offsets are added from pre-repeated arrays rather than broadcast over a
  short last axis (two-index gathers, broadcast adds and broadcast values take numpy's buffered,
  several-times-slower paths);
* dealing: each row owns a ``np.random.Generator`` seeded like ``PartitaGame(config, seed)`` (first
  dealer ``rng.integers(4)``, one ``rng.permutation(54)`` per deal — drawn for a whole game at once
  with ``rng.permuted``, the same stream — and the next game seeded from ``rng.integers(2**63)`` and
  dealt first by the partner of the last dealer, PAR-3.3), so row ``i`` plays exactly the reference
  game of seed ``row_seeds[i]`` and, after each automatic reset, its ``next_game()``.

``tests/test_vector_partita.py`` drives this engine and the registered AEC environment with the same
random actions and compares every observation, mask, reward, final info, state block and ``state()``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..cards import FRENCH54, TRUMP
from ..engine import NUM_SIGNALS
from ..rules.partita import (
    _GATHERED, _OBS_GATHER, _OBS_POS, _PLAYED_TRICK, _STATE_GATHER, _STATE_GATHERED, COUNTING_VALUE,
    DEALER_EXTRA, DISCARD_SIZE, FOOL, FOOL_POINTS, HALF_TOTAL, HAND_SIZE, N, OBS, PLAIN_DISCARDABLE, PLAYERS,
    STATE, TRUMP_DISCARDABLE, PartitaGame, Phase,
)
from .base import BlockMirror, VecEnv, pack_cards, unpack_cards

# --- card tables (built once from the reference constants) ----------------------------------------
SUIT = FRENCH54.suit.astype(np.int64)
STRENGTH = FRENCH54.strength.astype(np.int64)
EQUAL = FRENCH54.equal_group
NO_LED = 6  # index of the "nothing led yet" row of SUIT_MASK (PAR-5.3: the Fool led fixes nothing)
SUIT_MASK = np.zeros((7, N), dtype=bool)  # suit led -> cards of that suit; NO_LED -> every card
for _s in range(6):
    SUIT_MASK[_s] = SUIT == _s
SUIT_MASK[NO_LED] = True
TRUMP_MASK = SUIT == TRUMP
FOOL_MASK = np.zeros(N, dtype=bool)
FOOL_MASK[FOOL] = True

NO_BEST = N  # "no card yet" row of BEATS


def _beats_table() -> np.ndarray:
    """BEATS[best, card]: ``card`` takes the lead of a trick whose best card so far is ``best``.

    The same order as ``engine.trick_winner`` (B.4.4 / PAR-2): the Fool never wins; the first other
    card leads; a trump beats a suit card and a lower trump, and among trumps I–V (equal strength) the
    later one wins (PAR-2.2); a suit card beats only a lower card of its own suit.
    """
    t = np.zeros((N + 1, N), dtype=bool)
    for c in range(N):
        if c == FOOL:
            continue
        t[NO_BEST, c] = True
        for b in range(N):
            if b == FOOL:
                continue
            if SUIT[c] == TRUMP:
                t[b, c] = SUIT[b] != TRUMP or STRENGTH[c] > STRENGTH[b] or (
                    STRENGTH[c] == STRENGTH[b] and EQUAL[c])
            else:
                t[b, c] = SUIT[c] == SUIT[b] and STRENGTH[c] > STRENGTH[b]
    return t


BEATS = _beats_table()
# LED_AFTER[led, card]: the suit led once ``card`` is played into a trick whose suit led is ``led``
LED_AFTER = np.tile(np.arange(NO_LED + 1, dtype=np.int64)[:, None], (1, N))
LED_AFTER[NO_LED] = np.where(np.arange(N) == FOOL, NO_LED, SUIT)
# SHOWS_VOID[led, card]: playing ``card`` on a trick led in ``led`` shows a void in that suit
SHOWS_VOID = (np.arange(NO_LED + 1)[:, None] != SUIT[None, :]) & (np.arange(N) != FOOL)[None, :]
SHOWS_VOID[NO_LED] = False
# the step code reads these tables through one flat key (row * 54 + card): a 1-D gather is about
# twice as fast as numpy's two-index one
_BEATS, _LED_AFTER, _SHOWS_VOID = BEATS.reshape(-1), LED_AFTER.reshape(-1), SHOWS_VOID.reshape(-1)
# PAR-4.1: deck position -> seat that receives it, per dealer (13 each from the dealer's right,
# the last 2 to the dealer), as in PartitaGame.start_deal.
OWNER = np.array([[(d + 1 + p // HAND_SIZE) % PLAYERS if p < PLAYERS * HAND_SIZE else d for p in range(N)]
                  for d in range(PLAYERS)], dtype=np.int64)

# block positions of each field (the reference's block layout)
_IX = PartitaGame.block_index()
CELL_HAND = np.asarray(_IX.hands, dtype=np.int64)            # [4, 54]
CELL_PLAYED = np.asarray(_IX.played, dtype=np.int64)         # [4, 54]
CELL_TRICK = np.asarray(_IX.trick_by, dtype=np.int64)        # [4, 54]
CELL_WON = np.asarray(_IX.won, dtype=np.int64)               # [2, 54]
CELL_SIGNAL = np.asarray(_IX.signal_table, dtype=np.int64)   # [4, 3, 6]
CELL_SIGCARD = np.asarray(_IX.signal_card, dtype=np.int64)   # [54, 3]: the signal a card carried (H.1.1)
CELL_PUBLIC = np.asarray(_IX.public_discards, dtype=np.int64)  # [54]
CELL_DISCARD = np.asarray(_IX.discards, dtype=np.int64)      # [4, 54]
CELL_VOID = np.asarray(_IX.shown_void, dtype=np.int64)       # [4, 5]: seat x suit (4 suits, trumps)
CELL_PLAY = np.stack([CELL_PLAYED, CELL_TRICK], axis=-1)      # [4, 54, 2]: what a played card sets


def _void_cells() -> np.ndarray:
    """VOID_CELLS[led, seat, card]: the two shown_void cells that ``seat`` sets by playing ``card`` on a
    trick led in ``led`` when SHOWS_VOID[led, card] (PAR-5.2, as TrickGame._note_void): the suit led
    and, for a plain card (not a trump, not the Fool), trumps; for a trump, the suit led twice."""
    t = np.zeros((NO_LED + 1, PLAYERS, N, 2), dtype=np.int64)
    for led in range(TRUMP + 1):  # the Fool's suit is never led; NO_LED shows nothing
        for s in range(PLAYERS):
            t[led, s, :, 0] = CELL_VOID[s, led]
            t[led, s, :, 1] = np.where(SUIT != TRUMP, CELL_VOID[s, TRUMP], CELL_VOID[s, led])
    return t


VOID_CELLS = _void_cells()

# hands as 54-bit sets in one uint64 per seat: the legal-card rules become a few integer operations
BIT = np.left_shift(np.uint64(1), np.arange(N, dtype=np.uint64))


def _bits(mask: np.ndarray) -> np.uint64:
    return np.uint64(np.bitwise_or.reduce(BIT[np.asarray(mask, dtype=bool)]))


SUIT_BITS = np.array([_bits(m) for m in SUIT_MASK], dtype=np.uint64)
TRUMP_BITS = _bits(TRUMP_MASK)
FOOL_BIT = _bits(FOOL_MASK)
PLAIN_BITS = _bits(PLAIN_DISCARDABLE)
TRUMP_DISCARD_BITS = _bits(TRUMP_DISCARDABLE)
ZERO = np.uint64(0)
pack_bits = pack_cards  # bool[..., 54] -> uint64[...]


def unpack_bits(bits: np.ndarray) -> np.ndarray:
    """uint64[...] card sets -> bool[..., 54]."""
    return unpack_cards(bits, N)


# scalar features: float64 quotients rounded once to float32, exactly as the reference encoder
_HS = (np.arange(HAND_SIZE + DEALER_EXTRA + 1) / (HAND_SIZE + DEALER_EXTRA)).astype(np.float32)
_TW = (np.arange(HAND_SIZE + 1) / HAND_SIZE).astype(np.float32)
_HS4, _TW4 = np.repeat(_HS[:, None], 4, axis=1), np.repeat(_TW[:, None], 4, axis=1)  # one value per viewer
_SCALARS_END = OBS.phase.stop  # the v0 scalars end here; the v1 sections follow (H.1.1)
_STATE_TAIL_END = len(_STATE_GATHER)  # the state mirror's columns: the head's cells, then signal_cards'

DISCARD, PLAY = int(Phase.DISCARD), int(Phase.PLAY)
DECK_CHUNK = 16  # decks drawn at once per row (one generator call for a whole default game)
_DECK_TILE = np.tile(np.arange(N, dtype=np.int64), (DECK_CHUNK, 1))
_PACKET_STARTS = np.arange(PLAYERS) * HAND_SIZE  # deck positions where each seat's packet starts
# the scalar features after the card sections, kept per seat: offsets relative to their start
SCALARS = OBS.phase.stop - _GATHERED
Q_PENDING, Q_FROM_DEALER, Q_LEADER, Q_HAND_SIZES, Q_TRICKS_WON, Q_SCORES, Q_DEAL, Q_PHASE = (
    getattr(OBS, name).start - _GATHERED for name in (
        "pending_signal", "seat_from_dealer", "leader", "hand_sizes", "tricks_won", "scores", "deal", "phase"))
VIEWERS = np.arange(PLAYERS, dtype=np.int64)[None, :]  # broadcast over rows: one column per seat
VIEW_OFF = VIEWERS * SCALARS
# scalar offsets, per seat (rows) and viewer (columns): the leader one-hot of leader l; the tricks-won
# feature of team t (mine or the other side's)
_LEADER_POS = VIEW_OFF + Q_LEADER + ((np.arange(PLAYERS)[:, None] - VIEWERS) & 3)
_TRICKS_WON_POS = VIEW_OFF + Q_TRICKS_WON + (np.arange(2)[:, None] != (VIEWERS & 1))
SEATS = np.arange(PLAYERS, dtype=np.int64)
# PAR-6 counting: per card its value and 1 (float32, exact for these small sums: one BLAS product)
VALUE_AND_ONE = np.stack([COUNTING_VALUE, np.ones(N)], axis=1).astype(np.float32)
NOT_OVER = -2  # final_winner of an episode that ended with the game still going (episode="deal")


class PartitaVec(VecEnv):
    """``num_envs`` Partita games in lockstep (see the module docstring and :class:`VecEnv`).

    Row selectors ``R`` in the step code are ``slice(None)`` when every row takes the same branch
    (the usual case: without signals every deal lasts exactly 54 decisions, so all rows stay in the
    same phase) and an index array otherwise; per-(row, seat) arrays are addressed through flat indices.
    """

    Game = PartitaGame

    def __init__(self, num_envs: int, seed: int | None = None, **options: Any):
        super().__init__(num_envs, seed, **options)
        B = self.num_envs
        self.signals = self.config.partita_signals == "bolognese3"  # PAR-7.1
        self.deals_per_game = self.config.deals_per_game
        self.m = m = BlockMirror(PartitaGame, _OBS_GATHER, B, obs_pos=_OBS_POS)
        # mirror offsets of the cells a played card sets, as rows addressed by one flat key (np.take
        # along axis 0 is several times faster than indexing ``[seat, card]`` with a trailing axis):
        # played and trick_by [seat * 54 + card]; won [team * 54 + card]; voids [(led * 4 + seat) * 54 + card]
        self._pos_play = m.positions(CELL_PLAY).reshape(PLAYERS * N, -1)  # [216, 8]
        self._pos_won = m.positions(CELL_WON[..., None]).reshape(2 * N, -1)  # [108, 4]
        self._pos_void = m.positions(VOID_CELLS).reshape((NO_LED + 1) * PLAYERS * N, -1)  # [1512, 8]
        # each row's mirror base offset, repeated for the 8 cells of a play and the 16 of a closed
        # trick: added without a broadcast (numpy buffers a broadcast over a short last axis)
        self._row_obs8 = np.repeat(m.row_obs, 8).reshape(B, 8)
        self._row_obs16 = np.repeat(m.row_obs, 16).reshape(B, 16)
        # every seat's hand-size feature of seat s: scalar offsets [4 (s), 4 (viewer)]
        self._hs_pos = (VIEW_OFF + Q_HAND_SIZES + ((np.arange(PLAYERS)[:, None] - VIEWERS) & 3))
        self._srow0 = self._ar * (PLAYERS * SCALARS)
        self._srow4 = np.repeat(self._srow0, PLAYERS).reshape(B, PLAYERS)  # (the same, per viewer)
        i64 = lambda *shape: np.zeros((B,) + shape, dtype=np.int64)  # noqa: E731
        self.dealer, self.current, self.leader, self.phase = i64(), i64(), i64(), i64()
        self.pending = np.full(B, -1, dtype=np.int64)
        self.trick_len = i64()
        # every trick of the deal: seat and card by play order, and its winner (history[-1]["tricks"])
        self.log_seat, self.log_card = i64(HAND_SIZE, PLAYERS), i64(HAND_SIZE, PLAYERS)
        self.log_winner = i64(HAND_SIZE)
        self.best, self.best_seat, self.led = i64(), i64(), i64()
        self.tricks, self.tricks_won, self.hand_sizes = i64(), i64(2), i64(PLAYERS)
        self.hand_bits = np.zeros((B, PLAYERS), dtype=np.uint64)  # = pack_bits(self.hands)
        self.scores, self.deals_played = i64(2), i64()
        self.trumps_needed, self.discarded, self.trumps_discarded = i64(), i64(), i64()
        self.rngs: list[np.random.Generator] = []
        self._decks = np.zeros((B, min(DECK_CHUNK, self.config.deals_per_game), N), dtype=np.int8)
        self._decks_left, self._deck_next = i64(), i64()
        # flat views for per-(row, seat) / per-(row, team) updates
        self._hb, self._hs = self.hand_bits.reshape(-1), self.hand_sizes.reshape(-1)
        self._tw, self._lc = self.tricks_won.reshape(-1), self.log_card.reshape(-1)
        # the log position of each row's next card (row * 52 + cards played this deal: the log is
        # filled in play order); the seats are derived from the trick leaders when the deal ends
        self._lpos = i64()
        self._row4, self._row2 = self._ar * PLAYERS, self._ar * 2
        # the last finished deal of each row (the reference's history[-1]) and final episode info
        self.last = {k: i64(*s) for k, s in (("deal", ()), ("dealer", ()), ("points", (2,)),
                                              ("scores", (2,)), ("tricks_won", (2,)), ("fool_team", ()),
                                              ("discards", (DISCARD_SIZE,)), ("log_seat", (HAND_SIZE, PLAYERS)),
                                              ("log_card", (HAND_SIZE, PLAYERS)), ("log_winner", (HAND_SIZE,)))}
        self.final = {k: i64(*s) for k, s in (("scores", (2,)), ("winner", ()))}
        self.final_last = {k: v.copy() for k, v in self.last.items()}
        # every seat's scalar features, kept up to date like the card mirror (float32[B, 4, 24])
        self.scalars = np.zeros((B, PLAYERS, SCALARS), dtype=np.float32)
        self._sf = self.scalars.reshape(-1)
        self._srow = self._ar[:, None] * (PLAYERS * SCALARS) + VIEW_OFF  # [B, 4] row+seat offsets
        self._scal = np.zeros((B, SCALARS), dtype=np.float32)
        # H.1.1: per card, _PLAYED_TRICK[t + 1] once played in trick t this deal (float32[B, 54])
        self.played_trick = np.zeros((B, N), dtype=np.float32)
        self._ptf = self.played_trick.reshape(-1)
        self._row54 = self._ar * N
        k = self.deals_per_game
        self._deal_table = (np.arange(k + 1) / k).astype(np.float32)
        self._left_table = ((k - np.arange(k + 1)) / k).astype(np.float32)
        self._bits = np.zeros(B, dtype=np.uint64)

    # --- episodes ------------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        B = self.num_envs
        dealers = self._reseed_first_dealers()
        self.scores[:] = 0
        self.deals_played[:] = 0
        self._decks_left[:] = 0
        for v in (*self.last.values(), *self.final.values(), *self.final_last.values()):
            v[...] = 0
        self._start_deal(np.arange(B, dtype=np.int64), dealers)

    def _next_decks(self, rows: np.ndarray) -> np.ndarray:
        """The next deal's deck of each row: ``rng.permutation(54)`` of the reference, drawn for up to
        ``DECK_CHUNK`` deals of the game at once with ``rng.permuted`` (the same stream: nothing else
        draws from a row's generator between the deals of a game)."""
        left = self._decks_left[rows]
        refill = rows[left == 0]
        if len(refill):
            k, rngs, decks = self.deals_per_game, self.rngs, self._decks
            for r, n in zip(refill.tolist(), np.minimum(DECK_CHUNK, k - self.deals_played[refill]).tolist()):
                decks[r, :n] = rngs[r].permuted(_DECK_TILE[:n], axis=1)
                self._decks_left[r] = n
                self._deck_next[r] = 0
        i = self._deck_next[rows]
        self._deck_next[rows] = i + 1
        self._decks_left[rows] -= 1
        return self._decks[rows, i].astype(np.int64)

    def _start_deal(self, rows: np.ndarray, dealers: np.ndarray) -> None:
        """PAR-4.1: shuffle each row's pack from its own stream and deal 13 + 13 + 13 + 15."""
        decks = self._next_decks(rows)
        self.m.clear_rows(rows)
        owners = OWNER[dealers]
        self.m.write_own(rows[:, None], owners, OBS.hand.start + decks, True)  # a hand is seen by its owner
        if self.m.smir is not None:
            self.m.write_state(rows[:, None], CELL_HAND[owners, decks], True)
        k = len(rows)
        # hand bit sets straight from the deck: OR over each seat's packet (13, 13, 13, 13 + 2)
        packets = np.bitwise_or.reduceat(BIT[decks], _PACKET_STARTS, axis=1)  # seats d+1, d+2, d+3, d
        self.hand_bits[rows[:, None], (dealers[:, None] + 1 + np.arange(PLAYERS)) % PLAYERS] = packets
        self.dealer[rows] = dealers
        self.current[rows] = dealers
        self.leader[rows] = dealers
        self.phase[rows] = DISCARD
        hs = np.full((len(rows), PLAYERS), HAND_SIZE, dtype=np.int64)
        hs[np.arange(len(rows)), dealers] += DEALER_EXTRA
        self.hand_sizes[rows] = hs
        plain = np.bitwise_count(packets[:, PLAYERS - 1] & PLAIN_BITS).astype(np.int64)
        self.trumps_needed[rows] = np.maximum(0, DISCARD_SIZE - plain)  # PAR-4.4, per-card reading
        for a, v in ((self.discarded, 0), (self.trumps_discarded, 0), (self.pending, -1), (self.trick_len, 0),
                     (self.best, NO_BEST), (self.best_seat, -1), (self.led, NO_LED), (self.tricks, 0),
                     (self.tricks_won, 0)):
            a[rows] = v
        self._lpos[rows] = rows * (HAND_SIZE * PLAYERS)
        self.played_trick[rows] = 0.0
        # every seat's scalar features at the start of the deal (PartitaGame.observation's tail)
        k = len(rows)
        S = np.zeros((k, PLAYERS, SCALARS), dtype=np.float32)
        d = dealers[:, None]
        r = np.arange(k)[:, None]
        S[r, VIEWERS, Q_FROM_DEALER + ((VIEWERS - d) & 3)] = 1.0
        S[r, VIEWERS, Q_LEADER + ((d - VIEWERS) & 3)] = 1.0
        S[:, :, Q_HAND_SIZES:Q_HAND_SIZES + PLAYERS] = _HS[HAND_SIZE]
        S[r, VIEWERS, Q_HAND_SIZES + ((d - VIEWERS) & 3)] = _HS[HAND_SIZE + DEALER_EXTRA]
        S[:, :, Q_TRICKS_WON:Q_TRICKS_WON + 2] = _TW[0]
        sc = self.scores[rows]
        my = VIEWERS & 1
        S[:, :, Q_SCORES] = sc[r, my] / HALF_TOTAL
        S[:, :, Q_SCORES + 1] = sc[r, 1 - my] / HALF_TOTAL
        dp = self.deals_played[rows]
        S[:, :, Q_DEAL] = self._deal_table[dp][:, None]
        S[:, :, Q_DEAL + 1] = self._left_table[dp][:, None]
        S[:, :, Q_PHASE + DISCARD] = 1.0
        self.scalars[rows] = S

    # --- one action per row ----------------------------------------------------------------------------
    def _apply(self, a: np.ndarray) -> None:
        play = self.phase == PLAY
        if self.signals:
            sig = a >= N
            if sig.any():
                r = np.flatnonzero(sig)
                self.pending[r] = a[r] - N  # PAR-7.1: the signal goes with this seat's next card
                self._sf[self._srow[r, self.current[r]] + Q_PENDING + self.pending[r]] = 1.0
                play &= ~sig
                disc = self.phase == DISCARD
                if disc.any():
                    R = np.flatnonzero(disc)
                    self._discard(R, a[R])
                if play.any():
                    R = np.flatnonzero(play)
                    self._play(R, a[R])
                return
        if play.all():
            self._play(slice(None), a)
        elif not play.any():
            self._discard(slice(None), a)
        else:
            R = np.flatnonzero(~play)
            self._discard(R, a[R])
            R = np.flatnonzero(play)
            self._play(R, a[R])

    def _discard(self, R, cards: np.ndarray) -> None:
        """PAR-4.2, 4.5: the card leaves the dealer's hand for his discards; a trump is announced."""
        rows = self._ar[R]
        d = self.dealer[R]
        m = self.m
        self._take_from_hand(R, rows, d, cards)
        m.write_own(rows, d, OBS.my_discards.start + cards, True)  # seen by the dealer alone (H.2, H.5)
        if m.smir is not None:
            m.write_state(rows, CELL_DISCARD[d, cards], True)
        tr = SUIT[cards] == TRUMP
        if tr.any():
            m.write(rows[tr], CELL_PUBLIC[cards[tr]], True)
            self.trumps_discarded[rows[tr]] += 1
        self.discarded[R] += 1
        done = self.discarded[R] == DISCARD_SIZE
        if done.any():
            r = rows[done]
            self.phase[r] = PLAY  # PAR-5.1: the dealer (already current) leads
            self._sf[self._srow[r] + (Q_PHASE + DISCARD)] = 0.0
            self._sf[self._srow[r] + (Q_PHASE + PLAY)] = 1.0

    def _play(self, R, cards: np.ndarray) -> None:
        rows = self._ar[R]
        s = self.current[R]
        m = self.m
        self._take_from_hand(R, rows, s, cards)
        sc = s * N + cards
        pos = np.take(self._pos_play, sc, axis=0)  # played and trick_by, in every seat's view
        pos += self._row_obs8[R]
        m.write_flat(pos, True)
        if m.smir is not None:
            m.write_state(rows, CELL_PLAY[s, cards], True)
        if self.signals:
            ps = self.pending[R]
            sg = ps >= 0
            if sg.any():
                r = rows[sg]
                m.write(r, CELL_SIGNAL[s[sg], ps[sg], SUIT[cards[sg]]], True)
                m.write(r, CELL_SIGCARD[cards[sg], ps[sg]], True)  # H.1.1: which card carried it
                self._sf[self._srow[r, s[sg]] + Q_PENDING + ps[sg]] = 0.0
                self.pending[r] = -1
        self._lc[self._lpos[R]] = cards
        self._ptf[self._row54[R] + cards] = _PLAYED_TRICK[self.tricks[R] + 1]  # H.1.1: when it was played
        self._lpos[R] += 1
        best = self.best[R]
        led = self.led[R]
        # public voids (PAR-5.2, as TrickGame._note_void): not following shows the led suit is gone,
        # and a plain card on it (not a trump, not the Fool) shows no trumps either
        lc = led * N + cards
        void = np.flatnonzero(_SHOWS_VOID[lc])
        if len(void):
            rv, key = rows[void], led[void] * (PLAYERS * N) + sc[void]
            m.write_at(rv, np.take(self._pos_void, key, axis=0), True)
            if m.smir is not None:
                m.write_state(rv, VOID_CELLS.reshape(-1, 2)[key], True)
        self.led[R] = _LED_AFTER[lc]  # the first card other than the Fool sets the suit
        beats = _BEATS[best * N + cards]
        self.best[R] = np.where(beats, cards, best)
        self.best_seat[R] = np.where(beats, s, self.best_seat[R])
        n = self.trick_len[R] + 1
        self.trick_len[R] = n
        self.current[R] = (s + 1) & 3  # next(seat) with 4 players
        full = n == PLAYERS
        if full.all():
            self._close_trick(R)
        elif full.any():
            self._close_trick(rows[full])

    def _take_from_hand(self, R, rows: np.ndarray, seat: np.ndarray, cards: np.ndarray) -> None:
        """``cards`` leave ``seat``'s hand (its own view, the bit set, every seat's hand-size feature)."""
        m = self.m
        m.write_own(rows, seat, OBS.hand.start + cards, False)  # a hand is seen by its owner alone
        if m.smir is not None:
            m.write_state(rows, CELL_HAND[seat, cards], False)
        i = self._row4[R] + seat
        self._hb[i] ^= BIT[cards]
        self._hs[i] -= 1
        self._set_hand_size(R, seat, self._hs[i])

    def _set_hand_size(self, R, seat: np.ndarray, size: np.ndarray) -> None:
        """Every seat's view of ``seat``'s new hand size (hand_sizes is seat-relative)."""
        pos = np.take(self._hs_pos, seat, axis=0)
        pos += self._srow4[R]
        self._sf[pos.reshape(-1)] = np.take(_HS4, size, axis=0).reshape(-1)  # (1-D index and values: the fast path)

    def _close_trick(self, R) -> None:
        """B.4.4 / PAR-2: the best card takes the trick; PAR-5.3: the Fool goes to its owner's team."""
        rows = self._ar[R]
        w = self.best_seat[R]
        team = w & 1
        t = self.tricks[R]
        tc = np.take(self.log_card.reshape(-1, PLAYERS), rows * HAND_SIZE + t, axis=0)
        self.log_winner.reshape(-1)[rows * HAND_SIZE + t] = w
        key = (team * N)[:, None] + tc  # won [team * 54 + card]: the winners' pile ...
        fr, fc = np.nonzero(tc == FOOL)  # ... but the Fool goes to its owner's (the (leader + i)-th seat)
        key[fr, fc] = ((self.leader[R][fr] + fc) & 1) * N + FOOL
        m = self.m
        pos = np.take(self._pos_won, key, axis=0).reshape(len(rows), -1)
        pos += self._row_obs16[R]
        m.write_flat(pos, True)
        m.obs[R, :, OBS.trick] = False  # the trick section of every seat: one strided clear
        if m.smir is not None:
            m.write_state(rows, CELL_WON.reshape(-1)[key], True)
            m.smir[R, STATE.trick] = False
        ti = self._row2[R] + team
        self._tw[ti] += 1
        srow = self._srow4[R]
        sf = self._sf
        sf[(np.take(_LEADER_POS, self.leader[R], axis=0) + srow).reshape(-1)] = 0.0
        sf[(np.take(_LEADER_POS, w, axis=0) + srow).reshape(-1)] = 1.0
        tw_pos = (np.take(_TRICKS_WON_POS, team, axis=0) + srow).reshape(-1)
        sf[tw_pos] = np.take(_TW4, self._tw[ti], axis=0).reshape(-1)
        self.leader[R] = w
        self.current[R] = w
        self.trick_len[R] = 0
        self.best[R] = NO_BEST
        self.best_seat[R] = -1
        self.led[R] = NO_LED
        t += 1
        self.tricks[R] = t
        end = t == HAND_SIZE
        if end.any():
            self._end_deal(rows if end.all() else rows[end])

    def _end_deal(self, rows: np.ndarray) -> None:
        """PAR-6: X = ceil(n/2) + Σ values + 5 for the Fool per team; score = X − 40; next deal."""
        k = len(rows)
        d = self.dealer[rows]
        mirror = self.m.obs
        piles = mirror[rows, 0, OBS.won].reshape(k, 2, N)  # seat 0 sees team 0's pile first
        discards = mirror[rows, d, OBS.my_discards]
        piles[np.arange(k), d & 1] |= discards
        fool = piles[:, :, FOOL].astype(np.int64)
        value_cnt = (piles.view(np.uint8).astype(np.float32) @ VALUE_AND_ONE).astype(np.int64)  # [k, 2, 2]
        cnt = value_cnt[:, :, 1] - fool
        points = (cnt + 1) // 2 + value_cnt[:, :, 0] + FOOL_POINTS * fool
        sc = points - HALF_TOTAL
        self.scores[rows] += sc
        self._dirty = True  # rewards and/or ended episodes in this step
        last = self.last
        last["deal"][rows] = self.deals_played[rows]
        last["dealer"][rows] = d
        last["points"][rows] = points
        last["scores"][rows] = sc
        last["tricks_won"][rows] = self.tricks_won[rows]
        last["fool_team"][rows] = fool[:, 1]
        last["discards"][rows] = np.flatnonzero(discards).reshape(k, DISCARD_SIZE) % N  # in card order
        # who played each card: trick t is led by the winner of trick t - 1 (the dealer leads the first)
        leaders = np.concatenate([d[:, None], self.log_winner[rows, :HAND_SIZE - 1]], axis=1)
        self.log_seat[rows] = (leaders[:, :, None] + SEATS) & 3
        last["log_seat"][rows] = self.log_seat[rows]
        last["log_card"][rows] = self.log_card[rows]
        last["log_winner"][rows] = self.log_winner[rows]
        cfg = self.env_config
        if cfg.reward == "deal":
            r0 = (sc[:, 0] - sc[:, 1]).astype(np.float64) / cfg.reward_scale
            r1 = (sc[:, 1] - sc[:, 0]).astype(np.float64) / cfg.reward_scale
            for seat in range(PLAYERS):
                self._step_rew[rows, seat] += r0 if seat % 2 == 0 else r1
        played = self.deals_played[rows] + 1
        self.deals_played[rows] = played
        over = played >= self.deals_per_game
        go = rows[over]
        if cfg.episode == "deal":
            self._finish(rows, over)
        elif len(go):
            self._finish(go, np.ones(len(go), dtype=bool))
        cont = rows[~over]
        if len(cont):
            self._start_deal(cont, (d[~over] + 1) % PLAYERS)  # PAR-3.3: next(dealer)
        if len(go):
            self._new_game(go)

    def _finish(self, rows: np.ndarray, over: np.ndarray) -> None:
        """The episode of ``rows`` ends: record the final info (and, for games over, the result)."""
        total = self.scores[rows, 0]
        winner = np.where(total > 0, 0, np.where(total < 0, 1, -1))  # PAR-6.7: 0 is a draw
        self.final["scores"][rows] = self.scores[rows]
        self.final["winner"][rows] = np.where(over, winner, NOT_OVER)
        for k, v in self.last.items():
            self.final_last[k][rows] = v[rows]
        self._done[rows] = True
        if self.env_config.reward == "game" and over.any():
            self._game_result_rewards(rows[over], winner[over])

    def _new_game(self, rows: np.ndarray) -> None:
        """PartitaGame.next_game: seeded from the row's stream; the last dealer's partner deals."""
        self._reseed_next_games(rows)
        self.scores[rows] = 0
        self.deals_played[rows] = 0
        self._start_deal(rows, (self.dealer[rows] + 2) % PLAYERS)

    # --- encoders ------------------------------------------------------------------------------------
    def _encode(self) -> None:
        """The acting seat's observation (as ``PartitaGame.observation``) and legal mask per row:
        two row gathers (card sections from the bool mirror, scalar features from ``scalars``)."""
        seat = self._seat
        np.copyto(seat, self.current)
        obs = self._obs
        self.m.gather_obs(seat, obs)
        np.take(self.scalars.reshape(-1, SCALARS), self._row4 + seat, axis=0, out=self._scal, mode="clip")
        obs[:, _GATHERED:_SCALARS_END] = self._scal
        obs[:, OBS.played_trick] = self.played_trick  # absolute card ids: the same for every seat
        self._encode_masks()

    def _encode_masks(self) -> None:
        """B.4.2 / PAR-5.2 in play (follow suit, else trump, else anything; the Fool always, PAR-5.3);
        PAR-4.3/4.4 in the discard (a card may go if the discard can still end as a legal set)."""
        phase = self.phase
        h = self._hb[self._row4 + self.current]
        play = phase == PLAY
        all_play = play.all()
        legal = self._bits
        if all_play or play.any():
            f = h & SUIT_BITS[self.led]
            t = h & TRUMP_BITS
            np.copyto(legal, np.where(f != ZERO, f, np.where(t != ZERO, t, h)) | (h & FOOL_BIT))
        if not all_play:
            need, tdone = self.trumps_needed, self.trumps_discarded
            plain_ok = (self.discarded - tdone) < DISCARD_SIZE - need
            allowed = np.where(plain_ok, PLAIN_BITS, ZERO) | np.where(tdone < need, TRUMP_DISCARD_BITS, ZERO)
            np.copyto(legal, h & allowed, where=~play)
        self._mask[:, :N] = unpack_bits(legal)
        if self.signals:
            self._mask[:, N:N + NUM_SIGNALS] = (play & (self.pending < 0))[:, None]  # one per card

    # --- full information ----------------------------------------------------------------------------
    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, STATE]: ``PartitaGame.state_vector()`` of every row (centralised critics only).

        The first call starts mirroring the state's card sections incrementally (a few more writes
        per step from then on); ``out`` (float32[B, STATE]) is filled instead of a new array.
        """
        B, ar = self.num_envs, self._ar
        o = np.empty((B, STATE.size), dtype=np.float32) if out is None else out
        if self.m.smir is None:  # the first call: mirror the state's card sections from now on
            self.m.enable_state(_STATE_GATHER)
        smir = self.m.smir
        np.copyto(o[:, :_STATE_GATHERED], smir[:, :_STATE_GATHERED])
        o[:, _STATE_GATHERED:] = 0.0
        o[:, STATE.signal_cards] = smir[:, _STATE_GATHERED:_STATE_TAIL_END]
        o[:, STATE.played_trick] = self.played_trick
        p = np.flatnonzero(self.pending >= 0)
        o[p, STATE.pending_signal.start + self.pending[p]] = 1.0
        o[ar, STATE.dealer.start + self.dealer] = 1.0
        o[ar, STATE.current.start + self.current] = 1.0  # rows are never over (auto-reset)
        o[ar, STATE.leader.start + self.leader] = 1.0
        o[:, STATE.tricks_won] = self.tricks_won / HAND_SIZE
        o[:, STATE.scores] = self.scores / HALF_TOTAL
        o[:, STATE.deal.start] = self._deal_table[self.deals_played]
        o[:, STATE.deal.start + 1] = self._left_table[self.deals_played]
        o[ar, STATE.phase.start + self.phase] = 1.0
        return o

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"final_scores": self.final["scores"], "final_winner": self.final["winner"],
                "final_deal_scores": self.final_last["scores"]}

    def final_info(self, row: int) -> dict[str, Any]:
        """Row ``row``'s last finished episode as the AEC env's final ``infos[agent]`` dict."""
        w = int(self.final["winner"][row])
        fl = {k: v[row] for k, v in self.final_last.items()}
        return {
            "scores": self.final["scores"][row].tolist(),
            "winner": None if w == NOT_OVER else w,
            "last_result": {"deal": int(fl["deal"]), "dealer": int(fl["dealer"]),
                            "points": fl["points"].tolist(), "scores": fl["scores"].tolist(),
                            "tricks_won": fl["tricks_won"].tolist(), "fool_team": int(fl["fool_team"]),
                            "discards": fl["discards"].tolist(),
                            "tricks": [([[int(s), int(c)] for s, c in zip(fl["log_seat"][i], fl["log_card"][i])],
                                        int(fl["log_winner"][i])) for i in range(HAND_SIZE)]},
        }
