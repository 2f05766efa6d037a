"""Partita (RULES.md Part E; the page ``docs/rules/partita.md``): the rules object ``PartitaGame`` and the
batched state ``PartitaRows``, one set of compiled kernels for both. A deal: the dealer's discard
(``DISCARD``, PAR-4), 13 tricks (``PLAY``, PAR-5, signals PAR-7.1), the count (PAR-6); a game is
``deals_per_game`` deals (PAR-3.2, ``GAME_OVER`` after), each next one dealt by next(dealer) (PAR-3.3).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np
from numba import njit

from ..cards import FRENCH54, TRUMP
from ..config import Config, option
from ..engine import (
    NUM_SIGNALS,
    Layout,
    TrickGame,
    _tables,
    logged_tricks,
    played_trick_table,
    row_call,
    row_field,
    row_number,
    written_into,
)
from ..kernels import NO_SUIT, legal_play, play_tables, popcount, shown_voids, trick_winner_index, uniform_legal
from ..vector.base import Rows, pack_cards, unpack_cards
from ..vector.pcg import permutation, stream_arrays
from ..vector.sparse import bounded_width, card_index, finish, put, put_cards, put_feature, put_one

N = FRENCH54.size  # 54 cards
PLAYERS = 4
HAND_SIZE = 13  # PAR-4.1, PAR-5.4
DEALER_EXTRA = 2  # PAR-4.1: the dealer takes the last 2
DISCARD_SIZE = 2  # PAR-4.2
FOOL = FRENCH54.excuse
FOOL_POINTS = 5  # PAR-6.3
HALF_TOTAL = 40  # PAR-6.5/6.6: 80 points per deal; score = X − 40
NUM_ACTIONS = N + NUM_SIGNALS  # card ids 0..53 in every phase, then the three signals


# PAR-4.3: never discarded. PAR-4.4: trumps II–XX only when there is no other option.
FORBIDDEN_DISCARD = FRENCH54.mask("KS KC KD KH I XXI Fool".split())
PLAIN_DISCARDABLE = (FRENCH54.suit < TRUMP) & ~FORBIDDEN_DISCARD  # suit cards but Kings
TRUMP_DISCARDABLE = (FRENCH54.suit == TRUMP) & ~FORBIDDEN_DISCARD  # II .. XX
COUNTING_VALUE = FRENCH54.value  # PAR-6.1: XXI, I, K = 4; Q 3; C 2; V 1; others 0


# --- PAR-4.3/4.4 (the discard) and PAR-6 (the count), written once -----------------------------------
# As the card-play rules of ``tarot_env.kernels``: compiled functions over card bit sets (one uint64, bit
# c = card c), called by this rules object for one game and, row by row inside compiled loops, by the
# batched engine ``tarot_env.vector.partita``.
_T = play_tables(FRENCH54)
PLAIN_DISCARDABLE_BITS = _T.to_bits(PLAIN_DISCARDABLE)
TRUMP_DISCARDABLE_BITS = _T.to_bits(TRUMP_DISCARDABLE)
FOOL_BIT = _T.bit[FRENCH54.excuse]


@njit(cache=True, nogil=True)
def discard_trumps_needed(dealer_hand: np.uint64) -> int:
    """PAR-4.4 (per-card reading): the trumps the dealer must discard, 2 − his discardable suit cards
    (never below 0), fixed when the deal is dealt."""
    return max(0, DISCARD_SIZE - popcount(dealer_hand & PLAIN_DISCARDABLE_BITS))


@njit(cache=True, nogil=True)
def discard_legal(dealer_hand: np.uint64, discarded: np.uint64, trumps_needed: int) -> np.uint64:
    """PAR-4.3, 4.4: the cards of the dealer's hand that may be discarded now, given those already
    discarded: a card may go if the discard can still end as a legal set (never a King, I, XXI or the
    Fool; trumps II–XX only as many as ``trumps_needed``)."""
    trumps_done = popcount(discarded & TRUMP_DISCARDABLE_BITS)
    plain_done = popcount(discarded) - trumps_done
    ok = np.uint64(0)
    if plain_done < DISCARD_SIZE - trumps_needed:
        ok |= dealer_hand & PLAIN_DISCARDABLE_BITS
    if trumps_done < trumps_needed:
        ok |= dealer_hand & TRUMP_DISCARDABLE_BITS
    return ok


@njit(cache=True, nogil=True)
def pile_points(pile: np.uint64) -> int:
    """PAR-6.2–6.4: points X of a team's pile (a card set): ceil(n / 2) for its n cards other than the
    Fool, plus their counting values (PAR-6.1), plus 5 for the Fool."""
    fool = (pile & FOOL_BIT) != 0
    n = popcount(pile) - fool
    values = 0
    for c in range(N):
        if (pile >> np.uint64(c)) & np.uint64(1):
            values += COUNTING_VALUE[c]
    return (n + 1) // 2 + values + FOOL_POINTS * fool


def deal_points(pile: np.ndarray) -> int:
    """PAR-6.2–6.4: points X of a team's pile (bool[54]): :func:`pile_points` of its card set."""
    return int(pile_points(_T.to_bits(pile)))


class Phase(IntEnum):
    DISCARD = 0
    PLAY = 1
    GAME_OVER = 2


@dataclass(frozen=True)
class PartitaConfig(Config):
    game = "partita"
    deals_per_game: int = option(4, lo=1, hi=1000, doc="deals in one game (PAR-3.2)")
    partita_signals: str = option("none", choices=("none", "bolognese3"),
                                  doc="public signals: none, or Ottocento's three for everyone (PAR-7.1)")
    first_dealer: int = option(-1, lo=-1, hi=3, doc="seat that deals first; -1 = at random (PAR-3.3)")

    @property
    def signals(self) -> bool:
        """PAR-7.1: whether the seats give signals."""
        return self.partita_signals == "bolognese3"


# Observation of one seat (seat-relative: 0 = me, 1 = my right-hand opponent, 2 = partner, 3 = left).
OBS = Layout([
    ("hand", N),                        # my cards
    ("my_discards", N),                 # my hidden discards (when I am the dealer)
    ("public_discards", N),             # discarded trumps, announced to all (PAR-4.5)
    ("played", 4 * N),                  # cards each seat has played to tricks this deal
    ("trick", 4 * N),                   # the current trick, by seat
    ("won", 2 * N),                     # cards taken in tricks by my team / the other team
    ("signals", 4 * NUM_SIGNALS * 6),   # signals given: seat × signal × suit of its card (PAR-7.1)
    ("shown_void", 4 * 5),              # seat × suit (4 suits, trumps) it has shown it lacks (PAR-5.2)
    ("pending_signal", NUM_SIGNALS),    # the signal I chose for my next card
    ("seat_from_dealer", 4),            # one-hot: 0 = I deal, 1 = I am on the dealer's right, …
    ("leader", 4),                      # one-hot: who led the current trick
    ("hand_sizes", 4),                  # cards held by each seat / 15
    ("tricks_won", 2),                  # tricks taken by my team / the other team / 13
    ("scores", 2),                      # cumulative game score of my team / the other team / 40
    ("deal", 2),                        # deals played / deals_per_game, deals left / deals_per_game
    ("phase", 3),                       # one-hot: discard, play, game over
    # v1 (RULES.md H.1.1, table memory), appended so that the v0 sections keep their offsets:
    ("signal_cards", N * NUM_SIGNALS),  # card x signal: the signal each played card carried (PAR-7.1)
    ("played_trick", N),                # per card: (t + 1) / 13 if played in trick t this deal, else 0
])
OBS_SIZE = OBS.size
OBS_V0_SIZE = OBS.signal_cards.start  # the v0 observation is this prefix (scripts/migrate_policy.py)
assert OBS_V0_SIZE == 54 * 13 + 72 + 20 + 3 + 4 + 4 + 4 + 2 + 2 + 2 + 3 == 818
assert OBS_SIZE == OBS_V0_SIZE + 54 * 4 == 1034
# The most nonzero features an observation can have, section by section (obs_format="sparse" pads each
# row to it; tests/test_sparse_obs.py checks seeded games against it): a hand holds at most 15 cards
# (PAR-4.1), the dealer discards 2 (PAR-4.2), 13 tricks of 4 are played (PAR-5.4), the current trick holds
# at most 4, a pile at most the 54 cards; each played card carries at most one signal (PAR-7.1); of the
# scalars a one-hot is one feature (a pending signal, seat_from_dealer, leader, phase), the others count
# whole. Without signals (partita_signals="none") the signal sections stay empty.
SPARSE_BOUNDS = {"hand": DEALER_EXTRA + HAND_SIZE, "my_discards": DISCARD_SIZE, "public_discards": DISCARD_SIZE,
                 "played": 4 * HAND_SIZE, "trick": 4, "won": N, "signals": OBS.signals.stop - OBS.signals.start,
                 "shown_void": 4 * 5, "pending_signal": 1, "seat_from_dealer": 1, "leader": 1, "hand_sizes": 4,
                 "tricks_won": 2, "scores": 2, "deal": 2, "phase": 1, "signal_cards": 4 * HAND_SIZE,
                 "played_trick": 4 * HAND_SIZE}
_SIGNAL_SECTIONS = ("signals", "pending_signal", "signal_cards")
assert bounded_width(OBS, SPARSE_BOUNDS) == 339


def sparse_width(config: PartitaConfig) -> int:
    """The fixed width of ``obs_format="sparse"`` rows: the most nonzero features of an observation under
    ``config`` (``SPARSE_BOUNDS``; 339 with signals, 214 without)."""
    bounds = SPARSE_BOUNDS if config.signals else dict(SPARSE_BOUNDS, **dict.fromkeys(_SIGNAL_SECTIONS, 0))
    return bounded_width(OBS, bounds)


# Full-information state for centralised critics (absolute seats).
STATE = Layout([
    ("hands", 4 * N), ("discards", 4 * N), ("public_discards", N), ("played", 4 * N),
    ("trick", 4 * N), ("won", 2 * N), ("signals", 4 * NUM_SIGNALS * 6), ("shown_void", 4 * 5),
    ("pending_signal", NUM_SIGNALS), ("dealer", 4), ("current", 4), ("leader", 4), ("tricks_won", 2), ("scores", 2),
    ("deal", 2),
    ("phase", 3),
    ("signal_cards", N * NUM_SIGNALS), ("played_trick", N),  # v1, as in OBS
])
STATE_SIZE = STATE.size
STATE_V0_SIZE = STATE.signal_cards.start
_PLAYED_TRICK = played_trick_table(HAND_SIZE)  # PAR-5.4: 13 tricks
# each version's observation / state is a prefix of the current one (scripts/migrate_policy.py)
OBS_SIZES = {"v0": OBS_V0_SIZE, "v1": OBS_SIZE}
STATE_SIZES = {"v0": STATE_V0_SIZE, "v1": STATE_SIZE}

REL = [np.array([(s + i) % PLAYERS for i in range(PLAYERS)]) for s in range(PLAYERS)]
TEAM_OF = (0, 1, 0, 1)


# --- the card state: card sets and a small table -----------------------------------------------------
# A deal's cards are 19 card sets (a uint64 each, bit c = card c: ``sets[B, 19]``): the hands, the played
# cards and the current trick per seat, the won piles per team, the discards per seat, the announced
# discards; its other public facts are bool cells (``table[B, 254]``): the signals (seat x signal x suit of
# the card), the voids shown (seat x suit, H.1.1) and the signal each card carried (card x signal, H.1.1).
HANDS, PLAYED, TRICK_BY, WON, DISCARDS, PUBLIC, SETS = 0, 4, 8, 12, 14, 18, 19
SIGNAL_SUITS = 6  # signal_table[seat, signal, suit of its card]: the 4 suits, trumps, the Fool
SUITS_SHOWN = 5  # shown_void[seat, suit]: the 4 suits and trumps
_SIGNAL_CELLS = NUM_SIGNALS * SIGNAL_SUITS
SIGNAL_TABLE, VOID, SIGNAL_CARD = 0, PLAYERS * _SIGNAL_CELLS, PLAYERS * (_SIGNAL_CELLS + SUITS_SHOWN)
TABLE = SIGNAL_CARD + N * NUM_SIGNALS


def _side_by_side(first: int, owners, section: slice) -> list[tuple[int, int]]:
    """``(card set, first position)``: the sets ``first + o`` of ``owners`` side by side in ``section``."""
    return [(first + o, section.start + i * N) for i, o in enumerate(owners)]


def _sections(lay: Layout, own, seats, teams) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    """Where a layout shows the card state: ``(card set, first position)`` for every card section and
    ``(table cell, first position, length)`` for the runs of table cells; ``own``: the seats whose hand and
    discards it shows, ``seats`` / ``teams``: the order of the seats' and teams' sections."""
    hand, disc = (lay.hand, lay.my_discards) if lay is OBS else (lay.hands, lay.discards)
    sets = (_side_by_side(HANDS, own, hand) + _side_by_side(DISCARDS, own, disc)
            + _side_by_side(PUBLIC, [0], lay.public_discards) + _side_by_side(PLAYED, seats, lay.played)
            + _side_by_side(TRICK_BY, seats, lay.trick) + _side_by_side(WON, teams, lay.won))
    runs = [(SIGNAL_TABLE + p * _SIGNAL_CELLS, lay.signals.start + i * _SIGNAL_CELLS, _SIGNAL_CELLS)
            for i, p in enumerate(seats)]
    runs += [(VOID + p * SUITS_SHOWN, lay.shown_void.start + i * SUITS_SHOWN, SUITS_SHOWN) for i, p in enumerate(seats)]
    runs.append((SIGNAL_CARD, lay.signal_cards.start, N * NUM_SIGNALS))  # absolute card ids
    return sets, runs


# a seat's observation: seats relative to it (me, my right, my partner, my left; my team's pile first)
_SECTIONS = [_sections(OBS, [seat], REL[seat], [TEAM_OF[seat], 1 - TEAM_OF[seat]]) for seat in range(PLAYERS)]
OBS_SETS = np.array([s for s, _ in _SECTIONS], dtype=np.uint64)  # [seat, k, (set, position)]
OBS_TABLE_RUNS = np.array([r for _, r in _SECTIONS], dtype=np.uint64)  # [seat, k, (cell, position, length)]
# without signals (PAR-7.1) only these cells can be set; a copy, contiguous: numba caches no kernel that reads a
# non-contiguous global array (it compiled the sparse encoder again in every process)
OBS_VOID_RUNS = OBS_TABLE_RUNS[:, PLAYERS:2 * PLAYERS].copy()
STATE_SETS = np.array(_sections(STATE, range(PLAYERS), range(PLAYERS), [0, 1])[0], dtype=np.uint64)  # absolute seats
STATE_TABLE_RUNS = np.array([(SIGNAL_TABLE, STATE.signals.start, VOID),  # the same cells, in one run per section
                             (VOID, STATE.shown_void.start, SIGNAL_CARD - VOID),
                             (SIGNAL_CARD, STATE.signal_cards.start, TABLE - SIGNAL_CARD)], dtype=np.uint64)
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


# the card state's fields by name, for readers: card sets (first set, count; 0: the one set) and table cells
# (first cell, shape)
SET_FIELDS = {"hands": (HANDS, PLAYERS), "played": (PLAYED, PLAYERS), "trick_by": (TRICK_BY, PLAYERS),
              "won": (WON, 2), "discards": (DISCARDS, PLAYERS), "public_discards": (PUBLIC, 0)}
CELL_FIELDS = {"signal_table": (SIGNAL_TABLE, (PLAYERS, NUM_SIGNALS, SIGNAL_SUITS)),
               "shown_void": (VOID, (PLAYERS, SUITS_SHOWN)), "signal_card": (SIGNAL_CARD, (N, NUM_SIGNALS))}


def card_field(rows: PartitaRows, name: str) -> np.ndarray:
    """Field ``name`` of every row of ``rows``: a card set field as ``bool[B, count, 54]`` (``bool[B, 54]``
    for one set), a table field as ``[B, *shape]`` (a view of the cells)."""
    if name in SET_FIELDS:
        first, count = SET_FIELDS[name]
        out = unpack_cards(rows.sets[:, first:first + max(count, 1)], N)
        return out[:, 0] if count == 0 else out
    start, shape = CELL_FIELDS[name]
    return rows.table[:, start:start + int(np.prod(shape))].reshape((len(rows.table), *shape))


class PartitaGame(TrickGame):
    """One Partita game: a one-row :class:`PartitaRows` (the batched engine's state, ``self.row``) driven
    by the same kernels as the batch, plus the game's record (``history``, ``winner``).

    Every rule is a kernel of this module; the attributes a reader of a game expects (``hands``,
    ``played``, ``won``, ``trick``, ``tricks``, ``dealer``, ``scores`` …) are read-only views computed
    from the row (``scores`` is the row's own array). Cloning is copying the row.
    """

    name = "partita"
    pack = FRENCH54
    num_players = PLAYERS
    team_of = TEAM_OF
    num_teams = 2
    hand_size = HAND_SIZE
    num_actions = NUM_ACTIONS
    Phase = Phase
    Config = PartitaConfig
    OBS = OBS
    STATE = STATE
    sparse_width = staticmethod(sparse_width)

    def _setup(self, config: PartitaConfig, history: list, row: PartitaRows,
               result: tuple = (None, False)) -> PartitaGame:
        self.config = config
        self.tables = _tables(FRENCH54)
        self.history: list[dict] = history  # the record of every finished deal (PAR-6)
        self.winner, self.game_over = result  # PAR-6.7: the team with the positive total, -1 a draw
        self.row = row
        self._one = np.zeros(1, dtype=np.int64)
        return self

    def next_game(self, seed: int | None = None) -> PartitaGame:
        """The following game (:meth:`PartitaRows.new_games`: PAR-3.3, dealt first by the partner of the
        last dealer; its stream seeded from this game's, or from ``seed``)."""
        new = object.__new__(PartitaGame)._setup(self.config, [], self.row.copy())
        new.row.new_games(ROW0, None if seed is None else np.array([seed], dtype=np.uint64))
        return new

    # --- deal ---------------------------------------------------------------------------------------
    def start_deal(self, dealer: int, deck: np.ndarray | None = None) -> None:
        """PAR-4.1 (:func:`_deal_row`): ``deck`` (a permutation of the 54 ids) fixes the deal, for tests
        and golden games; otherwise it is shuffled from the game's random stream."""
        r = self.row
        if deck is None:
            _deal_rows(r.s, ROW0, np.array([dealer], dtype=np.int64), r.deck)
        else:
            _deal_row(r.s, 0, dealer, np.asarray(deck, dtype=np.int64))

    _first_deal = start_deal  # (TrickGame.__init__)

    def set_hands(self, dealer: int, hands: list[list[int]]) -> None:
        """Start the deal from explicit hands (4 lists of ids, dealer's with 15) — golden games."""
        deck = []
        for i in range(PLAYERS):
            deck += list(hands[(dealer + 1 + i) % PLAYERS][:HAND_SIZE])
        deck += list(hands[dealer][HAND_SIZE:])
        if sorted(deck) != list(range(N)):
            raise ValueError("hands must hold the 54 cards once each, 13 per player and 15 for the dealer")
        self.start_deal(dealer, np.array(deck))

    # --- the driver API -----------------------------------------------------------------------------
    def legal_mask(self) -> np.ndarray:
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        if not self.game_over:
            row_call(_legal, self.row.s, 0, self.config.signals, mask)
        return mask

    def apply_unchecked(self, action: int) -> None:
        """The action of the seat to act (:func:`_apply_action`); a scored deal is recorded, then the
        next deal is dealt (PAR-3.3: next(dealer)) or the game ends (PAR-6.7)."""
        r = self.row
        self._one[0] = action
        if row_call(_apply_rows, r.s, self._one):
            record, over, winner = r.end_deals(ROW0, self.config.deals_per_game)
            self.history.append(deal_record(record, 0))
            if over[0]:
                r.phase[0] = Phase.GAME_OVER
                self.game_over, self.winner = True, int(winner[0])

    # --- encoders (the batch's kernels, on this row) ------------------------------------------------
    def observation(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """What ``seat`` knows (RULES.md H.1, H.1.1, H.2, H.5), laid out by ``OBS`` (:func:`_observe`)."""
        s, seat, deals, sig = self.row.s, int(seat), self.config.deals_per_game, self.config.signals
        return written_into(out, OBS_SIZE, lambda o: row_call(_observe, s, 0, seat, deals, sig, o, o[:0], o[:0]))

    def state_vector(self, out: np.ndarray | None = None) -> np.ndarray:
        """Everything, for centralised critics in training only (absolute seats, ``STATE`` layout)."""
        o = np.empty(STATE_SIZE, dtype=np.float32) if out is None else out
        _state_rows(self.row.s, self.config.deals_per_game, o.reshape(1, STATE_SIZE))
        if self.game_over:
            o[STATE.current] = 0.0  # nobody is to act
        return o

    # --- read-only views of the row -------------------------------------------------------------------
    hands = row_field("hands", "bool[4, 54]: the cards each seat holds")
    played = row_field("played", "bool[4, 54]: the cards each seat played to tricks this deal")
    trick_by = row_field("trick_by", "bool[4, 54]: the current trick, by seat")
    won = row_field("won", "bool[2, 54]: the cards each team took in tricks (PAR-5.3: the Fool to its owner's)")
    discards = row_field("discards", "bool[4, 54]: the discards (only the dealer's, PAR-4.2)")
    public_discards = row_field("public_discards", "bool[54]: the announced trump discards (PAR-4.5)")
    signal_table = row_field("signal_table", "seat x signal x suit of its card")
    shown_void = row_field("shown_void", "seat x suit (4 suits, trumps) shown void (H.1.1)")
    signal_card = row_field("signal_card", "card x signal: the signal each card carried (H.1.1)")
    dealer = row_number("dealer", "the seat that deals this deal")
    current = row_number("current", "the seat to act")
    leader = row_number("leader", "the seat that led the current trick")
    pending_signal = row_number("pending", "the signal chosen for the acting seat's next card, or -1 (PAR-7.1)")
    deals_played = row_number("deals_played", "deals finished in this game")
    discard_trumps_needed = row_number("trumps_needed", "PAR-4.4: the trumps the dealer must discard")

    @property
    def card_trick(self) -> np.ndarray:
        """int64[54]: t + 1 for a card played in trick t this deal, else 0 (H.1.1)."""
        return self.row.card_trick[0].astype(np.int64)

    @property
    def trick(self) -> list[tuple[int, int]]:
        """The current trick, ``(seat, card)`` in play order."""
        r, t = self.row, int(self.row.tricks[0])
        if t >= HAND_SIZE:
            return []
        return [(int(r.log_seat[0, t, i]), int(r.log_card[0, t, i])) for i in range(int(r.trick_len[0]))]

    @property
    def tricks(self) -> list[tuple[list[tuple[int, int]], int]]:
        """The finished tricks of this deal: ``([(seat, card), ...], winner)``."""
        return logged_tricks(self.row)

    @property
    def signals(self) -> list[tuple[int, int, int]]:
        """The signals given this deal, ``(seat, card, signal)`` in play order (PAR-7.1)."""
        sig, out = self.signal_card, []
        for trick in [t for t, _ in self.tricks] + [self.trick]:
            out += [(s, c, int(k)) for s, c in trick for k in np.flatnonzero(sig[c])]
        return out

    @property
    def excuse_owner(self) -> int:
        """The seat that played the Fool this deal, or -1."""
        played = self.row.sets[0, PLAYED:PLAYED + PLAYERS] & BIT[FOOL]
        return int(np.flatnonzero(played)[0]) if played.any() else -1

    def place_cards(self, hands: np.ndarray | None = None, discards: np.ndarray | None = None) -> None:
        """Put cards in the hands (``bool[4, 54]``) and the discards (``bool[4, 54]``) without a rule: a
        world of the sampler, a re-deal of a leak test. The hand sizes follow; everything else is kept
        (PAR-4.4's trump requirement stays as dealt). Check the result with :meth:`check_state`."""
        r = self.row
        if hands is not None:
            r.sets[0, HANDS:HANDS + PLAYERS] = pack_cards(hands)
            r.hand_sizes[0] = np.asarray(hands).sum(axis=1)
        if discards is not None:
            r.sets[0, DISCARDS:DISCARDS + PLAYERS] = pack_cards(discards)

    def team_piles(self) -> np.ndarray:
        """bool[2, 54]: each team's cards (tricks, the Fool, the dealer's discards for his team, PAR-4.2)."""
        piles = self.won.copy()
        piles[TEAM_OF[self.dealer]] |= self.discards[self.dealer]
        return piles

    # --- what a state must hold (checked when a state comes from outside: TrickGame.check_state) ------
    def _row_sets(self) -> dict[str, list[int]]:
        s = self.row.sets[0].tolist()
        return {k: s[first:first + count] for k, (first, count) in SET_FIELDS.items() if count}

    def phase_problems(self, sets: dict) -> list[str]:
        """PAR-4.1, 4.2, 5.4: the dealer holds 15 less his discards while discarding, then every seat 13
        less the cards it played; only the dealer discards, two cards in the end."""
        d, held, out = self.dealer, [x.bit_count() for x in sets["hands"]], []
        discards, played = sets["discards"], [x.bit_count() for x in sets["played"]]
        made = [x.bit_count() for x in discards]
        if sum(made) != made[d]:
            out.append(f"seats other than the dealer (seat {d}) hold discards (PAR-4.2)")
        if self.phase == Phase.DISCARD:
            want = [HAND_SIZE + (DEALER_EXTRA - made[d] if s == d else 0) for s in range(PLAYERS)]
            if made[d] >= DISCARD_SIZE or any(played):
                out.append(f"phase DISCARD with {made[d]} discards made and {sum(played)} cards played")
        else:
            want = [HAND_SIZE - played[s] for s in range(PLAYERS)]
            if made[d] != DISCARD_SIZE:
                out.append(f"phase {self.phase.name} but the dealer discarded {made[d]} cards, not {DISCARD_SIZE}")
        if held != want:
            out.append(f"the hands hold {held} cards; phase {self.phase.name} means {want} (PAR-4.1)")
        r = self.row
        if int(r.sets[0, PUBLIC]) & ((1 << N) - 1) != discards[d] & int(SUIT_BITS[TRUMP]):
            out.append("the announced discards are not the dealer's discarded trumps (PAR-4.5)")
        if not (0 <= r.tricks[0] <= HAND_SIZE and 0 <= r.trick_len[0] < PLAYERS and -1 <= r.pending[0] < NUM_SIGNALS):
            out.append(f"tricks {r.tricks[0]}, trick length {r.trick_len[0]} or pending signal {r.pending[0]} "
                       f"out of range")
        return out

    # --- what a player may not know (RULES.md H.6), for the leak tests -----------------------------
    def hidden_from(self, seat: int) -> np.ndarray:
        """bool[4, 54] of hand cards and bool[54] of discards that ``seat`` cannot see."""
        hidden_hands = self.hands.copy()
        hidden_hands[seat] = False
        return hidden_hands, self.discards[self.dealer] & ~self.public_discards & (seat != self.dealer)

    @staticmethod
    def discard_shown(card: int) -> bool:
        """``TrickGame.result_view``: of the dealer's discards a seat other than the dealer knows only the
        announced trumps (PAR-4.5, RULES.md H.5; the score parts, ``points``, are the announced count)."""
        return FRENCH54.suit[card] == TRUMP

    def render_seat_extra(self, seat: int, viewer: int | None = None) -> str:
        """The dealer's discards in ``viewer``'s table view (``tarot_env.view``; None: everything):
        all of them to the dealer (H.5), to the others the announced trumps (PAR-4.5) and a count."""
        discards = self.discards[seat]
        if seat != self.dealer or not discards.any():
            return ""
        if viewer is None or viewer == seat:
            return "  | discarded: " + " ".join(FRENCH54.names_of(discards))
        shown = discards & self.public_discards
        hidden = int(discards.sum() - shown.sum())
        text = "  | discarded" + (": " + " ".join(FRENCH54.names_of(shown)) + " (announced)" if shown.any() else "")
        return text + (f", {hidden} face down" if hidden else "")


# --- the shared card-play tables (tarot_env.kernels) -------------------------------------------------
BIT, SUIT, SUIT_BITS, BEATS, LED_AFTER = _T.bit, _T.suit, _T.suit_bits, _T.beats, _T.led_after
TEAM = np.array(TEAM_OF, dtype=np.int64)  # PAR-3.1: seat -> team
DISCARD, PLAY = int(Phase.DISCARD), int(Phase.PLAY)
DEALER_HAND = HAND_SIZE + DEALER_EXTRA  # 15: the hand_sizes feature is a count / 15


# Every row's game (batch axis first), declared once: field -> (shape of a row, dtype, initial value). The arrays
# are the engine's attributes of the same names (``venv.dealer`` …, what its checkpoint, ``get_state``, saves);
# ``State`` only hands them to the kernels in one argument, with each row's PCG64 generator (``rng_state``,
# ``rng_inc``, ``rng_half``: tarot_env.vector.pcg, the stream of np.random.default_rng(seed) of its game).
FIELDS = {
    "sets": ((SETS,), np.uint64, 0),         # the card sets (hands[seat] is sets[:, HANDS + seat], ...)
    "table": ((TABLE,), bool, 0),            # the other cells (signal_table, shown_void, signal_card)
    "hand_sizes": ((PLAYERS,), np.int64, 0),
    "card_trick": ((N,), np.uint8, 0),       # t + 1 once played in trick t this deal (H.1.1), else 0
    "dealer": ((), np.int64, 0),
    "current": ((), np.int64, 0),            # the seat to act
    "leader": ((), np.int64, 0),             # the seat that led the current trick
    "phase": ((), np.int64, 0),              # Phase.DISCARD / Phase.PLAY (a finished game is reset at once)
    "pending": ((), np.int64, -1),           # the signal chosen for the acting seat's next card, or -1
    "led": ((), np.int64, NO_SUIT),          # the suit led of the current trick (NO_SUIT: none yet)
    "trick_len": ((), np.int64, 0),          # cards on the current trick
    "tricks": ((), np.int64, 0),             # tricks finished this deal
    "log_seat": ((HAND_SIZE, PLAYERS), np.int8, 0),  # every trick of the deal, seat and card in play order (the
    "log_card": ((HAND_SIZE, PLAYERS), np.int8, 0),  # current trick is log_*[b, tricks[b], :trick_len[b]])
    "log_winner": ((HAND_SIZE,), np.int8, 0),
    "tricks_won": ((2,), np.int64, 0),       # per team
    "trumps_needed": ((), np.int64, 0),      # PAR-4.4, fixed at the deal
    "scores": ((2,), np.int64, 0),           # game scores per team
    "deals_played": ((), np.int64, 0),
    "points": ((2,), np.int64, 0),           # X of the last scored deal per team (PAR-6)
    "deal_scores": ((2,), np.int64, 0),      # X − 40 of the last scored deal (PAR-6.6)
    "deal_over": ((), bool, 0),              # the row's deal was scored in the last step
}
State = NamedTuple("State", [(k, np.ndarray) for k in (*FIELDS, "rng_state", "rng_inc", "rng_half")])


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
def _put_cards(cols, vals, n, o, s: State, b: int, sets: np.ndarray, runs: np.ndarray, played_trick: int) -> int:
    """The card state of row ``b``: the card sets where ``sets`` (set, position) puts them, the table cells of
    ``runs`` (cell, position, length), and from ``played_trick`` on when each card was played this deal (H.1.1).
    Into the dense row ``o``, each of those features written once (a card set 8 at a time, :func:`_expand`), or,
    ``o`` empty, the nonzero ones appended to a sparse row (``sparse.put_cards``: the cards walked set bit by set
    bit; the set cells; the played cards, whose card_trick is set with them)."""
    if o.shape[0]:
        for k in range(sets.shape[0]):
            _expand(s.sets[b, sets[k, 0]], o, sets[k, 1])
        for r in range(runs.shape[0]):
            src, dst = runs[r, 0], runs[r, 1]  # (uint64 indices, as in _expand: no negative index to wrap)
            for i in range(runs[r, 2]):
                o[dst + i] = s.table[b, src + i]
        for c in range(N):
            o[played_trick + c] = _PLAYED_TRICK[s.card_trick[b, c]]
        return n
    for k in range(sets.shape[0]):
        n = put_cards(cols, vals, n, s.sets[b, sets[k, 0]], sets[k, 1])
    for r in range(runs.shape[0]):
        for i in range(runs[r, 2]):  # (mostly unset: a branch, rarely taken)
            if s.table[b, runs[r, 0] + i]:
                n = put_one(cols, vals, n, runs[r, 1] + i)
    x = s.sets[b, PLAYED] | s.sets[b, PLAYED + 1] | s.sets[b, PLAYED + 2] | s.sets[b, PLAYED + 3]
    while x:
        c = card_index(x)
        n = put(cols, vals, n, played_trick + c, _PLAYED_TRICK[s.card_trick[b, c]])
        x &= x - np.uint64(1)
    return n


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _observe(s: State, b: int, seat: int, deals_per_game: int, signals: bool, o: np.ndarray, cols: np.ndarray,
             vals: np.ndarray) -> int:
    """PartitaGame.observation(seat) of row ``b``, laid out by ``OBS``, the one writer: into the dense row ``o``
    (float32[OBS]), or, ``o`` empty (``obs_format="sparse"``), its nonzero features appended to one row's
    ``cols`` / ``vals`` (``tarot_env.vector.sparse``); returns their count. The card state where ``OBS_SETS`` /
    ``OBS_TABLE_RUNS`` put it (:func:`_put_cards`; a sparse row skips the signal cells without signals), the
    scalars through ``sparse.put_feature``, float64 quotients rounded once to float32."""
    runs = OBS_TABLE_RUNS[seat] if signals or o.shape[0] else OBS_VOID_RUNS[seat]  # (dense: every cell written)
    n = _put_cards(cols, vals, 0, o, s, b, OBS_SETS[seat], runs, O_PT)
    o[O_PENDING:O_END] = 0.0
    if s.pending[b] >= 0 and seat == s.current[b]:
        n = put_feature(cols, vals, n, o, O_PENDING + s.pending[b], 1.0)
    n = put_feature(cols, vals, n, o, O_FROM_DEALER + (seat - s.dealer[b]) % PLAYERS, 1.0)
    n = put_feature(cols, vals, n, o, O_LEADER + (s.leader[b] - seat) % PLAYERS, 1.0)
    for i in range(PLAYERS):  # seat-relative: me, my right, my partner, my left
        n = put_feature(cols, vals, n, o, O_HAND_SIZES + i, s.hand_sizes[b, (seat + i) % PLAYERS] / DEALER_HAND)
    my = TEAM[seat]
    for i in range(2):  # my team first
        n = put_feature(cols, vals, n, o, O_TRICKS_WON + i, s.tricks_won[b, (my + i) % 2] / HAND_SIZE)
    for i in range(2):
        n = put_feature(cols, vals, n, o, O_SCORES + i, s.scores[b, (my + i) % 2] / HALF_TOTAL)
    n = put_feature(cols, vals, n, o, O_DEAL, s.deals_played[b] / deals_per_game)
    n = put_feature(cols, vals, n, o, O_DEAL + 1, (deals_per_game - s.deals_played[b]) / deals_per_game)
    return put_feature(cols, vals, n, o, O_PHASE + s.phase[b], 1.0)


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
def _encode_rows(s: State, seats: np.ndarray, deals_per_game: int, signals: bool, seat: np.ndarray, mask: np.ndarray,
                 obs: np.ndarray, with_obs: bool, sparse: bool, cols: np.ndarray, vals: np.ndarray,
                 counts: np.ndarray) -> None:
    """Every row ``b``: the seat to act and its legal mask (into ``seat`` and ``mask``) and ``seats[b]``'s
    observation (:func:`_observe`): into ``obs`` (not with ``with_obs`` false, the engine's ``observe=False``),
    or with ``sparse`` its nonzero features into row ``b`` of ``cols`` / ``vals`` / ``counts``."""
    for b in range(len(seats)):
        seat[b] = s.current[b]
        if sparse:
            finish(cols, vals, counts, b, _observe(s, b, seats[b], deals_per_game, signals, vals[b, :0], cols[b],
                                                   vals[b]))
        elif with_obs:
            _observe(s, b, seats[b], deals_per_game, signals, obs[b], obs[b, :0], obs[b, :0])
        _legal(s, b, signals, mask[b])


@njit(cache=True, nogil=True, _nrt=False)
def _state_rows(s: State, deals_per_game: int, out: np.ndarray) -> None:
    """PartitaGame.state_vector() of every row (absolute seats) into ``out`` (float32[B, STATE])."""
    for b in range(out.shape[0]):
        o = out[b]
        _put_cards(o[:0], o[:0], 0, o, s, b, STATE_SETS, STATE_TABLE_RUNS, S_PT)
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


@njit(cache=True, nogil=True, _nrt=False)
def _deal_row(s: State, b: int, d: int, deck: np.ndarray) -> None:
    """Deal ``deck`` (a permutation of the 54 ids) in row ``b`` with dealer ``d``: PAR-4.1 13 cards to
    each player from the dealer's right, the last 2 to the dealer; PAR-4.4 the trumps the dealer will
    have to discard; the dealer discards first (PAR-4.2)."""
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
    s.deal_over[b] = False


@njit(cache=True, nogil=True, _nrt=False)
def _deal_rows(s: State, rows: np.ndarray, dealers: np.ndarray, deck: np.ndarray) -> None:
    """A new deal in each of ``rows``: the row's pack shuffled from its own stream (numpy's
    ``rng.permutation(54)``, draw for draw), dealt by :func:`_deal_row`. ``deck`` is scratch (int64[54])."""
    for i in range(len(rows)):
        permutation(s.rng_state, s.rng_inc, s.rng_half, rows[i], deck)
        _deal_row(s, rows[i], dealers[i], deck)


@njit(cache=True, nogil=True, _nrt=False)
def _random_playouts(s: State, first: np.ndarray, teams: np.ndarray, signals: bool, seed: int, mask: np.ndarray,
                     values: np.ndarray, log: np.ndarray) -> None:
    """:meth:`PartitaRows.random_playouts` compiled: the moves drawn by ``kernels.uniform_legal`` until the
    deal is scored (PAR-6); ``mask`` is scratch (bool[57])."""
    np.random.seed(seed)
    for b in range(len(first)):
        a, i = first[b], 0
        while True:
            if i < log.shape[1]:
                log[b, i] = a
            i += 1
            _apply_action(s, b, a)
            if s.deal_over[b]:
                break
            _legal(s, b, signals, mask)
            a = uniform_legal(mask)
        t = teams[b]
        values[b] = s.deal_scores[b, t] - s.deal_scores[b, 1 - t]


# --- the declared state of B games ----------------------------------------------------------------
ROW0 = np.zeros(1, dtype=np.int64)  # the row of a one-game state (writable: a read-only array is another numba
# type, and the kernels would be compiled for both)
# the record of a finished deal (PartitaGame.history's entries, the final info's "last_result"), as arrays
DEAL_FIELDS = (("deal", ()), ("dealer", ()), ("points", (2,)), ("scores", (2,)), ("tricks_won", (2,)),
               ("fool_team", ()), ("discards", (DISCARD_SIZE,)), ("log_seat", (HAND_SIZE, PLAYERS)),
               ("log_card", (HAND_SIZE, PLAYERS)), ("log_winner", (HAND_SIZE,)))


class PartitaRows(Rows):
    """The declared state of ``B`` Partita games: one array per field of :class:`State` (batch axis
    first) as attributes of the same names, each row's random stream (``rng_*``, numpy's PCG64 state:
    :mod:`tarot_env.vector.pcg`) and a scratch deck. ``PartitaGame`` holds one row; the batched engine
    ``PartitaVec`` is one (for ``B`` rows)."""

    State = State
    ARRAYS = State._fields  # (the streams are State fields)

    field = card_field  # the one-row game's views (``row_field``)

    def __init__(self, num_rows: int, config: PartitaConfig | None = None):  # (no option changes the arrays)
        self._alloc(num_rows)

    def _alloc(self, B: int) -> None:
        for k, (shape, dtype, init) in FIELDS.items():
            setattr(self, k, np.full((B, *shape), init, dtype=dtype))
        self.rng_state, self.rng_inc, self.rng_half = stream_arrays(B)
        self.deck = np.zeros(N, dtype=np.int64)
        self._bind()

    def _extras_from(self, old: PartitaRows, rows_of, index: np.ndarray | None) -> None:
        self.deck = np.zeros(N, dtype=np.int64)  # scratch

    def random_playouts(self, first: np.ndarray, teams: np.ndarray, config: PartitaConfig, seed: int,
                        log: np.ndarray | None = None) -> np.ndarray:
        """float64[B]: each row takes ``first[b]`` and plays uniformly at random to the end of its deal
        (games of ``config``); ``teams[b]``'s deal score minus the other team's (:func:`_random_playouts`).
        ``log`` (int64[B, L], optional): each row's first ``L`` actions, ``first[b]`` included (-1 after
        the deal's last). Changes the rows."""
        values = np.zeros(len(first))
        log = np.zeros((len(first), 0), dtype=np.int64) if log is None else log
        log[:] = -1
        _random_playouts(self.s, np.asarray(first, dtype=np.int64), np.asarray(teams, dtype=np.int64),
                         config.signals, seed, np.zeros(NUM_ACTIONS, dtype=bool), values, log)
        return values

    def end_deals(self, rows: np.ndarray, deals_per_game: int) -> tuple[dict, np.ndarray, np.ndarray]:
        """After the deal of ``rows`` was scored: its record (``DEAL_FIELDS`` arrays), one more deal played;
        PAR-3.2 the game is over after ``deals_per_game`` deals, PAR-6.7 won by the team with the positive
        total (0 is a draw, -1); PAR-3.3 where it goes on, the next deal, dealt by next(dealer) from the row's
        stream. Returns ``(record, over, winner)`` per row."""
        record = self.deal_fields(rows)  # before the next deal replaces it
        self.deals_played[rows] += 1
        total, over = self.scores[rows, 0], self.deals_played[rows] >= deals_per_game
        on = rows[~over]
        _deal_rows(self.s, on, (self.dealer[on] + 1) % PLAYERS, self.deck)
        return record, over, np.where(total > 0, 0, np.where(total < 0, 1, -1))

    def new_games(self, rows: np.ndarray, seeds: np.ndarray | None = None) -> None:
        """The next game in ``rows``: each row's stream seeded afresh (``rng.integers(2**63)`` of its own,
        or ``seeds``), the scores back to 0, and PAR-3.3 the partner of the last dealer deals first."""
        self.streams.reseed(rows, self.streams.next_game_seeds(rows) if seeds is None else seeds)
        self.scores[rows] = 0
        self.deals_played[rows] = 0
        _deal_rows(self.s, rows, (self.dealer[rows] + 2) % PLAYERS, self.deck)

    def deal_fields(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The record of the deal just scored in ``rows`` (PAR-6), as ``DEAL_FIELDS`` arrays."""
        discards = self.sets[rows, DISCARDS + self.dealer[rows]]
        return {"deal": self.deals_played[rows], "dealer": self.dealer[rows], "points": self.points[rows],
                "scores": self.deal_scores[rows], "tricks_won": self.tricks_won[rows],
                "fool_team": ((self.sets[rows, WON + 1] & BIT[FOOL]) != 0).astype(np.int64),  # PAR-5.3: never discarded
                "discards": np.nonzero(unpack_cards(discards, N))[1].reshape(-1, DISCARD_SIZE),  # card order
                "log_seat": self.log_seat[rows], "log_card": self.log_card[rows], "log_winner": self.log_winner[rows]}


PartitaGame.Rows = PartitaRows  # (declared after the game)


def deal_record(f: dict[str, np.ndarray], i: int) -> dict:
    """Entry ``i`` of ``DEAL_FIELDS`` arrays as the deal's record: ``PartitaGame.history``'s entries and
    the final info's ``last_result`` (before ``result_view``)."""
    rec = {k: f[k][i].tolist() for k, _ in DEAL_FIELDS[:-3]}
    rec["tricks"] = [([[int(s), int(c)] for s, c in zip(f["log_seat"][i, t], f["log_card"][i, t])],
                      int(f["log_winner"][i, t])) for t in range(HAND_SIZE)]
    return rec


@njit(cache=True, nogil=True)
def discard_trumps_needed_many(dealer_hands: np.ndarray) -> np.ndarray:
    """:func:`discard_trumps_needed` of each of ``dealer_hands`` (uint64 card sets; a sampler's worlds, PAR-4.4)."""
    out = np.empty(len(dealer_hands), dtype=np.int64)
    for i in range(len(dealer_hands)):
        out[i] = discard_trumps_needed(dealer_hands[i])
    return out
