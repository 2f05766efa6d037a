"""Ottocento: the rules (RULES.md Part C with Part B, ``docs/rules/ottocento.md``), written once for one game and
for a batch.

Four players in partnerships ``{0, 2}``, ``{1, 3}`` (OTT-1.1) play the 62-card pack (B.1) to 800 (OTT-10). A hand's
phases: ``A_MONTE`` (OTT-2.1, 2.3, OTT-3), ``DISCARD`` (OTT-4), ``DECLARE`` (OTT-5, 6.1: one card per decision, the
encoding of OTT-5.5 by ``M(hand)``), ``PLAY`` (OTT-7, OTT-8, B.4), ``GAME_OVER``; its end: OTT-7.3, 7.4, 4.3, C.9.
The decisions taken beyond the rules (OTT-3.2, 5.5, 7.3, 8.4, 10.3) are on the rules page, the actions, the
observation and the options on the env's page (``tarot_env.envs.ottocento``).

One engine (issue #33): the state is declared once, :class:`OttocentoRows` (one array per field, batch axis
first; the cards as card sets, ``FIELDS`` the bool views of them), handed to the
kernels as one :class:`State` tuple. A step of every row is one call, ``_step_kernel``: the action by the row's
phase (``_act``), then in a row whose hand ended its record (``_record_hand``), the end of the game and the next
hand (``_hand_ended``); ``_encode_kernel`` is the observation and the mask. :class:`OttocentoGame` drives them on
one row; ``tarot_env.vector.ottocento.OttocentoVec`` on ``B`` rows; ``tests/test_golden.py`` holds both to the games
recorded before the rewrite.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..cards import BOLOGNESE, EXCUSE, TRUMP
from ..config import Config, option
from ..engine import (
    NUM_SIGNALS,
    Layout,
    TrickGame,
    _tables,
    played_trick_table,
    row_call,
    row_field,
    row_number,
    written_into,
)
from ..kernels import NO_SUIT, legal_play, play_tables, popcount, shown_voids, trick_winner_index
from ..vector.base import Rows, pack_cards, unpack_cards
from ..vector.combo_cache import ComboCache, write_view, write_view_sparse
from ..vector.pcg import TWO_WORDS, _seed_row, next64, permutation, stream_arrays
from ..vector.sparse import bounded_width, card_index, finish, put_feature, put_flag
from . import combos
from .combos import card_points, cheapest_card, evaluate_bits

N = BOLOGNESE.size  # 62 cards (B.1)
PLAYERS = 4  # OTT-1.1
TEAM_OF = (0, 1, 0, 1)  # OTT-1.1: partners sit opposite
PACKET = 5  # OTT-2.1: packets of 5
ROUNDS = 3  # OTT-2.1: three rounds
HAND_SIZE = PACKET * ROUNDS  # 15 cards = 15 tricks (OTT-7.1)
DEALER_EXTRA = 2  # OTT-2.2: the dealer takes the last 2
DISCARD_SIZE = 2  # OTT-4.1
MAX_HELD = HAND_SIZE + DEALER_EXTRA  # 17
LAST_TRICK_BONUS = 6  # B.3.5
TARGET_SCORE = 800  # OTT-10.1
MATTO = BOLOGNESE.excuse
VALUE = BOLOGNESE.value  # B.3.1
assert N == 62 and PLAYERS * HAND_SIZE + DEALER_EXTRA == N  # OTT-2.1/2.2: the whole pack is dealt

# OTT-4.2: the 5-point cards (4 Kings, Angel, World, Bégato, Matto) may not be discarded.
FIVE_POINT = VALUE == 5
DISCARDABLE = ~FIVE_POINT
assert FIVE_POINT.sum() == 8

# Extra action ids after the cards (0..61) and the three signals (62..64).
A_MONTE = N + NUM_SIGNALS  # 65: "a monte" (throw the hand in), OTT-3
PLAY_ON = A_MONTE + 1  # 66: "no a monte", OTT-3
DECLARE_DONE = A_MONTE + 2  # 67: close my declaration, OTT-5
NUM_ACTIONS = DECLARE_DONE + 1  # 68
EXTRA_NAMES = {A_MONTE: "a_monte", PLAY_ON: "play_on", DECLARE_DONE: "declare_done"}

# Cards in some combination family (B.5): all the counting cards, the trumps (Grande), the Moors,
# the Aces. The plain 6–10 pips are the only cards outside every family.
IN_FAMILY = combos.IN_FAMILY

# OTT-7.3 tie-break among the candidates of equal combination loss: lowest value, then outside every
# family, then lowest trick rank (suit cards below trumps, then strength).
PAYMENT_ORDER = np.array(sorted(
    (c for c in range(N) if c != MATTO),
    key=lambda c: (int(VALUE[c]), bool(IN_FAMILY[c]), BOLOGNESE.suit[c] == TRUMP,
                   int(BOLOGNESE.strength[c]), c),
))
PAYMENT_RANK = np.full(N, N - 1, dtype=np.int64)  # position in PAYMENT_ORDER (the Matto: last)
PAYMENT_RANK[PAYMENT_ORDER] = np.arange(N - 1)


def matto_payments(piles, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """OTT-7.3: the card each team pile (bool[k, 62], its cards won in tricks with the Matto) gives for the Matto,
    int64[k] (-1: none): of the pile's cards of value 1, else of its lowest value (O-9), never the Matto, the one
    whose loss costs the pile the fewest combination points (B.5, with the game's flags), ties broken by
    ``PAYMENT_ORDER`` (``combos.cheapest_card``). The dealer's discards join a pile only after the payment
    (OTT-4.3), so they neither pay nor steer it. The end-of-hand kernel's own function (:func:`_matto_payment`)."""
    bits = pack_cards(np.asarray(piles, dtype=bool).reshape(-1, N))
    t = combos.combo_tables()
    return np.array([_matto_payment(x, bool(moors_double_count), int(suit_min_natural), t) for x in bits],
                    dtype=np.int64)


@njit(cache=True, nogil=True)
def target_team(score0: int, score1: int, target: int) -> int:
    """OTT-6.1, OTT-10.1/10.2: the team at the target or above with the higher total; -1 if no team
    reached it or the totals are exactly equal (OTT-10.3: play on). Compiled: the batched engine's
    kernels call this one function too."""
    if max(score0, score1) >= target and score0 != score1:
        return 0 if score0 > score1 else 1
    return -1


# OTT-8.4: the top card of each suit (King; the Angel for trumps), indexed by suit 0..3, TRUMP.
TOP_CARD = np.array([BOLOGNESE.parse(n) for n in ("KD", "KC", "KS", "KB", "Angel")], dtype=np.int64)


def team_hand_score(pile, declared: int = 0, last_trick: bool = False, *,
                    moors_double_count: bool = True, suit_min_natural: int = 2) -> int:
    """C.9: declared points + combo_points(pile) + card_points(pile) + 6 for the last trick."""
    return (int(declared)
            + combos.combo_points(np.asarray(pile, dtype=bool), moors_double_count=moors_double_count,
                                  suit_min_natural=suit_min_natural)
            + card_points(pile) + LAST_TRICK_BONUS * bool(last_trick))


def declarable_cards(hand, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """bool[62]: ``M(hand)``, the largest subset of ``hand`` whose every card scores (OTT-5.5): a set ``R`` of
    revealed cards can be completed to a legal declaration iff ``R ⊆ M(hand)``."""
    bits = declarable_many(pack_cards(np.asarray(hand, dtype=bool)), moors_double_count=moors_double_count,
                           suit_min_natural=suit_min_natural)
    return unpack_cards(bits, N)


def declarable_many(hand_bits, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """:func:`declarable_cards` of many hands at once (62-bit sets, ``uint64``, any shape; returns uint64
    sets): the kernels' fixed point ``S -> S & scoring_cards(S)`` (:func:`_m_hand`), hand by hand."""
    s = np.array(hand_bits, dtype=np.uint64)
    t = combos.combo_tables()
    out = [_m_hand(x, bool(moors_double_count), int(suit_min_natural), t) for x in s.ravel()]
    return np.array(out, dtype=np.uint64).reshape(s.shape)


class Phase(IntEnum):
    A_MONTE = 0
    DISCARD = 1
    DECLARE = 2
    PLAY = 3
    GAME_OVER = 4


@dataclass(frozen=True)
class OttocentoConfig(Config):
    game = "ottocento"
    target_score: int = option(TARGET_SCORE, lo=1, hi=100_000,
                               doc="cumulative score that wins the game (OTT-6.1, OTT-10.1: 800)")
    max_hands: int = option(60, lo=1, hi=100_000,
                            doc="hands (thrown-in ones included) after which the game ends as a draw "
                                "(OTT-10.3)")
    moors_double_count: bool = option(True, doc="a Moor counts in the Grande and in the Moors "
                                                "sequence; false: in one, the best division (B.5.3.7, O-4)")
    suit_min_natural: int = option(2, choices=(2, 3), doc="natural cards among the first three of a "
                                                          "suit sequence; the Grande: 2 (B.5.3.4, O-2)")
    ott_signal_players: str = option("eldest_only", choices=("eldest_only", "all"),
                                     doc="who may signal (OTT-8.3)")
    ott_signal_timing: str = option("any", choices=("any", "after_top_card_played"),
                                    doc="when a signal may go with a card (OTT-8.4)")
    a_monte: str = option("stop_at_no", choices=("stop_at_no", "ask_all", "off"),
                          doc="the a monte question (OTT-3): stop at the first 'play on', ask all "
                              "four, or skip it")
    first_dealer: int = option(-1, lo=-1, hi=3, doc="seat that deals first; -1 = at random (OTT-1.2)")


# Observation of one seat (seat-relative: 0 = me, 1 = my right-hand opponent, 2 = partner, 3 = left).
DECLARED_SCALE = combos.COMBO_BOUND  # 1000 > 846, the most B.5 points of any set of cards
OBS = Layout([
    ("hand", N),                        # my cards (H.2)
    ("my_discards", N),                 # my hidden discards, when I dealt (OTT-4.1)
    ("declared", 4 * N),                # cards each seat laid face up (OTT-5.2, H.3)
    ("played", 4 * N),                  # cards each seat played to tricks this hand
    ("trick", 4 * N),                   # the current trick, by seat
    ("won", 2 * N),                     # cards taken in tricks by my team / the other (Matto: owner)
    ("signals", 4 * NUM_SIGNALS * 6),   # signals given: seat x signal x suit of its card (OTT-8.2)
    ("matto_paid", N),                  # the low card paid for the Matto at the end of the hand (H.3)
    ("a_monte", 4 * 2),                 # answers per seat: said "a monte", said "play on" (H.3)
    ("pending_signal", NUM_SIGNALS),    # the signal I chose for my next card
    ("seat_from_dealer", 4),            # one-hot: 0 = I deal, 1 = I am eldest, ...
    ("leader", 4),                      # one-hot: who led the current trick
    ("hand_sizes", 4),                  # cards held by each seat / 17
    ("tricks_won", 2),                  # tricks taken by my team / the other team / 15
    ("declared_points", 4),             # each seat's declared points / 1000
    ("scores", 2),                      # cumulative game score of my team / the other / target_score
    ("hands_played", 2),                # hands played / max_hands, hands left / max_hands
    ("phase", 5),                       # one-hot: a monte, discard, declare, play, game over
    # v1 (RULES.md H.1.1, table memory), appended so that the v0 sections keep their offsets:
    ("shown_void", 4 * 5),              # seat x suit (4 suits, trumps) shown lacking by not following
                                        # (OTT-7.2, B.4.1-B.4.2; the Matto shows nothing)
    ("signal_cards", N * NUM_SIGNALS),  # card x signal: the signal each played card carried (OTT-8.2)
    ("played_trick", N),                # per card: (t + 1) / 15 if played in trick t this hand, else 0
    # v2 (issue #12): what the won piles' combinations (B.5, C.9) are and what each card still to be
    # won would add to them; functions of the ``won`` section above alone (public, H.1), appended:
    ("pile_combos", 2),                 # combo_points of the cards my team / the other team won / 100
    ("combo_gain", 2 * N),              # per card in neither pile: what it would add to my team's /
                                        # the other team's pile combo_points, / 100 (combos.combo_gains)
])
OBS_SIZE = OBS.size
OBS_V0_SIZE = OBS.shown_void.start  # the v0 observation is this prefix (scripts/migrate_policy.py)
OBS_V1_SIZE = OBS.pile_combos.start  # the v1 observation is this prefix (scripts/migrate_policy.py)
COMBO_SCALE = combos.COMBO_SCALE  # pile_combos and combo_gain: points / 100
# 17 card sections (hand, my_discards, 4 declared, 4 played, 4 trick, 2 won, matto_paid) + the rest
assert OBS_V0_SIZE == 62 * 17 + 72 + 8 + 3 + 4 + 4 + 4 + 2 + 4 + 2 + 2 + 5 == 1164
assert OBS_V1_SIZE == OBS_V0_SIZE + 20 + 62 * 4 == 1432
assert OBS_SIZE == OBS_V1_SIZE + 2 + 2 * 62 == 1558

# The most nonzero features an observation can have, section by section (obs_format="sparse" pads each
# row to it; tests/test_sparse_obs.py checks seeded games against it): a hand holds at most 17 cards
# (OTT-2.2), the dealer discards 2 (OTT-4.1), a card is declared by one seat at most (OTT-5.2), 15 tricks
# of 4 are played (OTT-7.1), the trick holds at most 4, one card is paid for the Matto (OTT-7.3), each seat
# answers the a monte question once (OTT-3); each played card carries at most one signal (OTT-8.2), given
# by the eldest only under ott_signal_players="eldest_only" (OTT-8.3: 1 seat's 18 cells, 15 cards); a card
# shows at most twice in ``won`` and ``combo_gain`` together (in a pile once, else what it would add to
# each pile), hence N for each; of the scalars a one-hot is one feature, the others count whole.
SPARSE_BOUNDS = {"hand": MAX_HELD, "my_discards": DISCARD_SIZE, "declared": N, "played": 4 * HAND_SIZE, "trick": 4,
                 "won": N, "signals": OBS.signals.stop - OBS.signals.start, "matto_paid": 1, "a_monte": PLAYERS,
                 "pending_signal": 1, "seat_from_dealer": 1, "leader": 1, "hand_sizes": 4, "tricks_won": 2,
                 "declared_points": 4, "scores": 2, "hands_played": 2, "phase": 1, "shown_void": 4 * 5,
                 "signal_cards": 4 * HAND_SIZE, "played_trick": 4 * HAND_SIZE, "pile_combos": 2, "combo_gain": N}
_ELDEST_ONLY = {"signals": NUM_SIGNALS * 6, "signal_cards": HAND_SIZE}


def sparse_width(config: OttocentoConfig) -> int:
    """The fixed width of ``obs_format="sparse"`` rows: the most nonzero features of an observation under
    ``config`` (``SPARSE_BOUNDS``; 506, 407 with ``ott_signal_players="eldest_only"``, the default)."""
    eldest = config.ott_signal_players == "eldest_only"
    return bounded_width(OBS, dict(SPARSE_BOUNDS, **_ELDEST_ONLY) if eldest else SPARSE_BOUNDS)


# Full-information state for centralised critics (absolute seats).
STATE = Layout([
    ("hands", 4 * N), ("discards", 4 * N), ("declared", 4 * N), ("played", 4 * N),
    ("trick", 4 * N), ("won", 2 * N), ("signals", 4 * NUM_SIGNALS * 6), ("matto_paid", N),
    ("a_monte", 4 * 2), ("pending_signal", NUM_SIGNALS), ("dealer", 4), ("current", 4),
    ("leader", 4), ("tricks_won", 2), ("declared_points", 4), ("scores", 2), ("hands_played", 2),
    ("phase", 5),
    ("shown_void", 4 * 5), ("signal_cards", N * NUM_SIGNALS), ("played_trick", N),  # v1, absolute seats
])
STATE_SIZE = STATE.size
STATE_V0_SIZE = STATE.shown_void.start
# 23 card sections (4 hands, 4 discards, 4 declared, 4 played, 4 trick, 2 won, matto_paid) + the rest
assert STATE_V0_SIZE == 62 * 23 + 72 + 8 + 3 + 4 * 3 + 2 + 4 + 2 + 2 + 5 == 1536
assert STATE_SIZE == STATE_V0_SIZE + 20 + 62 * 4
_PLAYED_TRICK = played_trick_table(HAND_SIZE)  # OTT-7.1: 15 tricks
# each version's observation / state is a prefix of the current one (scripts/migrate_policy.py)
OBS_SIZES = {"v0": OBS_V0_SIZE, "v1": OBS_V1_SIZE, "v2": OBS_SIZE}
STATE_SIZES = {"v0": STATE_V0_SIZE, "v1": STATE_SIZE, "v2": STATE_SIZE}

REL = [np.array([(s + i) % PLAYERS for i in range(PLAYERS)]) for s in range(PLAYERS)]


class OttocentoGame(TrickGame):
    """One Ottocento game: a one-row :class:`OttocentoRows` (``self.row``) driven by the batch's kernels, plus the
    game's record (``history``, ``winner``, ``truncated``). The attributes a reader of a game expects (``hands``,
    ``won``, ``declared``, ``trick``, ``tricks``, ``dealer``, ``scores`` …) are read-only views of the row."""

    RESULT_FIELDS = ("winner", "game_over", "truncated")  # truncated: ended at max_hands (a draw)
    TRICK_COUNT = "ntricks"

    name = "ottocento"
    pack = BOLOGNESE
    num_players = PLAYERS
    team_of = TEAM_OF
    num_teams = 2
    hand_size = HAND_SIZE
    num_actions = NUM_ACTIONS
    Phase = Phase
    Config = OttocentoConfig
    OBS = OBS
    STATE = STATE
    sparse_width = staticmethod(sparse_width)
    # B.5 points are at most 846 (combos.COMBO_BOUND): a pile's, or what one card adds, / COMBO_SCALE
    OBS_HIGH = {"pile_combos": combos.COMBO_BOUND / COMBO_SCALE, "combo_gain": combos.COMBO_BOUND / COMBO_SCALE}

    def _setup(self, config: OttocentoConfig, history: list, row: OttocentoRows,
               result: tuple = (None, False, False)) -> OttocentoGame:
        self.config = config
        self.tables = _tables(BOLOGNESE)
        self.history: list[dict] = history  # every finished hand's record
        # OTT-10: the winning team, -1 a draw; over; truncated: the game ended at max_hands (a draw, OTT-10.3)
        self.winner, self.game_over, self.truncated = result
        self.row = row
        row.config, row.one_row = config, True
        self._cc = ComboCache.empty(1, 2)  # the v2 features' cache (checks its keys: never state)
        self._one = np.zeros(1, dtype=np.int64)
        self._seat = np.zeros(1, dtype=np.int64)
        self._mask = np.zeros((1, NUM_ACTIONS), dtype=bool)
        self._no_obs = np.zeros((1, 0), dtype=np.float32)
        return self

    def _first_deal(self, dealer: int) -> None:  # (TrickGame.__init__; OTT-1.2: the first dealer)
        self.row.next_hands(ROW0, np.array([dealer], dtype=np.int64))

    @classmethod
    def of_row(cls, rows: OttocentoRows, b: int, history: list[dict]) -> OttocentoGame:
        """The game of row ``b`` of ``rows`` (a copy: a batched engine's row as a rules object)."""
        row = OttocentoRows(1, rows.config)
        for k, v in rows.arrays().items():
            getattr(row, k)[0] = v[b]
        return object.__new__(cls)._setup(rows.config, history, row)

    def next_game(self, seed: int | None = None) -> OttocentoGame:
        """A new game; its first deal goes on round the table (OTT-1.3: to the last dealer's right)."""
        if seed is None:
            seed = int(self.row.streams.next_game_seeds(ROW0)[0])  # rng.integers(2**63)
        return OttocentoGame(self.config, seed, first_dealer=self.next_seat(self.dealer))

    @classmethod
    def _extra_action_name(cls, action: int) -> str:
        return EXTRA_NAMES.get(action, f"action{action}")

    @property
    def eldest(self) -> int:
        return self.next_seat(self.dealer)

    def _flags(self) -> dict:
        return {"moors_double_count": self.config.moors_double_count,
                "suit_min_natural": self.config.suit_min_natural}

    # --- deal (OTT-2) -------------------------------------------------------------------------------
    def start_hand(self, dealer: int, deck: np.ndarray | None = None) -> None:
        """Shuffle (or take ``deck``, a permutation of the 62 ids) and deal the first round (OTT-2.1,
        :func:`_start_hand_kernel`)."""
        if deck is None:
            self.row.next_hands(ROW0, np.array([dealer], dtype=np.int64))
        else:
            self.row.deal(ROW0, np.array([dealer], dtype=np.int64), np.asarray(deck, dtype=np.int64)[None])

    def set_hands(self, dealer: int, hands: list[list[int]]) -> None:
        """Start a hand from explicit hands (4 lists of ids, 15 each and 17 for the dealer), e.g. golden
        games. The a monte question is still asked unless ``a_monte="off"``."""
        sizes = [len(h) for h in hands]
        want = [MAX_HELD if s == dealer else HAND_SIZE for s in range(PLAYERS)]
        deck = np.zeros(N, dtype=np.int64)
        for s in range(PLAYERS) if sizes == want else ():  # OTT-2.1, 2.2: each seat's cards at its deck positions
            deck[(dealer + DEAL_TO) % PLAYERS == s] = hands[s]
        if sizes != want or sorted(deck.tolist()) != list(range(N)):
            raise ValueError(f"hands must hold the 62 cards once each, 15 per player and 17 for the "
                             f"dealer (seat {dealer}); got sizes {sizes}")
        self.start_hand(dealer, deck)

    def place_cards(self, hands: np.ndarray | None = None, discards: np.ndarray | None = None,
                    deck: np.ndarray | None = None) -> None:
        """Put cards in the hands, the discards (``bool[4, 62]`` each) and the deck without a rule (a sampled
        world, a leak test's re-deal): :meth:`OttocentoRows.place_cards`. Check the result with :meth:`check_state`."""
        self.row.place_cards(0, hands, discards, deck)

    # --- what a state must hold (checked when a state comes from outside: TrickGame.check_state) ------
    def _first_round_only(self) -> bool:
        """Only the first round is dealt: the a monte question (OTT-2.3), or a game that ended on a
        thrown-in hand (OTT-3.2)."""
        return self.phase == Phase.A_MONTE or (self.game_over and bool(self.history)
                                               and bool(self.history[-1].get("thrown_in")))

    def _row_sets(self) -> dict[str, list[int] | int]:
        r = self.row
        sets = {"hands": r.hbits[0].tolist(), "played": r.pbits[0].tolist(), "trick_by": r.trick_bits()[0].tolist(),
                "won": r.wbits[0].tolist(), "discards": r.xbits[0].tolist()}
        if self._first_round_only():  # OTT-2.1: the rest of the deck is not dealt yet
            sets["undealt"] = 0
            for c in np.asarray(self.deck)[PACKET * PLAYERS:].tolist():
                sets["undealt"] |= 1 << c
        return sets

    def phase_problems(self, sets: dict) -> list[str]:
        """OTT-2.1, 2.2, 4.1, 7.1: the cards each seat holds in each phase; the row's bit sets and
        counters agree with its cards."""
        d, held = self.dealer, [x.bit_count() for x in sets["hands"]]
        made = sets["discards"][d].bit_count()
        if self._first_round_only():
            want = [PACKET] * PLAYERS
        elif self.phase == Phase.DISCARD:
            want = [MAX_HELD - made if s == d else HAND_SIZE for s in range(PLAYERS)]
        else:
            want = [HAND_SIZE - x.bit_count() for x in sets["played"]]
        out = []
        if held != want:
            out.append(f"the hands hold {held} cards; phase {self.phase.name} means {want} (OTT-2)")
        if sum(x.bit_count() for x in sets["discards"]) != made:
            out.append(f"seats other than the dealer (seat {d}) hold discards (OTT-4.1)")
        r = self.row
        if not (0 <= r.ntricks[0] <= HAND_SIZE and 0 <= r.trick_len[0] < PLAYERS and -1 <= r.pending[0] < NUM_SIGNALS
                and 0 <= r.phase[0] < len(Phase) and 0 <= r.nsig[0] <= _MAX_SIGNALS):
            out.append(f"tricks {r.ntricks[0]}, trick length {r.trick_len[0]}, pending signal {r.pending[0]}, "
                       f"phase {r.phase[0]} or signals {r.nsig[0]} out of range")
        return out

    # --- the driver API -----------------------------------------------------------------------------
    def legal_mask(self) -> np.ndarray:
        """The legal actions of the seat to act (:func:`_encode_kernel`'s mask; none once the game is over)."""
        if self.game_over:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        r = self.row
        r.encode(r.current, self._no_obs, False, self._mask, True, self._cc)
        return self._mask[0].copy()

    def apply_unchecked(self, action: int) -> None:
        """The action of the seat to act (:meth:`OttocentoRows.act`, one compiled call); a finished hand is
        recorded, then the game ends (OTT-6.1, OTT-10) or the deal passes (OTT-1.3)."""
        r = self.row
        self._one[0] = action
        if r.act(self._one, ONE_GAME):  # the hand ended: recorded; the game over, or the next hand dealt
            out = r.step_out
            self.history.append(_result(out.rec[0].tolist()))
            if r.phase[0] == Phase.GAME_OVER:
                self.game_over, self.winner, self.truncated = True, int(out.winner[0]), bool(out.trunc[0])

    # --- encoders (the batch's kernels, on this row) ------------------------------------------------
    def observation_and_mask(self, out: np.ndarray) -> np.ndarray:
        """The seat to act's observation into ``out`` (float32[OBS], C-contiguous, writable: the AEC env's
        buffer) and its legal mask (returned, a new array), in one kernel call (:func:`_encode_kernel`): the
        AEC env's every decision (``TarotAECEnv._after_move``)."""
        if self.game_over:
            self.observation(self.current, out)
            return self.legal_mask()
        r = self.row
        r.encode(r.current, out[None, :], True, self._mask, True, self._cc)
        return self._mask[0].copy()

    def observation(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """What ``seat`` knows (RULES.md H.1–H.3, H.1.1), as a float32 vector laid out by ``OBS``
        (:func:`_encode_kernel`)."""
        self._seat[0] = seat
        return written_into(out, OBS_SIZE, lambda o: self.row.encode(self._seat, o[None, :], True, self._mask, False,
                                                                     self._cc))

    def state_vector(self, out: np.ndarray | None = None) -> np.ndarray:
        """Everything, for centralised critics in training only (absolute seats, ``STATE`` layout)."""
        o = np.empty(STATE_SIZE, dtype=np.float32) if out is None else out
        self.row.state_into(o[None, :])
        if self.game_over:
            o[STATE.current] = 0.0  # nobody is to act
        return o

    # --- the end of a hand, as the kernels count it (on a copy of the row) ---------------------------
    def _counted(self) -> tuple[dict, np.ndarray]:
        """The end-of-hand kernel (:func:`_end_hands_kernel`) on a copy of the row: the record and the team piles."""
        rec, piles = self.row.copy().count_hands(ROW0)
        return _result(rec[0].tolist()), piles[0]

    def hand_scores(self) -> tuple[list[int], dict]:
        """C.9 per team for the hand just played, with the parts (the record ``history`` gets)."""
        result = self._counted()[0]
        return result["scores"], result

    def team_piles(self) -> tuple[np.ndarray, dict]:
        """bool[2, 62]: each team's cards after the Matto (OTT-7.3, 7.4) and discard (OTT-4.3) transfers,
        and what moved."""
        result, piles = self._counted()
        return unpack_cards(piles, N), {k: result[k] for k in ("matto_team", "matto_paid", "discards_to")}

    # --- read-only views of the row -------------------------------------------------------------------
    hands = row_field("hands", "bool[4, 62]: the cards each seat holds (declared ones included, OTT-5.2)")
    played = row_field("played", "bool[4, 62]: the cards each seat played to tricks this hand")
    trick_by = row_field("trick_by", "bool[4, 62]: the current trick, by seat")
    won = row_field("won", "bool[2, 62]: the cards each team took in tricks (B.4.5: the Matto to its owner's)")
    discards = row_field("discards", "bool[4, 62]: the discards (only the dealer's, OTT-4.1)")
    signal_table = row_field("signal_table", "bool[4, 3, 6]: seat x signal x suit of its card (OTT-8.2)")
    declared = row_field("declared", "bool[4, 62]: the cards each seat laid face up (OTT-5.2)")
    matto_paid = row_field("matto_paid", "bool[62]: the card paid for the Matto (OTT-7.3)")
    a_monte_said = row_field("a_monte_said", "bool[4, 2]: said a monte, said play on (OTT-3)")
    shown_void = row_field("shown_void", "bool[4, 5]: seat x suit shown lacking (H.1.1)")
    signal_card = row_field("signal_card", "bool[62, 3]: the signal each played card carried (H.1.1)")
    dealer = row_number("dealer", "the seat that deals this hand")
    current = row_number("current", "the seat to act")
    leader = row_number("leader", "the seat that led the current trick")
    pending_signal = row_number("pending", "the signal chosen for the acting seat's next card, or -1 (OTT-8)")
    hands_played = row_number("hands_played", "hands finished in this game, thrown-in ones included (OTT-10.3)")
    excuse_owner = row_number("excuse_owner", "the seat that played the Matto this hand, or -1")
    excuse_trick_winner = row_number("excuse_trick_winner", "the winner of the Matto's trick, or -1")
    tricks_won = row_field("tricks_won", "int64[2]: tricks taken by each team this hand")
    deck = row_field("deck", "int64[62]: the hand's shuffled deck (OTT-2.1)")
    card_trick = row_field("card_trick", "int64[62]: t + 1 for a card played in trick t this hand, else 0 (H.1.1)")
    declarable = row_field("declarable", "bool[62]: M(hand) of the seat declaring now (OTT-5.2)")
    scores = row_field("scores", "int64[2]: the game score of each team (read-only)")

    @property
    def declared_points(self) -> list[int]:
        """Each seat's declared points this hand (OTT-5.3)."""
        return self.row.declared_points[0].tolist()

    @property
    def trick(self) -> list[tuple[int, int]]:
        """The current trick, ``(seat, card)`` in play order."""
        r, ld = self.row, int(self.row.leader[0])
        return [((ld + i) % PLAYERS, int(c)) for i, c in enumerate(r.trick_cards[0, :r.trick_len[0]])]

    @property
    def tricks(self) -> list[tuple[list[tuple[int, int]], int]]:
        """The finished tricks of this hand: ``([(seat, card), ...], winner)``."""
        r = self.row
        return [([((int(r.trick_lead[0, t]) + i) % PLAYERS, int(c)) for i, c in enumerate(r.trick_log[0, t])],
                 int(r.trick_winners[0, t])) for t in range(int(r.ntricks[0]))]

    @property
    def signals(self) -> list[tuple[int, int, int]]:
        """The signals given this hand, ``(seat, card, signal)`` in play order (OTT-8)."""
        return [tuple(x) for x in self.row.sig_log[0, :self.row.nsig[0]].tolist()]

    # --- clone and (de)serialisation: the row's arrays ------------------------------------------------
    def _load_row(self, row) -> None:
        """As the engine's, and a state saved before 2026-12-05 (its row: ``blocks`` ...) still loads
        (:func:`_old_row`)."""
        super()._load_row(_old_row(row) if isinstance(row, dict) and "blocks" in row else row)

    # --- what a player may not know (RULES.md H.6), for the leak tests -----------------------------
    def hidden_from(self, seat: int) -> tuple[np.ndarray, np.ndarray]:
        """bool[4, 62] of hand cards and bool[62] of discards that ``seat`` cannot see: declared cards are public
        (OTT-5.2); the undealt rest of the deck during the a monte question (``deck[20:]``) is hidden from all."""
        hidden_hands = self.hands & ~self.declared
        hidden_hands[seat] = False
        hidden_discards = self.discards[self.dealer].copy()
        if seat == self.dealer:
            hidden_discards[:] = False
        return hidden_hands, hidden_discards

    # result_view: TrickGame's; the dealer's two discards are known to the dealer alone, not to the partner
    # (OTT-4.1, RULES.md H.3: discard_shown is False); the paid Matto card, the declarations and the score
    # parts are public (H.3, the count)

    def render_seat_extra(self, seat: int, viewer: int | None = None) -> str:
        """``seat``'s a monte answer, declaration (public, H.3) and discards (the dealer's own; the
        others see a count, OTT-4.1) in ``viewer``'s table view (``tarot_env.view``; None: everything)."""
        names = BOLOGNESE.names
        parts = []
        said = self.a_monte_said[seat]
        if said.any():
            parts.append("a monte" if said[0] else "play on")
        if self.declared[seat].any():
            pts = self.declared_points[seat]
            text = "declared: " + " ".join(names[c] for c in np.flatnonzero(self.declared[seat]))
            if pts:
                b = combos.combo_breakdown(self.declared[seat], **self._flags())
                found = [f"{c.family} {c.points}" for c in b.cricche]
                found += [f"{s.family} x{s.length} {s.points}" for s in b.sequences]
                doubled = ["Criccone"] * b.criccone + ["sequences doubled"] * b.sequences_doubled
                text += f" ({', '.join(found + doubled)}) = {pts}"
            else:
                text += " (declaring)"
            parts.append(text)
        if seat == self.dealer and self.discards[seat].any():
            if viewer is None or viewer == seat:
                parts.append("discarded: " + " ".join(names[c] for c in np.flatnonzero(self.discards[seat])))
            else:
                parts.append(f"discarded {int(self.discards[seat].sum())} face down")
        return "".join("  | " + p for p in parts)


# --- the kernels: the rules over rows (the batch axis first), for one game and for B ------------------
_VALUE = np.asarray(VALUE, dtype=np.int64)
_PT = play_tables(BOLOGNESE)  # B.4: the suit tables, the trick order ``beats``, ``led_after``
_BIT, _SUIT, _SUIT_BITS, _BEATS, _LED_AFTER = _PT.bit, _PT.suit, _PT.suit_bits, _PT.beats, _PT.led_after
_MATTO_BIT = _PT.excuse_bits
_DISCARDABLE_BITS = _PT.to_bits(np.asarray(DISCARDABLE, dtype=bool))  # OTT-4.2: all but the 5-point cards
_A_MONTE, _DISCARD, _DECLARE, _PLAY, _GAME_OVER = (int(p) for p in Phase)
# OTT-2.1/2.2: deck position j goes to seat dealer + DEAL_TO[j]: packets of 5 round the table from the eldest (1, 2,
# 3, the dealer 0) in three rounds, then the dealer's last 2; the first round before the a monte question (OTT-2.3)
_FIRST_ROUND = PLAYERS * PACKET  # 20 cards
DEAL_TO = np.array([1 + (j % _FIRST_ROUND) // PACKET for j in range(PLAYERS * HAND_SIZE)] + [0] * DEALER_EXTRA)
_TRICKS = HAND_SIZE  # 15 tricks a hand (OTT-7.1)
_MAX_SIGNALS = PLAYERS * HAND_SIZE  # at most one signal per card played
# where each section of the observation starts (``OBS``, in its order; _O_PC: combo_cache.write_view_sparse's)
(_O_HAND, _O_MYDISC, _O_DECL, _O_PLAYED, _O_TRICK, _O_WON, _O_SIG, _O_PAID, _O_AM, _O_PEND, _O_FROM_DEALER, _O_LEADER,
 _O_HS, _O_TW, _O_DP, _O_SC, _O_HP, _O_PHASE, _O_VOID, _O_SIGC, _O_PT, _O_PC, _O_GAIN) = (
    x.start for x in OBS.offsets.values())
assert _O_GAIN == _O_PC + 2 and OBS.combo_gain.stop == OBS.size and _O_SIGC == OBS.signal_cards.start
_SIG_CELLS = NUM_SIGNALS * 6  # a seat's signal table (OTT-8.2): cell 6 * signal + suit of its card
# the scalars of fixed divisors as the observation stores them (float64 quotients rounded to float32)
_HAND_SIZE_F = (np.arange(MAX_HELD + 1) / MAX_HELD).astype(np.float32)
_TRICKS_F = (np.arange(HAND_SIZE + 1) / HAND_SIZE).astype(np.float32)
_DECLARED_F = (np.arange(combos.COMBO_BOUND + 1) / DECLARED_SCALE).astype(np.float32)  # B.5 points: < 1000
_ONE = np.uint64(1)

_PLAYED_OUT, _THROWN_IN, _WON_AT_DECLARATIONS = 0, 1, 2  # a hand's record's kind (its first int)
# the record of a played-out hand (one int64 row, ``_count_hand``): its fields and widths, in the
# order of ``OttocentoGame.history``'s entry (``_result`` rebuilds the dict)
_RECORD = (("kind", 1), ("hand", 1), ("dealer", 1), ("scores", 2), ("tricks_won", 2), ("matto_team", 1),
           ("matto_paid", 1), ("discards_to", 1), ("declared", 4), ("declared_team", 2), ("combo", 2),
           ("card_points", 2), ("last_trick", 1), ("pile_sizes", 2), ("discards", 2))
_RECORD_AT = dict(zip((f for f, _ in _RECORD), np.cumsum([0] + [w for _, w in _RECORD[:-1]]).tolist()))
_RECORD_AT_LIST = list(_RECORD_AT.values())
_RECORD_SIZE = sum(w for _, w in _RECORD)
_WON_DECLARED = 5  # the record of a hand won at the declarations: kind, hand, dealer, scores, then each seat's
_RECORD_LEN = (_RECORD_SIZE, 5, _WON_DECLARED + PLAYERS)  # a record's length by its kind (_result reads them)
(_R_HAND, _R_DEALER, _R_SCORES, _R_TW, _R_MATTO_TEAM, _R_PAID, _R_TO, _R_DECLARED, _R_DECLARED_TEAM, _R_COMBO,
 _R_CARDS, _R_LAST, _R_SIZES, _R_DISCARDS) = (_RECORD_AT[f] for f, _ in _RECORD[1:])


# --- the compiled kernels (a step: see the module doc) ---------------------------------------------
# Each stage of a step is a short function of one row ``b`` of the state ``st``, inlined into the kernel.
_NO_END = -1  # a row's action left its hand going on (else the kind of the hand's record, _PLAYED_OUT ...)
COUNT_ONLY, ONE_GAME, NEXT_GAME = 0, 1, 2  # what follows a hand's end (StepOptions.after, _hand_ended)


class StepOptions(NamedTuple):
    """The options :func:`_step_kernel` reads (``OttocentoRows.step_options``)."""

    stop_at_no: bool  # a_monte="stop_at_no": the first "play on" ends the asking (OTT-3.2 [DECISION])
    a_monte_off: bool  # a_monte="off": no a monte question, the hand dealt whole (OTT-2.3)
    mdc: bool  # moors_double_count (B.5.3.7)
    smn: int  # suit_min_natural (B.5.3.4)
    target: int  # target_score (OTT-6.1, OTT-10.1)
    max_hands: int  # OTT-10.3
    after: int  # after a hand's end: COUNT_ONLY (nothing), ONE_GAME (OttocentoGame), NEXT_GAME (the batch)
    after_top: bool  # ott_signal_timing="after_top_card_played" (OTT-8.4), for the masks (_legal_row)
    eldest_only: bool  # ott_signal_players="eldest_only" (OTT-8.3)


class StepOut(NamedTuple):
    """What a step of ``B`` rows hands back (``OttocentoRows.act``): the ``n`` hands that ended, in row order,
    in ``[:n]`` of each array, and the scratch arrays of the kernel."""

    rows: np.ndarray  # int64[B]: the row of each hand that ended
    rec: np.ndarray  # int64[B, _RECORD_SIZE]: its record (_RECORD; thrown in: the first 5 ints, won at the
    #                  declarations: the first 9, ``_RECORD_LEN``)
    winner: np.ndarray  # int64[B]: the team that won the game there (OTT-6.1, OTT-10.1/10.2), else -1
    trunc: np.ndarray  # bool[B]: max_hands ended the game there as a draw (OTT-10.3)
    totals: np.ndarray  # int64[B, 2]: the game's scores after the hand (before a new game's zeros)
    redeal: np.ndarray  # int64[B]: rows whose new game's stream needs numpy's own seeding (a seed below
    #                     2**32, one game in 2**31), dealt in Python (``OttocentoRows.act``)
    seeds: np.ndarray  # uint64[B]: ... their seeds
    deck: np.ndarray  # int64[62]: scratch: a new hand's deck
    piles: np.ndarray  # uint64[2]: scratch: the team piles of a hand counted

    @classmethod
    def empty(cls, B: int) -> StepOut:
        i64 = lambda *shape: np.zeros((B,) + shape, dtype=np.int64)  # noqa: E731
        return cls(i64(), i64(_RECORD_SIZE), i64(), np.zeros(B, dtype=bool), i64(2), i64(),
                   np.zeros(B, dtype=np.uint64), np.zeros(N, dtype=np.int64), np.zeros(2, dtype=np.uint64))


@njit(cache=True, nogil=True, _nrt=False)
def _step_kernel(st, acts, opt, t, out, mask):
    """``OttocentoRows.act``: each row's action (:func:`_act`), a hand's end (:func:`_hand_ended`) and, with a
    ``mask`` of ``B`` rows (none: ``[0, NUM_ACTIONS]``), its next legal actions (:func:`_legal_row`) while the row
    is in cache. ``t``: the B.5 tables. Returns the number of hands that ended (``out``'s ``[:n]``) and of rows
    left to deal in Python (``out.redeal``, their masks not written)."""
    n = n_redeal = np.int64(0)  # (int64s, not literals: one compile of _hand_ended)
    masks = mask.shape[0] > 0
    for b in range(len(acts)):
        if acts[b] < 0:  # a row left as it is (a search's rollout whose hand has ended)
            continue
        kind = _act(st, b, acts[b], opt, t)
        if kind != _NO_END:
            n_redeal += _hand_ended(st, b, kind, opt, t, out, n, n_redeal)
            n += 1
        if masks:
            _legal_row(st, b, mask[b], opt.after_top, opt.eldest_only)
    return n, n_redeal


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _act(st, b, a, opt, t):
    """Row ``b``'s action ``a``, by the row's phase: the play (OTT-7, OTT-8), the a monte answers (OTT-3), the
    discard (OTT-4), the declarations (OTT-5). Returns the kind of the hand's record if the hand ended
    (``_PLAYED_OUT``, ``_THROWN_IN``, ``_WON_AT_DECLARATIONS``), else ``_NO_END``."""
    ph = st.phase[b]
    if ph == _PLAY:
        if a >= N:  # OTT-8.1: a signal, for the seat's next card
            st.pending[b] = a - N
            return _NO_END
        return _PLAYED_OUT if _play_card(st, b, st.current[b], a) else _NO_END
    if ph == _A_MONTE:
        return _a_monte(st, b, a == A_MONTE, opt.stop_at_no)
    if ph == _DISCARD:
        _discard(st, b, a, opt.mdc, opt.smn, t)
        return _NO_END
    return _declare(st, b, a, opt.mdc, opt.smn, t, opt.target)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _play_card(st, b, s, c):
    """OTT-7 (``TrickGame.play_card``): seat ``s``'s card ``c`` leaves the hand for the trick, shows the
    voids of not following (H.1.1, ``kernels.shown_voids``), carries the pending signal (OTT-8.2) and sets
    the suit led (B.4.3); the trick's fourth card closes it (:func:`_close_trick`). Returns whether that was
    the hand's last trick."""
    cs = _SUIT[c]
    v1, v2 = shown_voids(st.led[b], cs)  # H.1.1: not following shows voids (B.4.1, B.4.2)
    if v1 >= 0:
        st.voids[b, s, v1] = True
    if v2 >= 0:
        st.voids[b, s, v2] = True
    st.hbits[b, s] &= ~_BIT[c]
    st.pbits[b, s] |= _BIT[c]
    st.hand_sizes[b, s] -= 1
    t = st.ntricks[b]
    st.card_trick[b, c] = t + 1  # H.1.1: the trick it was played in
    k = st.trick_len[b]
    st.trick_cards[b, k] = c
    st.trick_len[b] = k + 1
    if st.pending[b] >= 0:
        _carry_signal(st, b, s, c)
    if cs == EXCUSE:
        st.excuse_owner[b] = s
    st.led[b] = _LED_AFTER[st.led[b] * N + c]  # B.4.3: the first card but the Matto sets the suit led
    if k < PLAYERS - 1:
        st.current[b] = (s + 1) % PLAYERS
        return False
    return _close_trick(st, b)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _carry_signal(st, b, s, c):
    """OTT-8.2: the pending signal goes with card ``c``, public: by the card (H.1.1; the signal table by the
    suit of the card is these and the seats' played cards) and in the hand's signal log."""
    p = st.pending[b]
    st.sbits[b, p] |= _BIT[c]  # (the signal table by seat and suit: _signal_cells)
    j = st.nsig[b]
    st.sig_log[b, j, 0], st.sig_log[b, j, 1], st.sig_log[b, j, 2] = s, c, p
    st.nsig[b] = j + 1
    st.pending[b] = -1


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _close_trick(st, b):
    """The full trick of row ``b``: B.4.4 the best card takes it (``kernels.trick_winner_index``) for its
    team, B.4.5 the Matto goes back to its owner's team; it is logged and the winner leads (OTT-7.1).
    Returns whether it was the hand's last (OTT-7.1: 15 tricks)."""
    tcards = st.trick_cards
    lead = st.leader[b]
    w = (lead + trick_winner_index(_BEATS, N, tcards[b])) % PLAYERS
    team = w % 2  # TEAM_OF: partners sit opposite (OTT-1.1)
    t = st.ntricks[b]
    for q in range(PLAYERS):
        cq = tcards[b, q]
        if cq == MATTO:
            st.wbits[b, (lead + q) % 2] |= _MATTO_BIT
            st.excuse_trick_winner[b] = w
        else:
            st.wbits[b, team] |= _BIT[cq]
        st.trick_log[b, t, q] = cq
    st.tricks_won[b, team] += 1
    st.trick_lead[b, t], st.trick_winners[b, t] = lead, w
    st.ntricks[b] = t + 1
    st.leader[b] = st.current[b] = w
    st.trick_len[b] = 0
    st.led[b] = NO_SUIT
    return t + 1 == _TRICKS


@njit(cache=True, nogil=True, _nrt=False)
def _a_monte(st, b, yes, stop_at_no):
    """OTT-3.1: the seat to act answers *a monte* (``yes``) or *play on*, in public (H.3). All four a monte:
    the hand is thrown in (OTT-3.2, returns ``_THROWN_IN``); the first "play on" (``stop_at_no``) or the
    dealer's answer deals the rest (OTT-2.1, 2.2); else the next seat answers."""
    s = st.current[b]
    st.said[b, s, 0 if yes else 1] = True
    last = s == st.dealer[b]  # eldest speaks first, the dealer last
    if yes and last and st.said[b, :, 0].all():
        return _THROWN_IN
    if last or (not yes and stop_at_no):
        _deal_rest(st, b)
    else:
        st.current[b] = (s + 1) % PLAYERS
    return _NO_END


@njit(cache=True, nogil=True, _nrt=False)
def _discard(st, b, c, mdc, smn, t):
    """OTT-4.1: the dealer lays card ``c`` face down (he alone sees it); after the second, the declarations
    start (OTT-5.1, :func:`_declarable_row`), the eldest first."""
    d = st.dealer[b]
    st.hbits[b, d] &= ~_BIT[c]
    st.xbits[b, d] |= _BIT[c]
    st.hand_sizes[b, d] -= 1
    if st.hand_sizes[b, d] == HAND_SIZE:
        st.phase[b] = _DECLARE
        st.current[b] = (d + 1) % PLAYERS
        st.done_ok[b] = True
        _declarable_row(st, b, mdc, smn, t)


@njit(cache=True, nogil=True, _nrt=False)
def _declare(st, b, a, mdc, smn, t, target):
    """OTT-5.2: the seat to act reveals card ``a`` (public, it stays in the hand) or closes its declaration
    (``DECLARE_DONE``). The declared set is valued by B.5 (``evaluate_bits``): after a reveal, DONE is legal
    iff the whole set scores; DONE records the points (OTT-5.3) and passes to the next declarer (OTT-5.1)
    or, after the dealer, ends the declarations (:func:`_declarations_over`). Returns
    ``_WON_AT_DECLARATIONS`` if a team reached the target there (OTT-6.1), else ``_NO_END``."""
    s = st.current[b]
    if a < N:
        st.dbits[b, s] |= _BIT[a]
    x = st.dbits[b, s]
    pts, scoring = evaluate_bits(x, mdc, smn, t)  # B.5
    if a < N:
        st.done_ok[b] = pts > 0 and scoring == x
        return _NO_END
    st.declared_points[b, s] = pts
    if s != st.dealer[b]:
        s = (s + 1) % PLAYERS
        st.current[b] = s
        st.done_ok[b] = True  # (nothing revealed yet; its M(hand): ``mhand[b, s]``)
        return _NO_END
    return _declarations_over(st, b, target)


@njit(cache=True, nogil=True, _nrt=False)
def _declarations_over(st, b, target):
    """After the dealer's declaration: the team points go into the scores at once (OTT-5.3, 6.1); a team at
    the target wins there (returns ``_WON_AT_DECLARATIONS``), else the play starts, eldest leading (OTT-7.1)."""
    dp, score = st.declared_points, st.scores
    score[b, 0] += dp[b, 0] + dp[b, 2]
    score[b, 1] += dp[b, 1] + dp[b, 3]
    if target_team(score[b, 0], score[b, 1], target) >= 0:
        return _WON_AT_DECLARATIONS
    st.phase[b] = _PLAY
    st.leader[b] = st.current[b] = (st.dealer[b] + 1) % PLAYERS
    return _NO_END


@njit(cache=True, nogil=True, _nrt=False)
def _hand_ended(st, b, kind, opt, t, out, i, n_redeal):
    """Row ``b``'s hand ended (``kind``: ``_PLAYED_OUT``, ``_THROWN_IN``, ``_WON_AT_DECLARATIONS``): its record
    into ``out[i]`` (:func:`_record_hand`); then, unless ``opt.after`` is ``COUNT_ONLY``, one more hand played
    (:func:`_game_end`) and: the game over, for one game (``ONE_GAME``) the row's phase is ``GAME_OVER``, for
    the batch (``NEXT_GAME``) the row's next game (``next_game()``: the stream ``default_rng(rng.integers(2**63))``
    of its own, the scores and hands afresh); then the next hand, dealt by the next seat (OTT-1.3, also to a
    new game). Returns 1 if the row is left to deal in Python (``out.redeal[n_redeal]``), else 0."""
    _record_hand(st, b, kind, opt.mdc, opt.smn, t, out.piles, out.rec[i])
    out.rows[i] = b
    if opt.after == COUNT_ONLY:
        return 0
    over = _game_end(st, b, kind != _THROWN_IN, opt.target, opt.max_hands, out, i)
    if over and opt.after == ONE_GAME:
        st.phase[b] = _GAME_OVER
        return 0
    if over:
        st.scores[b, 0] = st.scores[b, 1] = 0
        st.hands_played[b] = 0
        seed = next64(st.rng_state, st.rng_inc, b) >> np.uint64(1)  # rng.integers(2**63) (pcg.next_games)
        if seed < TWO_WORDS:
            out.redeal[n_redeal], out.seeds[n_redeal] = b, seed
            return 1
        _seed_row(st.rng_state, st.rng_inc, st.rng_half, b, seed)
    permutation(st.rng_state, st.rng_inc, st.rng_half, b, out.deck)  # rng.permutation(62)
    _start_hand_row(st, b, (st.dealer[b] + 1) % PLAYERS, out.deck, opt.a_monte_off)
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def _record_hand(st, b, kind, mdc, smn, t, piles, r):
    """The record ``r`` (``_RECORD``) of row ``b``'s hand that ended: played out, counted by
    :func:`_count_hand`; thrown in (OTT-3.2: no score); won at the declarations (OTT-6.1: the teams' and each
    seat's declared points)."""
    if kind == _PLAYED_OUT:
        _count_hand(st, b, mdc, smn, t, piles, r)
        return
    dp = st.declared_points
    won = kind == _WON_AT_DECLARATIONS
    r[0], r[_R_HAND], r[_R_DEALER] = kind, st.hands_played[b], st.dealer[b]
    r[_R_SCORES] = dp[b, 0] + dp[b, 2] if won else 0
    r[_R_SCORES + 1] = dp[b, 1] + dp[b, 3] if won else 0
    if won:
        for q in range(PLAYERS):
            r[_WON_DECLARED + q] = dp[b, q]


@njit(cache=True, nogil=True, _nrt=False)
def _game_end(st, b, check_target, target, max_hands, out, i):
    """One more hand played in row ``b`` (thrown-in ones count, OTT-10.3): ``out.winner[i]`` := the team at the
    target with the higher total (OTT-10.1/10.2, ``target_team``; not after a throw-in: ``check_target`` off),
    else -1; ``out.trunc[i]`` := ``max_hands`` ends the game as a draw (OTT-10.3); ``out.totals[i]`` := the
    game's scores. Returns whether the game is over."""
    st.hands_played[b] += 1
    w = target_team(st.scores[b, 0], st.scores[b, 1], target) if check_target else -1
    trunc = w < 0 and st.hands_played[b] >= max_hands
    out.winner[i], out.trunc[i] = w, trunc
    out.totals[i, 0], out.totals[i, 1] = st.scores[b, 0], st.scores[b, 1]
    return w >= 0 or trunc


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _signal_cells(st, b, s):
    """The four seats' signal tables in row ``b`` (OTT-8.2, public) as seen by seat ``s`` (me, right, partner,
    left), each a set of ``_SIG_CELLS`` bits, bit ``6 * signal + suit`` set when the seat played a card of that
    suit with that signal (``sbits``: the cards of each signal; ``pbits``: each seat's)."""
    pb, no = st.pbits, np.uint64(0)
    mine = right = partner = left = no
    for p in range(NUM_SIGNALS):
        x = st.sbits[b, p]
        for u in range(6 if x else 0):  # (most rows: no signal given)
            y = x & _SUIT_BITS[u]
            if y:
                cell = _ONE << np.uint64(6 * p + u)
                mine |= cell if y & pb[b, s] else no
                right |= cell if y & pb[b, (s + 1) % PLAYERS] else no
                partner |= cell if y & pb[b, (s + 2) % PLAYERS] else no
                left |= cell if y & pb[b, (s + 3) % PLAYERS] else no
    return mine, right, partner, left


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _put_flag(cols, vals, n, o, j, flag):
    """Feature ``j`` := 1.0 if ``flag`` (a bool cell), else 0, without a branch (``put_feature``, ``put_flag``)."""
    if o.shape[0]:
        o[j] = flag
        return n
    return put_flag(cols, vals, n, j, flag)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _put_cards(cols, vals, n, o, x, at):
    """Features ``at + c`` := 1.0 for each card ``c`` of the card set ``x``, walked set bit by set bit."""
    while x:
        n = put_feature(cols, vals, n, o, at + card_index(x), 1.0)
        x &= x - _ONE
    return n


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _put_scalars(cols, vals, n, o, st, s, b, opt):
    """The scalar sections of seat ``s``'s observation of row ``b`` (``pending_signal`` .. ``phase``) through
    ``put_feature``: the one-hots by their set feature, the others float64 quotients rounded once to float32 (those
    of fixed divisors read from tables of them, ``_HAND_SIZE_F`` ...)."""
    my, ld = s % 2, st.leader[b]
    if st.pending[b] >= 0 and s == st.current[b]:
        n = put_feature(cols, vals, n, o, _O_PEND + st.pending[b], 1.0)
    n = put_feature(cols, vals, n, o, _O_FROM_DEALER + (s - st.dealer[b]) % PLAYERS, 1.0)
    n = put_feature(cols, vals, n, o, _O_LEADER + (ld - s) % PLAYERS, 1.0)
    for i in range(PLAYERS):
        n = put_feature(cols, vals, n, o, _O_HS + i, _HAND_SIZE_F[st.hand_sizes[b, (s + i) % PLAYERS]])
    for i in range(2):
        n = put_feature(cols, vals, n, o, _O_TW + i, _TRICKS_F[st.tricks_won[b, (my + i) % 2]])
    for i in range(PLAYERS):
        n = put_feature(cols, vals, n, o, _O_DP + i, _DECLARED_F[st.declared_points[b, (s + i) % PLAYERS]])
    for i in range(2):
        n = put_feature(cols, vals, n, o, _O_SC + i, st.scores[b, (my + i) % 2] / opt.target)
    hp, most = st.hands_played[b], opt.max_hands
    n = put_feature(cols, vals, n, o, _O_HP, hp / most)
    n = put_feature(cols, vals, n, o, _O_HP + 1, (most - hp) / most)
    return put_feature(cols, vals, n, o, _O_PHASE + st.phase[b], 1.0)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _observe(cols, vals, o, st, s, b, cc, opt, t):
    """Seat ``s``'s observation of row ``b`` (RULES.md H.1-H.3, H.1.1; seat-relative, ``REL``: me, right, partner,
    left; ``won``, ``tricks_won``, ``scores``: my team first), laid out by ``OBS``: its nonzero features into the
    dense row ``o``, or (``o`` empty: ``obs_format="sparse"``) appended to one row's ``cols`` / ``vals``
    (``tarot_env.vector.sparse``), through ``put_feature``; returns their count. The scalars are float64 quotients
    rounded once to float32 (:func:`_put_scalars`); ``played_trick`` is ``_PLAYED_TRICK[card_trick]``; the v2
    sections are ``combo_cache.write_view``'s (``combos.combo_gains`` of the won piles, by absolute team in the
    ``ComboCache`` ``cc``)."""
    for j in range(o.shape[0]):
        o[j] = 0.0
    my, ld, pb = s % 2, st.leader[b], st.pbits
    n = _put_cards(cols, vals, 0, o, st.hbits[b, s], _O_HAND)
    n = _put_cards(cols, vals, n, o, st.xbits[b, s], _O_MYDISC)  # OTT-4.1: my own discards only
    for i in range(PLAYERS):
        q = (s + i) % PLAYERS
        n = _put_cards(cols, vals, n, o, st.dbits[b, q], _O_DECL + i * N)
        x = pb[b, q]
        while x:  # each played card, and its played_trick: (t + 1) / 15 if played in trick t
            c = card_index(x)
            n = put_feature(cols, vals, n, o, _O_PLAYED + i * N + c, 1.0)
            n = put_feature(cols, vals, n, o, _O_PT + c, _PLAYED_TRICK[st.card_trick[b, c]])
            x &= x - _ONE
    for k in range(st.trick_len[b]):  # the trick: its k-th card is seat leader + k's
        n = put_feature(cols, vals, n, o, _O_TRICK + ((ld + k - s) % PLAYERS) * N + st.trick_cards[b, k], 1.0)
    n = _put_cards(cols, vals, n, o, st.wbits[b, my], _O_WON)
    n = _put_cards(cols, vals, n, o, st.wbits[b, 1 - my], _O_WON + N)
    cells = _signal_cells(st, b, s)
    for i in range(PLAYERS):
        n = _put_cards(cols, vals, n, o, cells[i], _O_SIG + i * _SIG_CELLS)
    if st.paid[b] >= 0:
        n = put_feature(cols, vals, n, o, _O_PAID + st.paid[b], 1.0)
    for i in range(2 * PLAYERS):
        n = _put_flag(cols, vals, n, o, _O_AM + i, st.said[b, (s + i // 2) % PLAYERS, i % 2])
    n = _put_scalars(cols, vals, n, o, st, s, b, opt)
    for i in range(5 * PLAYERS):
        n = _put_flag(cols, vals, n, o, _O_VOID + i, st.voids[b, (s + i // 5) % PLAYERS, i % 5])
    for p in range(NUM_SIGNALS):  # signal_cards: card x signal
        x = st.sbits[b, p]
        while x:
            n = put_feature(cols, vals, n, o, _O_SIGC + card_index(x) * NUM_SIGNALS + p, 1.0)
            x &= x - _ONE
    p0, p1 = st.wbits[b, 0], st.wbits[b, 1]  # the row's ComboCache: pile k = team k; mine first
    mine, other = (p1, p0) if my else (p0, p1)
    if o.shape[0]:
        write_view(cc, b, my, mine, 1 - my, other, opt.mdc, opt.smn, t, o, _O_PC, True)
        return n
    return write_view_sparse(cc, b, my, mine, 1 - my, other, opt.mdc, opt.smn, t, cols, vals, n, _O_PC, True)


@njit(cache=True, nogil=True, inline="always")
def _legal_set(st, b, after_top, eldest_only):
    """The legal actions of row ``b``'s seat to act (``OttocentoGame.legal_mask``) as sets: ``(cards, extra,
    n_extra)``, the cards (uint64 bits) and the ``n_extra`` actions ``extra, extra + 1, ...`` past the cards (none
    outside the four phases)."""
    ph, s, pend = st.phase[b], st.current[b], st.pending[b]
    if ph == _PLAY:  # B.4.1-B.4.3, OTT-7.2; a signal, OTT-8.3: by an eligible seat, one per card
        cards = legal_play(st.hbits[b, s], st.led[b], _SUIT_BITS)
        signals = pend < 0 and not (eldest_only and s != (st.dealer[b] + 1) % PLAYERS)
        if after_top:  # OTT-8.4: a signal goes with a card of a suit whose top card is out
            pb = st.pbits
            played, top = pb[b, 0] | pb[b, 1] | pb[b, 2] | pb[b, 3], np.uint64(0)
            for u in range(5):
                if played & _BIT[TOP_CARD[u]]:
                    top |= _SUIT_BITS[u]
            sig_ok = cards & top & ~_MATTO_BIT
            signals = signals and sig_ok != 0
            if pend >= 0:
                cards = sig_ok
        return cards, N, NUM_SIGNALS if signals else 0
    if ph == _A_MONTE:  # OTT-3.1: a monte or play on
        return np.uint64(0), A_MONTE, 2
    if ph == _DISCARD:  # OTT-4.2: the dealer's cards but the 5-point ones
        return st.hbits[b, st.dealer[b]] & _DISCARDABLE_BITS, 0, 0
    if ph != _DECLARE:
        return np.uint64(0), 0, 0
    # OTT-5.2: a card of M(hand) not yet revealed; DONE when it all scores
    return st.mhand[b, s] & ~st.dbits[b, s], DECLARE_DONE, 1 if st.done_ok[b] else 0


# 4 bits times this, the bytes' low bits kept: the 4 bits as 4 bool bytes (the shifted copies do not overlap)
_SPREAD, _LOW_BITS = np.uint64(0x204081), np.uint64(0x01010101)
assert NUM_ACTIONS == 68  # a mask is 17 words of 4 actions, the cards (0..61) and the extra actions in 2 words of bits


@njit(cache=True, nogil=True, inline="always")
def _legal_row(st, b, m, after_top, eldest_only):
    """``m`` := the legal actions of row ``b``'s seat to act (:func:`_legal_set` as a mask), written 4 actions a
    word (``_SPREAD``), from the actions as a 68-bit set (``lo``: 0..63, ``hi``: 64..)."""
    cards, extra, n_extra = _legal_set(st, b, after_top, eldest_only)
    more = ((_ONE << np.uint64(n_extra)) - _ONE) << np.uint64(extra - N) if n_extra else np.uint64(0)
    lo, hi = cards | (more << np.uint64(N)), more >> np.uint64(64 - N)
    w = m.view(np.uint32)
    for i in range(16):
        w[i] = (((lo >> np.uint64(4 * i)) & np.uint64(15)) * _SPREAD) & _LOW_BITS
    w[16] = (hi * _SPREAD) & _LOW_BITS


@njit(cache=True, nogil=True, inline="always")
def _uniform_row(st, b, after_top, eldest_only):
    """A uniformly random legal action of row ``b``'s seat to act, drawn from its legal sets
    (:func:`_legal_set`) exactly as ``kernels.uniform_legal`` draws from its mask: one
    ``np.random.randint(0, n)`` over the ``n`` legal actions, the ``k``-th in id order (the cards, ids below
    ``N``, before the extra actions), without writing the mask (the random playouts)."""
    cards, extra, n_extra = _legal_set(st, b, after_top, eldest_only)
    n = popcount(cards)
    k = np.random.randint(0, n + n_extra)
    if k >= n:
        return extra + k - n
    for _ in range(k):  # the k-th card: the lowest k bits cleared, then the lowest left
        cards &= cards - np.uint64(1)
    return popcount((cards & ~(cards - np.uint64(1))) - np.uint64(1))  # (the lowest card's id)


@njit(cache=True, nogil=True, _nrt=False)
def _masks_kernel(st, rows, mask, after_top, eldest_only):
    """``mask[b]`` := the legal actions of row ``b``'s seat to act, for ``b`` in ``rows``."""
    for b in rows:
        _legal_row(st, b, mask[b], after_top, eldest_only)


@njit(cache=True, nogil=True, _nrt=False)
def _encode_kernel(st, seats, out, with_obs, mask, with_mask, opt, cc, t, sparse, cols, vals, counts, no_cols, no_vals):
    """``out[b]`` := seat ``seats[b]``'s observation of row ``b`` (``OttocentoGame.observation``, :func:`_observe`),
    unless ``with_obs`` is false (``observe=False``: masks only); with ``sparse`` (``obs_format="sparse"``) its
    nonzero features into row ``b`` of ``cols`` / ``vals`` / ``counts`` instead (``no_cols``, ``no_vals``: empty
    rows, as ``out``'s for a sparse one). With ``with_mask``, ``mask[b]`` := the legal actions of the seat to act
    (:func:`_legal_row`)."""
    for b in range(len(seats)):
        s = seats[b]
        if s < 0:  # a row left out (a search's rollout encodes only the rows that choose)
            continue
        if sparse:
            finish(cols, vals, counts, b, _observe(cols[b], vals[b], no_vals, st, s, b, cc, opt, t))
        elif with_obs:
            _observe(no_cols, no_vals, out[b], st, s, b, cc, opt, t)
        if with_mask:
            _legal_row(st, b, mask[b], opt.after_top, opt.eldest_only)


@njit(cache=True, nogil=True, _nrt=False)
def _deal_rest(st, b):
    """``_deal_rest`` of row ``b``: rounds 2-3 from the same deck, then the dealer takes the last 2
    (OTT-2.1, 2.2); the dealer discards next (OTT-4.1)."""
    d = st.dealer[b]
    _deal(st, b, _FIRST_ROUND, N)
    for q in range(PLAYERS):
        st.hand_sizes[b, q] = MAX_HELD if q == d else HAND_SIZE
    st.phase[b] = _DISCARD
    st.current[b] = d


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _deal(st, b, lo, hi):
    """Deck positions ``lo:hi`` of row ``b`` to their seats' hands (OTT-2.1, 2.2: ``DEAL_TO``)."""
    for j in range(lo, hi):
        st.hbits[b, (st.dealer[b] + DEAL_TO[j]) % PLAYERS] |= _BIT[st.deck[b, j]]


@njit(cache=True, nogil=True, _nrt=False)
def _start_hand_kernel(st, rows, dealers, decks, shuffle, a_monte_off):
    """``start_hand(dealer)`` of ``rows`` (:func:`_start_hand_row`) with their ``decks``, each first shuffled
    from the row's own stream with ``shuffle`` (``rng.permutation(62)``: ``TrickGame.shuffled_pack``)."""
    for i in range(len(rows)):
        if shuffle:
            permutation(st.rng_state, st.rng_inc, st.rng_half, rows[i], decks[i])
        _start_hand_row(st, rows[i], dealers[i], decks[i], a_monte_off)


@njit(cache=True, nogil=True, _nrt=False)
def _start_hand_row(st, b, d, deck, a_monte_off):
    """``start_hand(d)`` of row ``b`` with the shuffled ``deck``: a new hand's state, the first round of 5
    (OTT-2.1) and the a monte question (OTT-2.3) or, with ``a_monte="off"``, the rest."""
    hbits = st.hbits
    st.dealer[b] = d
    for q in range(PLAYERS):  # (element loops: slice assignments cost seconds of compile time)
        st.hand_sizes[b, q] = PACKET
        st.declared_points[b, q] = 0
        hbits[b, q] = st.dbits[b, q] = st.pbits[b, q] = st.xbits[b, q] = st.mhand[b, q] = 0
        st.said[b, q, 0] = st.said[b, q, 1] = False
        for u in range(5):
            st.voids[b, q, u] = False
    for p in range(NUM_SIGNALS):
        st.sbits[b, p] = 0
    st.wbits[b, 0] = st.wbits[b, 1] = 0
    for j in range(N):
        st.deck[b, j] = deck[j]
    _deal(st, b, 0, _FIRST_ROUND)  # OTT-2.1: the first round
    st.phase[b] = _A_MONTE
    st.current[b] = st.leader[b] = (d + 1) % PLAYERS  # eldest
    st.pending[b], st.excuse_owner[b], st.excuse_trick_winner[b] = -1, -1, -1
    st.tricks_won[b, 0] = st.tricks_won[b, 1] = 0
    st.trick_len[b], st.ntricks[b], st.nsig[b] = 0, 0, 0
    st.led[b], st.paid[b] = NO_SUIT, -1
    _clear_logs(st, b)
    st.done_ok[b] = True
    if a_monte_off:
        _deal_rest(st, b)


@njit(cache=True, nogil=True, _nrt=False)
def _clear_logs(st, b):
    """A new hand's logs of row ``b`` start empty (a row's state is the same however it got there): the
    trick and its log, the signals, the tricks the cards were played in."""
    for q in range(PLAYERS):
        st.trick_cards[b, q] = 0
    for j in range(_TRICKS):
        st.trick_lead[b, j] = st.trick_winners[b, j] = 0
        for q in range(PLAYERS):
            st.trick_log[b, j, q] = 0
    for j in range(_MAX_SIGNALS):
        for q in range(3):
            st.sig_log[b, j, q] = 0
    for c in range(N):
        st.card_trick[b, c] = 0


@njit(cache=True, nogil=True, _nrt=False)
def _matto_row(st, b, piles):
    """The end of row ``b``'s played-out hand, part 1 (``OttocentoGame.team_piles``): ``piles[t]`` := team
    ``t``'s cards won in tricks (bit sets), with the Matto surrendered to the other team when its owner's
    team took no trick (OTT-7.4). Returns the team that must give a card for the Matto (OTT-7.3: it took
    tricks but not the Matto's), else -1."""
    piles[0], piles[1] = st.wbits[b, 0], st.wbits[b, 1]
    owner = st.excuse_owner[b]
    if owner < 0:
        return -1
    mine = owner % 2
    if st.tricks_won[b, mine] == 0:  # OTT-7.4: surrendered
        piles[mine] &= ~_MATTO_BIT
        piles[1 - mine] |= _MATTO_BIT
        return -1
    return mine if st.excuse_trick_winner[b] % 2 != mine else -1  # OTT-7.3: pays a low card


@njit(cache=True, nogil=True, _nrt=False)
def _count_row(st, b, piles, paid, r):
    """The end of row ``b``'s played-out hand, part 2 (after the Matto payment, ``paid``: the card or -1), into
    its record ``r`` (``_RECORD``; the combinations and the scores follow in :func:`_count_hand`): the Matto's
    team, the dealer's discards to a team (OTT-4.3: his own if it took a trick, else the other), each pile's
    size and card points (B.3.2: the values less one per pair), the team of the last trick (B.3.5), the
    declared points (OTT-5.3) per player and team."""
    tw, dp = st.tricks_won, st.declared_points
    r[0], r[_R_HAND], r[_R_DEALER], r[_R_PAID] = _PLAYED_OUT, st.hands_played[b], st.dealer[b], paid
    r[_R_MATTO_TEAM] = -1
    if st.excuse_owner[b] >= 0:
        r[_R_MATTO_TEAM] = 0 if piles[0] & _MATTO_BIT else 1
    d = st.dealer[b]
    dteam = d % 2
    to = dteam if tw[b, dteam] > 0 else 1 - dteam
    r[_R_TO] = to
    x, j = st.xbits[b, d], 0
    piles[to] |= x
    while x:  # the discards, in id order
        r[_R_DISCARDS + j] = card_index(x)
        x, j = x & (x - _ONE), j + 1
    for q in range(2):
        x, n, v = piles[q], popcount(piles[q]), 0
        while x:  # B.3.2
            v += _VALUE[card_index(x)]
            x &= x - _ONE
        r[_R_SIZES + q] = n
        r[_R_CARDS + q] = v - n // 2
        r[_R_TW + q] = tw[b, q]
        r[_R_DECLARED_TEAM + q] = dp[b, q] + dp[b, q + 2]
    for q in range(PLAYERS):
        r[_R_DECLARED + q] = dp[b, q]
    r[_R_LAST] = st.trick_winners[b, _TRICKS - 1] % 2


@njit(cache=True, nogil=True, _nrt=False)
def _matto_payment(pile, mdc, smn, t):
    """OTT-7.3, ``rules.ottocento.matto_payments`` of one pile (bits): of its cards of the lowest value
    (O-9), never the Matto, the one whose loss costs the pile the fewest B.5 points
    (``combos.cheapest_card``), ties broken by ``PAYMENT_RANK``; -1 for none."""
    cand, low, lowest = pile & ~_MATTO_BIT, 1 << 30, np.uint64(0)
    for c in range(N):
        if cand & _BIT[c] and _VALUE[c] <= low:
            lowest = (lowest if _VALUE[c] == low else np.uint64(0)) | _BIT[c]
            low = _VALUE[c]
    return cheapest_card(pile, lowest, PAYMENT_RANK, mdc, smn, t)


@njit(cache=True, nogil=True, _nrt=False)
def _count_hand(st, b, mdc, smn, t, piles, r):
    """The end of row ``b``'s played-out hand (C.9) into its record ``r`` (``_RECORD``) and the team piles
    ``piles`` (uint64[2]): the Matto (OTT-7.4, 7.3: :func:`_matto_row`, :func:`_matto_payment`; the card paid is
    public, H.3), the rest of the count (:func:`_count_row`), each pile's combinations (B.5), the hand's scores
    (C.9; B.3.5: the last trick), added to the game's (the declarations are in already, OTT-6.1)."""
    for j in range(_RECORD_SIZE):
        r[j] = 0
    team = _matto_row(st, b, piles)
    paid = -1
    if team >= 0:
        card = _matto_payment(piles[team], mdc, smn, t)
        if card >= 0:
            piles[team] &= ~_BIT[card]
            piles[1 - team] |= _BIT[card]
            paid = st.paid[b] = card
    _count_row(st, b, piles, paid, r)
    for q in range(2):
        combo, _ = evaluate_bits(piles[q], mdc, smn, t)
        r[_R_COMBO + q] = combo
        r[_R_SCORES + q] = r[_R_DECLARED_TEAM + q] + combo + r[_R_CARDS + q]
    r[_R_SCORES + r[_R_LAST]] += LAST_TRICK_BONUS
    for q in range(2):
        st.scores[b, q] += r[_R_SCORES + q] - r[_R_DECLARED_TEAM + q]


@njit(cache=True, nogil=True)
def _end_hands_kernel(st, rows, mdc, smn, t, piles):
    """The end of the played-out hands of ``rows`` (:func:`_count_hand`; ``piles``: uint64[k, 2], their final
    team piles), their records returned as int64[k, _RECORD_SIZE] (``OttocentoRows.count_hands``)."""
    rec = np.zeros((len(rows), _RECORD_SIZE), dtype=np.int64)
    for i in range(len(rows)):
        _count_hand(st, rows[i], mdc, smn, t, piles[i], rec[i])
    return rec


@njit(cache=True, nogil=True, _nrt=False)
def _m_hand(x, mdc, smn, t):
    """M(hand) of the hand ``x`` (a card set; see the module doc): the fixed point ``S -> S & scoring_cards(S)``
    from ``S = x`` (``evaluate_bits``: B.5 with the game's flags)."""
    while True:
        _, scoring = evaluate_bits(x, mdc, smn, t)
        if x & scoring == x:
            return x
        x &= scoring


@njit(cache=True, nogil=True, _nrt=False)
def _declarable_row(st, b, mdc, smn, t):
    """Row ``b`` in the declarations (OTT-5.1): M(hand) of the four hands (``declarable_cards``: the fixed point
    ``S -> S & scoring_cards(S)``, :func:`_m_hand`; the hands do not change while the players declare): the
    declarable set of each seat in turn (OTT-5.2)."""
    for q in range(PLAYERS):
        st.mhand[b, q] = _m_hand(st.hbits[b, q], mdc, smn, t)


@njit(cache=True, nogil=True, _nrt=False)
def _declarable_rows(st, rows, mdc, smn, t):
    """:func:`_declarable_row` of ``rows`` (``OttocentoRows.reload_declarable``)."""
    for b in rows:
        _declarable_row(st, b, mdc, smn, t)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _playout_value(st, b, kind, opt, t, piles, rec, team):
    """A playout's hand ended in row ``b``: recorded as the step records it (:func:`_record_hand`), the row left in
    ``GAME_OVER`` (no kernel steps it); returns team ``team``'s hand score minus the other team's."""
    _record_hand(st, b, kind, opt.mdc, opt.smn, t, piles, rec)
    st.phase[b] = _GAME_OVER
    return rec[_R_SCORES + team] - rec[_R_SCORES + 1 - team]


_MAX_HAND_MOVES = 1000  # more than any hand's actions (4 a monte answers, 2 discards, the declarations, 60 cards
#                         and their signals): a rollout's guard


@njit(cache=True, nogil=True, _nrt=False)
def _random_playouts(st, acts, opt, t, seed, teams, values, log, rec, piles):
    """``OttocentoRows.random_playouts``: row ``b`` takes ``acts[b]``, then the engine's own step (:func:`_act`)
    with uniformly random legal actions (:func:`_uniform_row`, in the same pass over the rows) until its hand
    ends, recorded as the step records it (:func:`_record_hand`); then it waits in ``GAME_OVER``. ``acts``,
    ``rec`` and ``piles`` are scratch. Without reference counting (``_nrt=False``, as the step kernel): with
    it, each read of one of the state's arrays in the inlined step cost two atomic count updates, and a
    rollout five times the time (issue #33)."""
    np.random.seed(seed)
    B = acts.shape[0]
    n_live = B
    for i in range(_MAX_HAND_MOVES):
        for b in range(B):  # (the row's next action drawn in the same pass, while it is in cache)
            if st.phase[b] == _GAME_OVER:
                continue
            if i < log.shape[1]:
                log[b, i] = acts[b]
            kind = _act(st, b, acts[b], opt, t)
            if kind == _NO_END:
                acts[b] = _uniform_row(st, b, opt.after_top, opt.eldest_only)
                continue
            values[b] = _playout_value(st, b, kind, opt, t, piles, rec, teams[b])
            n_live -= 1
        if n_live == 0:
            return
    raise RuntimeError("a random playout did not reach the end of its hand")


# --- the hands' records: a list of ints each (written in the step by ``_record_hand``); the history dicts
# (``OttocentoGame.history``, the batch's ``deal_results``, ``final_info``, ``games``) are built by ``_result``.


def _result(rec: list[int]) -> dict[str, Any]:
    """The history entry (``OttocentoGame.history``) of the hand recorded as ``rec``."""
    kind, h, d, s0, s1 = rec[:5]
    if kind == _THROWN_IN:  # OTT-3.2
        return {"hand": h, "dealer": d, "scores": [s0, s1], "thrown_in": True}
    if kind == _WON_AT_DECLARATIONS:  # OTT-6.1
        return {"hand": h, "dealer": d, "scores": [s0, s1], "declared": rec[_WON_DECLARED:_WON_DECLARED + PLAYERS],
                "won_at_declarations": True,
                "thrown_in": False}
    result = {f: rec[at] if w == 1 else rec[at:at + w] for (f, w), at in zip(_RECORD[1:], _RECORD_AT_LIST[1:])}
    result["discards"] = [c for c in result["discards"] if c >= 0]  # (-1: blanked, ``_record``)
    result["thrown_in"] = False
    return result


def _record(result: dict[str, Any]) -> list[int]:
    """The record of the history entry ``result`` (the inverse of :func:`_result`, for
    ``load_games``). A world drawn by ``tarot_env.sampler`` may hold a hand whose hidden discards are
    blanked (``"discards": []``): they are kept as -1 and given back as the empty list."""
    try:
        h, d, (s0, s1) = int(result["hand"]), int(result["dealer"]), (int(x) for x in result["scores"])
        if result.get("thrown_in"):  # OTT-3.2
            return [_THROWN_IN, h, d, s0, s1]
        if result.get("won_at_declarations"):  # OTT-6.1
            return [_WON_AT_DECLARATIONS, h, d, s0, s1, *(int(x) for x in result["declared"])]
        rec = [_PLAYED_OUT]
        for f, w in _RECORD[1:]:
            v = result[f]
            if f == "discards":
                v = [int(c) for c in v] + [-1] * (w - len(v))
            rec += [int(v)] if w == 1 else [int(x) for x in v]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not an Ottocento hand record (a history entry of OttocentoGame): {result!r}") from e
    if len(rec) != _RECORD_SIZE:
        raise ValueError(f"not an Ottocento hand record (a history entry of OttocentoGame): {result!r}")
    return rec


# --- the declared state of B games ----------------------------------------------------------------
# Each field of :class:`State`: its dtype, its shape past the batch axis and a new row's value
# (``OttocentoRows._alloc``); then each row's random stream (numpy's PCG64: ``tarot_env.vector.pcg``).
_FIELDS = (
    ("hbits", np.uint64, (PLAYERS,), 0),  # the hands, as card sets (for ``kernels.legal_play``)
    ("pbits", np.uint64, (PLAYERS,), 0),  # the cards each seat played this hand (the trick's: ``trick_cards``)
    ("wbits", np.uint64, (2,), 0),  # the cards each team took in tricks (B.4.5: the Matto to its owner's)
    ("dbits", np.uint64, (PLAYERS,), 0),  # the cards each seat declared, public, still in the hand (OTT-5.2)
    ("xbits", np.uint64, (PLAYERS,), 0),  # the discards: the dealer's only, hidden (OTT-4.1)
    ("mhand", np.uint64, (PLAYERS,), 0),  # each seat's M(hand), from the second discard (OTT-5.1, 5.5)
    ("sbits", np.uint64, (NUM_SIGNALS,), 0),  # the cards played with each signal this hand (OTT-8.2, H.1.1)
    ("said", bool, (PLAYERS, 2), 0),  # OTT-3: said a monte, said play on (public)
    ("voids", bool, (PLAYERS, 5), 0),  # H.1.1: seat x suit shown lacking (B.4.1-B.4.2)
    ("paid", np.int64, (), -1),  # the card paid for the Matto (OTT-7.3, public at the hand's end), or -1
    ("current", np.int64, (), 0),  # the seat to act
    ("dealer", np.int64, (), 0),
    ("leader", np.int64, (), 0),  # the seat that led the current trick
    ("pending", np.int64, (), -1),  # the pending signal, or -1 (OTT-8)
    ("phase", np.int64, (), 0),
    ("hands_played", np.int64, (), 0),  # thrown-in hands included (OTT-10.3)
    ("hand_sizes", np.int64, (PLAYERS,), 0),
    ("declared_points", np.int64, (PLAYERS,), 0),  # OTT-5.3
    ("tricks_won", np.int64, (2,), 0),  # by team
    ("scores", np.int64, (2,), 0),  # the game's cumulative scores
    ("excuse_owner", np.int64, (), -1),  # the seat that played the Matto this hand, or -1
    ("excuse_trick_winner", np.int64, (), -1),  # the winner of its trick, or -1
    ("trick_len", np.int64, (), 0),  # cards in the current trick
    ("trick_cards", np.int64, (PLAYERS,), 0),  # its cards in play order (from the leader)
    ("led", np.int64, (), NO_SUIT),  # its suit led (B.4.3), or NO_SUIT
    ("ntricks", np.int64, (), 0),  # tricks closed this hand
    ("trick_log", np.int64, (_TRICKS, PLAYERS), 0),  # the closed tricks' cards in play order
    ("trick_lead", np.int64, (_TRICKS,), 0),  # ... their leaders
    ("trick_winners", np.int64, (_TRICKS,), 0),  # ... their winners
    ("nsig", np.int64, (), 0),  # signals given this hand
    ("sig_log", np.int64, (_MAX_SIGNALS, 3), 0),  # (seat, card, signal)
    ("card_trick", np.int64, (N,), 0),  # t + 1 once played in trick t (H.1.1)
    ("deck", np.int64, (N,), 0),  # the hand's shuffled deck
    ("done_ok", bool, (), 1),  # DECLARE_DONE legal now
)
# The arrays of ``B`` Ottocento games (batch axis first), as the kernels take them (``rows.s``).
State = NamedTuple("State", [(f, np.ndarray) for f, *_ in _FIELDS]
                   + [(f, np.ndarray) for f in ("rng_state", "rng_inc", "rng_half")])


def _signal_table(sbits: np.ndarray, pbits: np.ndarray) -> np.ndarray:
    """bool[..., 4, 3, 6]: seat x signal x suit of its card (OTT-8.2) from the cards of each signal (``sbits``,
    uint64[..., 3]) and each seat's played cards (``pbits``, uint64[..., 4]): the kernels' ``_signal_cells``."""
    return sbits[..., None, :, None] & pbits[..., :, None, None] & _SUIT_BITS[:6] != 0


def _declarable(r: OttocentoRows) -> np.ndarray:
    """uint64[B]: M(hand) of the seat declaring now (OTT-5.2), none outside the declarations."""
    m = r.mhand[np.arange(len(r.phase)), r.current]
    return np.where(r.phase == _DECLARE, m, np.uint64(0))


def _one_hot(i: np.ndarray) -> np.ndarray:
    return (i[:, None] == np.arange(N)) & (i[:, None] >= 0)


# every per-card field of a row as bools (``OttocentoRows.field``, the one-row game's views): from the card sets
FIELDS = {"hands": lambda r: unpack_cards(r.hbits, N), "played": lambda r: unpack_cards(r.pbits, N),
          "trick_by": lambda r: unpack_cards(r.trick_bits(), N), "won": lambda r: unpack_cards(r.wbits, N),
          "discards": lambda r: unpack_cards(r.xbits, N), "declared": lambda r: unpack_cards(r.dbits, N),
          "signal_table": lambda r: _signal_table(r.sbits, r.pbits), "matto_paid": lambda r: _one_hot(r.paid),
          "a_monte_said": lambda r: r.said.copy(), "shown_void": lambda r: r.voids.copy(),
          "signal_card": lambda r: unpack_cards(r.sbits, N).transpose(0, 2, 1).copy(),
          "declarable": lambda r: unpack_cards(_declarable(r), N)}
# the state vector's card sections (STATE, absolute seats) and the field each is
_STATE_FIELDS = (("hands", "hands"), ("discards", "discards"), ("declared", "declared"), ("played", "played"),
                 ("trick", "trick_by"), ("won", "won"), ("signals", "signal_table"), ("matto_paid", "matto_paid"),
                 ("a_monte", "a_monte_said"), ("shown_void", "shown_void"), ("signal_cards", "signal_card"))


def _old_row(row: dict) -> dict:
    """The row of a state saved before 2026-12-05 (``OttocentoGame.to_dict()["row"]``) as it is now: its per-card
    cells were one bool ``blocks`` (discards[4, 62], signal_table[4, 3, 6], matto_paid[62], a_monte_said[4, 2],
    shown_void[4, 5], signal_card[62, 3], in this order), M(hand) was kept as every seat's ``declarable4`` (bool)
    and the declarer's ``mbits`` (and before 2026-12-04's fifth session as 62 bools ``declarable`` too), besides
    ``ptf`` (``_PLAYED_TRICK[card_trick]``) and ``declared_added``. What was kept twice must agree (OTT-5.5)."""
    row = dict(row)
    try:
        blocks, old_m = np.asarray(row.pop("blocks"), dtype=bool), int(row.pop("mbits"))
        mhand, declarable = pack_cards(np.asarray(row.pop("declarable4"), dtype=bool)), row.pop("declarable", None)
        del row["ptf"], row["declared_added"]
        disc, table, paid, said, voids, sigc = np.split(blocks, np.cumsum([4 * N, 72, N, 8, 20, 3 * N]))[:6]
        row.update(xbits=pack_cards(disc.reshape(PLAYERS, N)).tolist(), mhand=mhand.tolist(),
                   sbits=pack_cards(sigc.reshape(N, NUM_SIGNALS).T).tolist(), said=said.reshape(PLAYERS, 2).tolist(),
                   voids=voids.reshape(PLAYERS, 5).tolist(), paid=int(np.argmax(paid)) if paid.any() else -1)
        declaring = int(row["phase"]) == _DECLARE and int(mhand[int(row["current"])]) or 0
        table_ok = np.array_equal(_signal_table(np.array(row["sbits"], dtype=np.uint64),
                                                np.array(row["pbits"], dtype=np.uint64)), table.reshape(PLAYERS, 3, 6))
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise ValueError(f"not an ottocento state's row (of 2026-12-04 or before): {e!r}") from None
    if declarable is not None and not np.array_equal(np.asarray(declarable, dtype=bool), unpack_cards(
            np.uint64(old_m), N)):
        raise ValueError("an ottocento state's 'declarable' disagrees with its 'mbits' (M(hand), OTT-5.5)")
    if old_m != declaring or not table_ok:
        raise ValueError("an ottocento state's 'mbits' disagrees with its 'declarable4' (M(hand), OTT-5.5), or its "
                         "signal table with its signal cards (OTT-8.2)")
    return row


_NO_SPARSE = (np.zeros((0, 0), dtype=np.int32), np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.int32))
_NO_ROW = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))  # (_encode_kernel's no_cols, no_vals)
_NO_MASK = np.zeros((0, NUM_ACTIONS), dtype=bool)  # OttocentoRows.act without the next masks
ROW0 = np.zeros(1, dtype=np.int64)  # the row of a one-game state (writable: a read-only array is another numba
# type, and the kernels would be compiled for both)


class OttocentoRows(Rows):
    """The declared state of ``B`` Ottocento games: one array per field of :class:`State` (batch axis
    first) as attributes of the same names (``s``: the kernels' tuple of them; ``streams``: the rows'
    random streams), and the rules' bookkeeping over rows, written once: ``OttocentoGame`` holds one
    row, the batched engine ``OttocentoVec`` is one (for ``B`` rows). ``config`` is the game's options."""

    one_row = False  # OttocentoGame's row: its kernel calls skip the dispatcher once typed (``row_call``)
    State = State
    ARRAYS = State._fields  # (the streams are State fields)
    SHARED = ("config", "one_row")

    def __init__(self, num_rows: int, config: OttocentoConfig | None = None):
        self.config = config if config is not None else OttocentoConfig()
        self._alloc(num_rows)

    def _alloc(self, B: int) -> None:
        for f, dtype, shape, first in _FIELDS:
            setattr(self, f, np.full((B,) + shape, first, dtype=dtype))
        self.rng_state, self.rng_inc, self.rng_half = stream_arrays(B)
        self.step_out = StepOut.empty(B)
        self._bind()

    def _extras_from(self, old: OttocentoRows, rows_of, index: np.ndarray | None) -> None:
        self.step_out = StepOut.empty(len(self.phase))  # (the step's buffers: each state its own)

    # --- dealing (OTT-2) -------------------------------------------------------------------------------
    def next_hands(self, r: np.ndarray, dealers: np.ndarray) -> None:
        """``start_hand(dealer)`` of rows ``r``, each row's deck ``rng.permutation(62)`` of its own stream."""
        self.deal(r, dealers, np.empty((len(r), N), dtype=np.int64), shuffle=True)

    def deal(self, r: np.ndarray, dealers: np.ndarray, decks: np.ndarray, shuffle: bool = False) -> None:
        """A new hand in rows ``r`` from ``decks`` (with ``shuffle``, shuffled first): the first round of 5
        (OTT-2.1) and the a monte question (OTT-2.3) or, with ``a_monte="off"``, the rest (``_start_hand_kernel``)."""
        _start_hand_kernel(self.s, np.ascontiguousarray(r, dtype=np.int64),
                           np.ascontiguousarray(dealers, dtype=np.int64), np.ascontiguousarray(decks, dtype=np.int64),
                           shuffle, self.config.a_monte == "off")

    def place_cards(self, b: int, hands: np.ndarray | None = None, discards: np.ndarray | None = None,
                    deck: np.ndarray | None = None) -> None:
        """Row ``b``'s hands (``bool[4, 62]``), discards (``bool[4, 62]``) and deck written without a
        rule (``OttocentoGame.place_cards``); the hand sizes and bit sets follow, and in the
        declarations every seat's M(hand) (OTT-5.1: the hands do not change while the players declare)."""
        if discards is not None:
            self.xbits[b] = pack_cards(np.asarray(discards, dtype=bool))
        if hands is not None:
            self.hbits[b] = pack_cards(np.asarray(hands, dtype=bool))
            self.hand_sizes[b] = np.asarray(hands, dtype=bool).sum(axis=1)
        if deck is not None:
            self.deck[b] = deck
        if self.phase[b] == Phase.DECLARE:
            self.reload_declarable(np.array([b]))

    def reload_declarable(self, r: np.ndarray) -> None:
        """Rows ``r`` in the declarations: every seat's M(hand) and the declarer's (:func:`_declarable_row`)."""
        opt = self.step_options(COUNT_ONLY)
        _declarable_rows(self.s, np.ascontiguousarray(r, dtype=np.int64), opt.mdc, opt.smn, combos.combo_tables())

    # --- one action per row, and what follows it -------------------------------------------------------
    def step_options(self, after: int) -> StepOptions:
        """The options :func:`_step_kernel` reads, and what follows a hand's end (``after``: ``COUNT_ONLY``,
        ``ONE_GAME`` or ``NEXT_GAME``); kept for the config they were made from (``_step_options``)."""
        c, kept = self.config, self.__dict__.get("_step_options")
        if kept is None or kept[0] is not c:
            kept = self._step_options = (c, [StepOptions(
                c.a_monte == "stop_at_no", c.a_monte == "off", bool(c.moors_double_count), int(c.suit_min_natural),
                int(c.target_score), int(c.max_hands), a, c.ott_signal_timing == "after_top_card_played",
                c.ott_signal_players == "eldest_only") for a in (COUNT_ONLY, ONE_GAME, NEXT_GAME)])
        return kept[1][after]

    def act(self, actions: np.ndarray, after: int, mask: np.ndarray | None = None) -> int:
        """Every row's action (int64[B], C-contiguous) and, in the rows whose hand ended, its record and what
        ``after`` says follows (:func:`_step_kernel`, one compiled call): ``COUNT_ONLY`` nothing;
        ``ONE_GAME`` (``OttocentoGame``) the game over (OTT-6.1, OTT-10) or the next hand (OTT-1.3);
        ``NEXT_GAME`` (the batch) also a new game in the rows whose game is over; with ``mask`` (bool[B,
        NUM_ACTIONS]) every row's next legal actions, written in the same pass; a row whose action is negative
        is left as it is (no action, no mask: a search's rollout, ``agents/players/pimc.py``). Returns how many
        hands ended: ``step_out``'s ``[:n]`` (their rows, records, the games' winners, ends as draws and scores)."""
        opt = self.step_options(after)
        args = (self.s, actions, opt, combos.combo_tables(), self.step_out, _NO_MASK if mask is None else mask)
        n, n_redeal = row_call(_step_kernel, *args) if self.one_row else _step_kernel(*args)
        if n_redeal:  # new games whose seed is below 2**32 (one in 2**31): numpy's own seeding, then the deal
            out = self.step_out
            r = out.redeal[:n_redeal].copy()
            self.streams.reseed(r, out.seeds[:n_redeal].copy())
            self.next_hands(r, (self.dealer[r] + 1) % PLAYERS)
            if mask is not None:
                _masks_kernel(self.s, r, mask, opt.after_top, opt.eldest_only)
        return n

    def count_hands(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``_end_hands_kernel`` of rows ``r``: their records (``_RECORD``) and final piles (bit sets)."""
        piles = np.empty((len(r), 2), dtype=np.uint64)
        opt = self.step_options(COUNT_ONLY)
        rec = _end_hands_kernel(self.s, r, opt.mdc, opt.smn, combos.combo_tables(), piles)
        return rec, piles

    # --- a search's random rollouts ----------------------------------------------------------------------
    def check_playouts(self, who: str, first: np.ndarray, teams: np.ndarray, config: OttocentoConfig) -> int:
        """The number of rows; ``ValueError`` (``who``: the method) unless they play ``config``, are not over and
        take one first action and team each (the random and the heuristic playouts)."""
        B = len(self.phase)
        if config != self.config:
            raise ValueError(f"{who}: these rows play {self.config}, not {config}")
        if len(first) != B or len(teams) != B or (self.phase == Phase.GAME_OVER).any():
            raise ValueError(f"{who} needs one first action and team per row ({B} rows: got "
                             f"{len(first)}, {len(teams)}) and rows whose game is not over")
        return B

    def random_playouts(self, first: np.ndarray, teams: np.ndarray, config: OttocentoConfig, seed: int,
                        log: np.ndarray | None = None) -> np.ndarray:
        """float64[B]: each row takes ``first[b]`` and plays uniformly at random to the end of its hand
        (:func:`_random_playouts`: the engine's step in compiled code); ``teams[b]``'s hand score minus the
        other team's as the step records the hand: played out (C.9), thrown in (0, OTT-3.2), won at the
        declarations (OTT-6.1). The rows play ``config`` (their own). ``log`` (int64[B, L], optional): each
        row's first ``L`` actions, ``first[b]`` included (-1 after the hand's last). Changes the rows (each
        ends in ``GAME_OVER``, which no kernel steps)."""
        B = self.check_playouts("random_playouts", first, teams, config)
        log = np.zeros((B, 0), dtype=np.int64) if log is None else log
        log[:] = -1
        values = np.zeros(B)
        _random_playouts(self.s, np.array(first, dtype=np.int64), self.step_options(COUNT_ONLY),
                         combos.combo_tables(), seed,
                         np.ascontiguousarray(teams, dtype=np.int64), values, log,
                         np.zeros(_RECORD_SIZE, dtype=np.int64), np.zeros(2, dtype=np.uint64))
        return values

    # --- encoders ------------------------------------------------------------------------------------------
    def encode(self, seats: np.ndarray, out: np.ndarray, with_obs: bool, mask: np.ndarray, with_mask: bool,
               cc: ComboCache, sparse: tuple | None = None) -> None:
        """Each row's observation of seat ``seats[b]`` in sparse form into ``sparse`` (``(cols, vals, counts)``,
        ``obs_format="sparse"``) or, with ``with_obs``, into ``out``; its legal mask into ``mask`` (with
        ``with_mask``): :func:`_encode_kernel`; ``cc`` caches the v2 features' piles."""
        cols, vals, counts = sparse if sparse is not None else _NO_SPARSE
        args = (self.s, seats, out, with_obs, mask, with_mask, self.step_options(COUNT_ONLY), cc, combos.combo_tables(),
                sparse is not None, cols, vals, counts, _NO_ROW[0], _NO_ROW[1])
        if self.one_row:
            row_call(_encode_kernel, *args)
        else:
            _encode_kernel(*args)

    def trick_bits(self) -> np.ndarray:
        """uint64[B, 4]: every row's current trick by seat, as card sets (from its cards in play order)."""
        trick = np.zeros((len(self.phase), PLAYERS), dtype=np.uint64)
        for i in range(PLAYERS):
            on = np.flatnonzero(self.trick_len > i)
            trick[on, (self.leader[on] + i) % PLAYERS] = _BIT[self.trick_cards[on, i]]
        return trick

    def field(self, name: str) -> np.ndarray:
        """bool[B, ...]: every row's per-card field ``name`` (``FIELDS``), a new array; another name: that array."""
        return FIELDS[name](self) if name in FIELDS else getattr(self, name)

    def state_into(self, out: np.ndarray) -> None:
        """``out`` (float32[B, STATE]) := every row's full state (absolute seats; the seat to act marked)."""
        ar = np.arange(len(out))
        out[:] = 0.0
        for section, f in _STATE_FIELDS:
            out[:, getattr(STATE, section)] = self.field(f).reshape(len(out), -1)
        out[:, STATE.played_trick] = _PLAYED_TRICK[self.card_trick]
        pend = self.pending
        sig = np.flatnonzero(pend >= 0)
        out[sig, STATE.pending_signal.start + pend[sig]] = 1.0
        out[ar, STATE.dealer.start + self.dealer] = 1.0
        out[ar, STATE.current.start + self.current] = 1.0
        out[ar, STATE.leader.start + self.leader] = 1.0
        out[:, STATE.tricks_won] = self.tricks_won / HAND_SIZE
        out[:, STATE.declared_points] = self.declared_points / DECLARED_SCALE
        out[:, STATE.scores] = self.scores / self.config.target_score
        k, h = self.config.max_hands, STATE.hands_played.start
        out[:, h], out[:, h + 1] = self.hands_played / k, (k - self.hands_played) / k
        out[ar, STATE.phase.start + self.phase] = 1.0


OttocentoGame.Rows = OttocentoRows  # (declared after the game)
