"""Heuristic rollouts all in compiled code: ``heuristic_playouts(game, rows, first, teams, config, tables)``.

A search's rollouts with the heuristic (``agents.players.pimc.EngineRollouts``, ``rollout="heuristic"``) can step
the batched engine from Python and build every row's whole observation at every step, of which the
heuristic reads a few sections. Here, as ``<Game>Rows.random_playouts`` does for uniform play, the game's
own step kernels play every row without observations, and at each decision the heuristic's decision kernel
(``agents.players.heuristic.decide_view``, unchanged) gets the card sets it would read from the seat to act's
observation (the phase, the hand, the cards seen, the trick, the signals, a pending signal), read from the
same state cells that observation copies. The heuristic therefore chooses exactly what it chooses from the
engine's observation (``tests/test_heuristic_playouts.py``: the same values as the stepped rollouts on
seeded positions, every game and option set); RULES.md Part H: only what the acting seat sees.

* Millone (:func:`_millone_decide`): the engine's ``_step`` without observations, all rows a move at a time.
* Partita (:func:`_partita_decide`): row after row, each its deal to the end (as ``PartitaRows.random_playouts``);
  the state holds the card rows as card sets already.
* Ottocento (:func:`_ottocento_decide`): row after row to the end of its hand by the engine's own stage
  kernels (``ottocento._act``, ``_legal_row``, ``_record_hand``, as ``OttocentoRows.random_playouts``): the a
  monte question, the dealer's discards, the declarations, the signals and the Matto; the card sets are
  the row's own.

The kernels run without numba's reference counting (``_nrt=False``, as the engines' step kernels,
docs/architecture.md): they allocate nothing (the caller passes the scratch arrays); with counting, every
read of a state field inside the inlined engine code took and released a reference (an atomic operation),
which was most of a rollout's time.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from tarot_env.engine import NUM_SIGNALS
from tarot_env.rules import combos, millone as mil, ottocento as ott, partita as par

from .heuristic import _forced, _plays, decide_view

__all__ = ["PLAYOUTS", "heuristic_playouts"]

PLAYOUTS = ("partita", "millone", "ottocento")  # games whose heuristic rollouts run here
_SIGNAL_CELLS = NUM_SIGNALS * 6  # a seat's signal table: cell 6 * signal + suit (PAR-7.1, OTT-8.2)
assert par.SIGNAL_SUITS == 6 and ott._SIG_CELLS == _SIGNAL_CELLS


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _cells(cells, start, length):
    """Cells ``start:start + length`` of a row's bool cells as a set (bit ``i`` := cell ``start + i``)."""
    x = np.int64(0)
    for i in range(length):
        x |= np.int64(cells[start + i]) << i
    return x


# --- Millone ---------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def _millone_decide(st, bit, b, mask, game, cards, beats, trick):
    """The heuristic's action for the seat to act in row ``b`` from what that seat's observation shows
    (``millone._observe``; H.4: my discards only; seat-relative: me, then the opponent): the phase, my hand,
    the cards seen (my hand and discards, both seats' played cards and won piles, the card exchanged), the
    trick on the table (at most the card led). ``trick``: scratch int64[2]."""
    s = st.current[b]
    hand = np.int64(st.hand_bits[b, s])
    phase = st.phase[b]
    if phase != mil.PLAY:
        return decide_view(phase, hand, 0, trick[:0], trick[:0], 0, 0, False, mask, game, cards, beats)
    seen = st.hand_bits[b, s] | st.disc_bits[b, s]
    for p in range(mil.PLAYERS):
        seen |= st.played_bits[b, p] | st.won_bits[b, p]
    paid = st.exchange_card[b]
    if paid >= 0:
        seen |= bit[paid]
    c = st.lead[b]
    t = 0 if c == mil.NO_CARD else 1
    trick[0], trick[1] = (st.lead_seat[b] - s) & 1, c  # (its seat relative to mine, its card)
    return decide_view(phase, hand, np.int64(seen), trick[:t], trick[1:1 + t], 0, 0, False, mask, game, cards, beats)


@njit(cache=True, nogil=True, _nrt=False)
def _millone_playouts(st, tb, first, mdc, max_hands, no_obs, no_sparse, off, mask, seat, pending, no_cc, acts, trick,
                      game, cards, beats):
    """Row ``b`` takes ``first[b]``, then the heuristic's action at each decision (:func:`_millone_decide`),
    until its hand is played out, all by the engine's own step (``millone._step`` without observations).
    Every hand is the same number of moves (MIL-2.4, 2.6, 4.1), so rows as far into their hands end at the
    same step: returns how many rows it ended (``pending[:n]``). ``trick``: scratch int64[2]. ``off`` is False,
    passed in (a literal ``False`` here would compile ``millone._step`` a second time)."""
    for b in range(first.shape[0]):
        acts[b] = first[b]
    bit = tb.bit
    for _ in range(2 * mil.FIRST_DISCARD + mil.SECOND_DISCARD + mil.PLAYERS * mil.TRICKS):  # (the most moves)
        n = mil._step(st, tb, acts, mdc, max_hands, no_obs, mask, seat, pending, no_cc, off, no_sparse, off)
        if n:
            return n
        for b in range(acts.shape[0]):
            acts[b] = _millone_decide(st, bit, b, mask[b], game, cards, beats, trick)
    return 0


def _millone(rows, first: np.ndarray, teams: np.ndarray, config, tables) -> np.ndarray:
    trick = np.empty(2, np.int64)
    return rows.play_out("heuristic_playouts", first, teams, config, lambda f, mask, seat, acts: _millone_playouts(
        rows.s, rows.tb, f, rows.mdc, rows.max_hands, mil._NO_OBS, mil.NO_SPARSE, False, mask, seat, rows._pending,
        mil._NO_CC, acts, trick, *tables))


# --- Partita ---------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def _partita_decide(s, b, mask, game, cards, beats, trick):
    """The heuristic's action for the seat to act in row ``b`` from what that seat's observation shows
    (``partita._observe``; seat-relative): the phase, my hand, the cards seen (my hand and discards, the
    announced discards (PAR-4.5), every seat's played cards, both won piles), the trick on the table (in play
    order), my signals and my partner's (PAR-7.1), whether I have a signal pending. ``trick``: scratch
    int64[8]."""
    me, sets = s.current[b], s.sets
    hand, phase = np.int64(sets[b, par.HANDS + me]), s.phase[b]
    if not _plays(phase, game):
        return decide_view(phase, hand, 0, trick[:0], trick[:0], 0, 0, False, mask, game, cards, beats)
    seen = sets[b, par.HANDS + me] | sets[b, par.DISCARDS + me] | sets[b, par.PUBLIC]
    for q in range(par.PLAYERS):
        seen |= sets[b, par.PLAYED + q]
    seen |= sets[b, par.WON] | sets[b, par.WON + 1]
    table = s.table[b]
    mine = _cells(table, par.SIGNAL_TABLE + me * _SIGNAL_CELLS, _SIGNAL_CELLS)
    partners = _cells(table, par.SIGNAL_TABLE + ((me + 2) % 4) * _SIGNAL_CELLS, _SIGNAL_CELLS)
    t, k = s.trick_len[b], s.tricks[b]
    for i in range(t):  # (its seat relative to mine, its card), in play order
        trick[i], trick[4 + i] = (s.log_seat[b, k, i] - me) % 4, s.log_card[b, k, i]
    return decide_view(phase, hand, np.int64(seen), trick[:t], trick[4:4 + t], mine, partners, s.pending[b] >= 0,
                       mask, game, cards, beats)


@njit(cache=True, nogil=True, _nrt=False)
def _partita_playouts(s, first, teams, signals, mask, trick, values, game, cards, beats):
    """Row ``b`` takes ``first[b]``, then the heuristic's action at each decision (forced moves: the one
    legal action) from the seat to act's view (:func:`_partita_decide`) until its deal is scored (PAR-6);
    ``values[b]``: ``teams[b]``'s deal score minus the other team's. ``mask``: a scratch row; ``trick``:
    scratch int64[8]."""
    for b in range(len(first)):
        a = first[b]
        while True:
            par._apply_action(s, b, a)
            if s.deal_over[b]:
                break
            par._legal(s, b, signals, mask)
            a = _forced(mask)
            if a < 0:
                a = _partita_decide(s, b, mask, game, cards, beats, trick)
        t = teams[b]
        values[b] = s.deal_scores[b, t] - s.deal_scores[b, 1 - t]


def _partita(rows, first: np.ndarray, teams: np.ndarray, config, tables) -> np.ndarray:
    if len(first) != len(rows.dealer) or len(teams) != len(first):
        raise ValueError(f"heuristic_playouts needs one first action and team per row ({len(rows.dealer)} rows: "
                         f"got {len(first)}, {len(teams)})")
    values = np.zeros(len(first))
    mask, trick = np.zeros(par.NUM_ACTIONS, dtype=bool), np.empty(8, np.int64)
    _partita_playouts(rows.s, np.asarray(first, dtype=np.int64), np.asarray(teams, dtype=np.int64),
                      config.signals, mask, trick, values, *tables)
    return values


# --- Ottocento -------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def _ottocento_decide(st, b, mask, game, cards, beats, trick):
    """The heuristic's action for the seat to act in row ``b`` from what that seat's observation shows
    (``ottocento._observe``, ``_scalars``; seat-relative): the phase, my hand, the cards seen (my hand and
    discards, every seat's played cards, both won piles, the Matto's payment), the trick on the table (from
    the leader), my signals and my partner's (OTT-8.2), whether I have a signal pending (OTT-8.1).
    ``trick``: scratch int64[8]."""
    s = st.current[b]
    hand, phase = np.int64(st.hbits[b, s]), st.phase[b]
    if not _plays(phase, game):
        return decide_view(phase, hand, 0, trick[:0], trick[:0], 0, 0, False, mask, game, cards, beats)
    pb, wb = st.pbits, st.wbits
    seen = hand | np.int64(pb[b, 0] | pb[b, 1] | pb[b, 2] | pb[b, 3] | wb[b, 0] | wb[b, 1] | st.xbits[b, s])
    if st.paid[b] >= 0:  # (played, won, my discards, the Matto's payment)
        seen |= np.int64(1) << st.paid[b]
    cells = ott._signal_cells(st, b, s)  # (me, right, partner, left)
    mine, partners = np.int64(cells[0]), np.int64(cells[2])
    t, lead = st.trick_len[b], st.leader[b] - s
    for i in range(t):  # (its seat relative to mine, its card), in play order
        trick[i], trick[4 + i] = (lead + i) % 4, st.trick_cards[b, i]
    return decide_view(phase, hand, seen, trick[:t], trick[4:4 + t], mine, partners, st.pending[b] >= 0, mask,
                       game, cards, beats)


@njit(cache=True, nogil=True, _nrt=False)
def _ottocento_playouts(st, first, opt, t, teams, mask, trick, rec, piles, values, game, cards, beats):
    """Row ``b`` takes ``first[b]``, then the heuristic's action at each decision (forced moves: the one legal
    action) from the seat to act's view (:func:`_ottocento_decide`) until its hand ends (played out, thrown in:
    OTT-3.2, won at the declarations: OTT-6.1), recorded as the step records it (``ottocento._playout_value``);
    ``values[b]``: team ``teams[b]``'s hand score minus the other's; the row then waits in ``GAME_OVER``.
    ``mask``: a scratch row; ``trick``: scratch int64[8]; ``rec``, ``piles``: the record's scratch.
    Returns the first row that did not end its hand within ``ottocento._MAX_HAND_MOVES`` moves, else -1."""
    for b in range(first.shape[0]):
        a, kind = first[b], ott._NO_END
        for _ in range(ott._MAX_HAND_MOVES):
            kind = ott._act(st, b, a, opt, t)
            if kind != ott._NO_END:
                break
            ott._legal_row(st, b, mask, opt.after_top, opt.eldest_only)
            a = _forced(mask)
            if a < 0:
                a = _ottocento_decide(st, b, mask, game, cards, beats, trick)
        if kind == ott._NO_END:
            return b
        values[b] = ott._playout_value(st, b, kind, opt, t, piles, rec, teams[b])
    return -1


def _ottocento(rows, first: np.ndarray, teams: np.ndarray, config, tables) -> np.ndarray:
    values = np.zeros(rows.check_playouts("heuristic_playouts", first, teams, config))
    mask = np.zeros(ott.NUM_ACTIONS, dtype=bool)
    rec, piles = np.zeros(ott._RECORD_SIZE, dtype=np.int64), np.zeros(2, dtype=np.uint64)
    stuck = _ottocento_playouts(rows.s, np.ascontiguousarray(first, dtype=np.int64),
                                rows.step_options(ott.COUNT_ONLY), combos.combo_tables(),
                                np.ascontiguousarray(teams, dtype=np.int64), mask, np.empty(8, np.int64), rec,
                                piles, values, *tables)
    if stuck >= 0:  # pragma: no cover - guard
        raise RuntimeError(f"a heuristic playout (row {stuck}) did not reach the end of its hand")
    return values


def heuristic_playouts(game: str, rows, first, teams, config, tables) -> np.ndarray:
    """float64[B]: each row of ``rows`` (a game's declared state, ``<Game>Rows``) takes ``first[b]`` and is
    played to the end of its deal (Ottocento: its hand) by the heuristic for every seat; ``teams[b]``'s deal
    score minus the other side's (as the deal's record scores it). ``tables``: ``HeuristicPolicy.info.tables``
    (``agents.players.heuristic.game_tables``). Changes the rows. ``ValueError`` for a game not in ``PLAYOUTS``."""
    if game == "millone":
        return _millone(rows, first, teams, config, tables)
    if game == "partita":
        return _partita(rows, first, teams, config, tables)
    if game == "ottocento":
        return _ottocento(rows, first, teams, config, tables)
    raise ValueError(f"no compiled heuristic playouts for {game!r}; games are {PLAYOUTS}")
