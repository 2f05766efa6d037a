"""Ottocento: the rules (RULES.md Part C, with Part B), as a PettingZoo-free rules object.

Four players in fixed partnerships ``{0, 2}`` and ``{1, 3}`` (OTT-1.1) play the 62-card Bolognese
pack (B.1) until a team reaches 800 (OTT-10). Every hand goes through these phases:

``A_MONTE``  the first round of 5 cards is dealt (OTT-2.1, 2.3); eldest first, each player answers
             *a monte* or *play on* (OTT-3.1). If all four say *a monte*, the hand is thrown in with
             no score and the deal passes (OTT-3.2, OTT-1.3); otherwise rounds 2–3 are dealt from the
             same shuffled deck and the dealer takes the last 2 cards (OTT-2.1, 2.2). By default the
             asking stops at the first "play on" (the [DECISION] of OTT-3.2; option ``a_monte``).
``DISCARD``  the dealer lays 2 of his 17 cards face down, one decision per card; 5-point cards are
             never legal (OTT-4.1, 4.2). The discards are hidden from the other three players.
``DECLARE``  eldest first, the dealer last (OTT-5.1), each player lays face up any subset of his hand
             whose every card counts in a scoring combination (OTT-5.2, B.5), one card per decision,
             then ``DECLARE_DONE``. Declared cards are public and stay in the hand. The points
             (``combo_points`` of that player's declared set, OTT-5.3) go to the team and into the
             cumulative score at once; a team at 800 or more wins there (OTT-6.1).
``PLAY``     eldest leads 15 tricks (OTT-7.1) under follow / trump / Matto (B.4, OTT-7.2); an
             eligible player may attach one public signal to a card (OTT-8).
``GAME_OVER``

At the end of the hand the Matto and the discards are settled (OTT-7.3, 7.4, 4.3) and each team
scores declarations + ``combo_points(pile)`` + card points + 6 for the last trick (C.9).

The declaration encoding (OTT-5.5 [DECISION]: an equivalent of "any subset", one card at a time)
----------------------------------------------------------------------------------------------
A set is *fully scoring* when it scores and every card of it counts in a scoring combination
(``combos.is_scoring_declaration``). Adding cards never stops a card from counting (chains only get
longer, families only fuller, the contatori count as soon as any sequence does), so the union of two
fully scoring sets is fully scoring, and a hand ``H`` has one largest fully scoring subset
``M(H)``: the fixed point of ``S -> S ∩ scoring_cards(S)`` from ``S = H``. Hence a revealed set ``R``
can still be completed to a legal declaration exactly when ``R ⊆ M(H)``:

* a reveal (card id) is legal for every card of ``M(H)`` not yet revealed;
* ``DECLARE_DONE`` is legal when nothing is revealed (declare nothing) or the revealed set is fully
  scoring.

Every fully scoring subset of the hand is reachable, every illegal one is masked, and there is never
a dead end (reveal the rest of ``M(H)``). The tests check this exhaustively on small hands.

Decisions taken here beyond RULES.md (documented in the env page too)
---------------------------------------------------------------------
* *A monte* asking: ``a_monte="stop_at_no"`` (default) stops at the first "play on"; ``"ask_all"``
  asks all four; ``"off"`` skips the question. Each answer is public.
* The Matto payment (OTT-7.3, O-9): the owner's team gives, from its cards won in tricks (the dealer's
  discards join a pile only afterwards, OTT-4.3), one of its cards of value 1, else of its lowest
  value: the one whose loss costs that pile the fewest combination points (B.5, with the game's
  flags; ``matto_payments``), ties broken by ``PAYMENT_ORDER``: a card of no combination family (a
  plain 6–10 pip) first, then the lowest trick rank (suit cards below trumps, then strength). So
  ``KD QD CD JD AD AC AS T5 Moon KC QC CC`` pays the T5 (its loss costs nothing), not the AS, which
  would break the Aces. The paid card is public.
* A signal under ``ott_signal_timing="after_top_card_played"`` (OTT-8.4) may only go with a card of a
  suit whose top card (its King; the Angel for trumps) was played earlier in the hand; the signal is
  offered only when the player has such a legal card, and after it the card choice is restricted to them.
* ``max_hands`` (OTT-10.3) counts thrown-in hands; reaching it ends the game as a draw with
  ``truncated = True``. ``target_score`` (800) is exposed for shorter training games.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import njit

from ..cards import BOLOGNESE, TRUMP
from ..config import Config, option
from ..engine import NUM_SIGNALS, Layout, TrickGame, mirror_gathers, played_trick_table
from ..kernels import gather_cells
from . import combos

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
TOTAL_CARD_POINTS = 87  # B.3.3 (93 with the last trick)
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
    """OTT-7.3: the card each team pile (bool[k, 62], its cards won in tricks with the Matto) gives
    for the Matto, int64[k] (-1: none).

    The candidates are the pile's cards of value 1, else its lowest-valued cards (O-9), never the
    Matto; of them, the one whose loss costs the pile the fewest combination points (B.5, with the
    game's flags) is given, ties broken by ``PAYMENT_ORDER``
    (``combos.cheapest_cards``). The dealer's discards join a pile only after the payment
    (OTT-4.3), so they neither pay nor steer it.
    """
    piles = np.asarray(piles, dtype=bool)
    cand = piles.copy()
    cand[:, MATTO] = False
    low = np.where(cand, VALUE, VALUE.max() + 1).min(1)
    cand &= VALUE == low[:, None]
    return combos.cheapest_cards(piles, cand, PAYMENT_RANK, moors_double_count=moors_double_count,
                                 suit_min_natural=suit_min_natural)


@njit(cache=True, nogil=True)
def target_team(score0: int, score1: int, target: int) -> int:
    """OTT-6.1, OTT-10.1/10.2: the team at the target or above with the higher total; -1 if no team
    reached it or the totals are exactly equal (OTT-10.3: play on). Compiled: the batched engine's
    kernels call this one function too."""
    if max(score0, score1) >= target and score0 != score1:
        return 0 if score0 > score1 else 1
    return -1


# OTT-8.4: the top card of each suit (King; the Angel for trumps), indexed by suit 0..3, TRUMP.
TOP_CARD = [BOLOGNESE.parse(n) for n in ("KD", "KC", "KS", "KB", "Angel")]


def card_points(pile) -> int:
    """B.3.2: Σ value − |pile| / 2 (pairs score their sum minus 1; the pile size is even)."""
    pile = np.asarray(pile, dtype=bool)
    n = int(pile.sum())
    if n % 2:
        raise ValueError(f"a won pile always holds an even number of cards (B.3.4), got {n}")
    return int(VALUE[pile].sum()) - n // 2


def team_hand_score(pile, declared: int = 0, last_trick: bool = False, *,
                    moors_double_count: bool = True, suit_min_natural: int = 2) -> int:
    """C.9: declared points + combo_points(pile) + card_points(pile) + 6 for the last trick."""
    return (int(declared)
            + combos.combo_points(np.asarray(pile, dtype=bool), moors_double_count=moors_double_count,
                                  suit_min_natural=suit_min_natural)
            + card_points(pile) + LAST_TRICK_BONUS * bool(last_trick))


def declarable_cards(hand, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """bool[62]: ``M(hand)``, the largest subset of ``hand`` whose every card scores (see the module doc).

    A set ``R`` of revealed cards can be completed to a legal declaration iff ``R ⊆ M(hand)``.
    """
    s = np.asarray(hand, dtype=bool).copy()
    while s.any():
        keep = s & combos.scoring_cards(s, moors_double_count=moors_double_count,
                                        suit_min_natural=suit_min_natural)
        if (keep == s).all():
            return s
        s = keep
    return s


def declarable_many(hand_bits, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """:func:`declarable_cards` of many hands at once (62-bit sets, ``uint64``, any shape): the same
    fixed point ``S -> S & scoring_cards(S)``, through ``combos.evaluate_many``; returns uint64 sets."""
    s = np.array(hand_bits, dtype=np.uint64)
    while True:
        _, scoring = combos.evaluate_many(s, moors_double_count=moors_double_count,
                                          suit_min_natural=suit_min_natural)
        keep = s & scoring
        if (keep == s).all():
            return s
        s = keep


@njit(cache=True, nogil=True)
def _combo_sections_into(won, moors_double_count, suit_min_natural, tables, out):
    """``out[team]`` := the v2 sections as ``team`` sees them (its pile first), from ``won`` (bool[2, 62]):
    ``combos.combo_view`` for team 0, its two halves exchanged for team 1 (the tables as
    ``combos.tables_buffer``: one array to pass from Python)."""
    combos.combo_view(won, moors_double_count, suit_min_natural, combos.tables_in(tables), out[0])
    out[1, 0], out[1, 1] = out[0, 1], out[0, 0]
    out[1, 2:2 + N], out[1, 2 + N:] = out[0, 2 + N:], out[0, 2:2 + N]


@functools.lru_cache(maxsize=1 << 12)
def _combo_sections(won: bytes, moors_double_count: bool, suit_min_natural: int) -> np.ndarray:
    """:meth:`OttocentoGame.combo_sections` of the won piles ``won`` (the bytes of ``bool[2, 62]``), a
    read-only array; the four observations of a trick, and a search's many copies of a position, share
    one evaluation."""
    out = np.empty((2, 2 + 2 * N), dtype=np.float32)
    _combo_sections_into(np.frombuffer(won, dtype=np.bool_).reshape(2, N), moors_double_count, suit_min_natural,
                         combos.tables_buffer(), out)
    out.setflags(write=False)
    return out


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
_V2_SLICE = slice(OBS.pile_combos.start, OBS.combo_gain.stop)  # the v2 sections, contiguous at the end
# the scalar sections, pending_signal .. phase, offsets within them (OttocentoGame._scalars)
_N_SCALARS = OBS.phase.stop - OBS.pending_signal.start
(_SEAT_FROM_DEALER, _LEADER, _HAND_SIZES, _TRICKS_WON, _DECLARED_POINTS, _SCORES, _HANDS_PLAYED, _PHASE) = (
    getattr(OBS, name).start - OBS.pending_signal.start for name in (
        "seat_from_dealer", "leader", "hand_sizes", "tricks_won", "declared_points", "scores", "hands_played",
        "phase"))
COMBO_SCALE = combos.COMBO_SCALE  # pile_combos and combo_gain: points / 100
# 17 card sections (hand, my_discards, 4 declared, 4 played, 4 trick, 2 won, matto_paid) + the rest
assert OBS_V0_SIZE == 62 * 17 + 72 + 8 + 3 + 4 + 4 + 4 + 2 + 4 + 2 + 2 + 5 == 1164
assert OBS_V1_SIZE == OBS_V0_SIZE + 20 + 62 * 4 == 1432
assert OBS_SIZE == OBS_V1_SIZE + 2 + 2 * 62 == 1558

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
    # B.5 points are at most 846 (combos.COMBO_BOUND): a pile's, or what one card adds, / COMBO_SCALE
    OBS_HIGH = {"pile_combos": combos.COMBO_BOUND / COMBO_SCALE, "combo_gain": combos.COMBO_BOUND / COMBO_SCALE}
    EXTRA_BLOCK_FIELDS = (
        ("declared", (PLAYERS, N)),  # OTT-5.2: public, stays in the hand
        ("matto_paid", (N,)),  # OTT-7.3: public at the end of the hand
        ("a_monte_said", (PLAYERS, 2)),  # OTT-3: [said a monte, said play on], public
        (TrickGame.SHOWN_VOID, (PLAYERS, 5)),  # public voids (H.1.1), kept by play_card
        (TrickGame.SIGNAL_CARD, (N, NUM_SIGNALS)),  # H.1.1: which card carried each signal
    )

    def __init__(self, config: OttocentoConfig | None = None, seed: int | None = None,
                 first_dealer: int | None = None):
        super().__init__(config, seed)
        self.hands_played = 0  # thrown-in hands included (OTT-10.3)
        self.truncated = False  # the game ended at max_hands (a draw)
        if first_dealer is None:
            first_dealer = self.config.first_dealer
        if first_dealer < 0:
            first_dealer = int(self.rng.integers(PLAYERS))  # OTT-1.2: chosen at random
        self.start_hand(first_dealer)

    def next_game(self, seed: int | None = None) -> OttocentoGame:
        """A new game; its first deal goes on round the table (OTT-1.3: to the last dealer's right)."""
        if seed is None:
            seed = int(self.rng.integers(2**63))
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
        """Shuffle (or take ``deck``, a permutation of the 62 ids) and deal the first round (OTT-2.1)."""
        self._reset_hand()
        self.dealer = dealer
        self.deck = self.shuffled_pack() if deck is None else np.array(deck, dtype=np.int64)
        self.declared_points = [0] * PLAYERS
        self.declarable = np.zeros(N, dtype=bool)  # M(hand) of the player declaring now
        self.declare_done_ok = True  # DECLARE_DONE legal now (nothing revealed, or all revealed scores)
        self.declared_added = False  # the declared points are in self.scores (OTT-6.1)
        self._deal_round(0)
        self.leader = self.current = self.eldest
        if self.config.a_monte == "off":
            self._deal_rest()
        else:
            self.phase = Phase.A_MONTE  # OTT-2.3: decided after the first round

    def _deal_round(self, r: int) -> None:
        """OTT-2.1: round ``r`` gives a packet of 5 to each player, eldest first, the dealer last."""
        for i in range(PLAYERS):
            seat = (self.dealer + 1 + i) % PLAYERS
            start = PLAYERS * PACKET * r + PACKET * i
            self.deal_cards(seat, self.deck[start:start + PACKET])

    def _deal_rest(self) -> None:
        for r in range(1, ROUNDS):
            self._deal_round(r)
        self.deal_cards(self.dealer, self.deck[PLAYERS * HAND_SIZE:])  # OTT-2.2: the last 2 cards
        self.phase = Phase.DISCARD
        self.current = self.dealer

    def set_hands(self, dealer: int, hands: list[list[int]]) -> None:
        """Start a hand from explicit hands (4 lists of ids, 15 each and 17 for the dealer), e.g. golden
        games. The a monte question is still asked unless ``a_monte="off"``."""
        sizes = [len(h) for h in hands]
        want = [MAX_HELD if s == dealer else HAND_SIZE for s in range(PLAYERS)]
        deck = []
        for r in range(ROUNDS):
            for i in range(PLAYERS):
                seat = (dealer + 1 + i) % PLAYERS
                deck += list(hands[seat][PACKET * r: PACKET * (r + 1)])
        deck += list(hands[dealer][HAND_SIZE:])
        if sizes != want or sorted(int(c) for c in deck) != list(range(N)):
            raise ValueError(f"hands must hold the 62 cards once each, 15 per player and 17 for the "
                             f"dealer (seat {dealer}); got sizes {sizes}")
        self.start_hand(dealer, np.array(deck))

    # --- what a state must hold (checked when a state comes from outside: TrickGame.check_state) ------
    def _first_round_only(self) -> bool:
        """Only the first round is dealt: the a monte question (OTT-2.3), or a game that ended on a
        thrown-in hand (OTT-3.2)."""
        return self.phase == Phase.A_MONTE or (self.game_over and bool(self.history)
                                               and bool(self.history[-1].get("thrown_in")))

    def card_places(self) -> list[tuple[str, np.ndarray]]:
        places = super().card_places()
        if self._first_round_only():  # OTT-2.1: the rest of the deck is not dealt yet
            undealt = np.zeros(N, dtype=bool)
            undealt[np.asarray(self.deck)[PACKET * PLAYERS:]] = True
            places.append(("undealt", undealt))
        return places

    def phase_problems(self) -> list[str]:
        """OTT-2.1, 2.2, 4.1, 7.1: the cards each seat holds in each phase."""
        held, d = self.hands.sum(axis=1), self.dealer
        made = int(self.discards[d].sum())
        if self._first_round_only():
            want = [PACKET] * PLAYERS
        elif self.phase == Phase.DISCARD:
            want = [MAX_HELD - made if s == d else HAND_SIZE for s in range(PLAYERS)]
        else:
            want = [HAND_SIZE - int(self.played[s].sum()) for s in range(PLAYERS)]
        out = []
        if held.tolist() != want:
            out.append(f"the hands hold {held.tolist()} cards; phase {self.phase.name} means {want} (OTT-2)")
        if self.discards.sum() != made:
            out.append(f"seats other than the dealer (seat {d}) hold discards (OTT-4.1)")
        return out

    # --- the driver API -----------------------------------------------------------------------------
    def legal_mask(self) -> np.ndarray:
        p = self.phase
        if p == Phase.PLAY:
            return self.play_mask()
        if p == Phase.DECLARE:
            return self.declare_mask()
        if p == Phase.DISCARD:
            return self.discard_mask()
        if p == Phase.A_MONTE:
            mask = np.zeros(NUM_ACTIONS, dtype=bool)
            mask[A_MONTE] = mask[PLAY_ON] = True
            return mask
        return np.zeros(NUM_ACTIONS, dtype=bool)

    def apply_unchecked(self, action: int) -> None:
        p = self.phase
        if p == Phase.PLAY:
            self.play_or_signal(action)
        elif p == Phase.DECLARE:
            self.declare(action)
        elif p == Phase.DISCARD:
            self.discard(action)
        else:
            self.answer_a_monte(action)

    # --- phase: A_MONTE (OTT-3) ---------------------------------------------------------------------
    def answer_a_monte(self, action: int) -> None:
        seat = self.current
        yes = action == A_MONTE
        self.a_monte_said[seat, 0 if yes else 1] = True  # public (H.3)
        last = seat == self.dealer  # OTT-3.1: eldest speaks first, the dealer last
        if yes and last and self.a_monte_said[:, 0].all():
            self._throw_in()  # OTT-3.2: all four said a monte
        elif (not yes and self.config.a_monte == "stop_at_no") or last:
            self._deal_rest()  # OTT-3.2: dealing continues
        else:
            self.current = self.next_seat(seat)

    def _throw_in(self) -> None:
        """OTT-3.2: the cards are thrown in with no score; OTT-1.3: the deal passes."""
        self.history.append({"hand": self.hands_played, "dealer": self.dealer, "scores": [0, 0],
                             "thrown_in": True})
        self._end_of_hand(check_target=False)

    # --- phase: DISCARD (OTT-4) ---------------------------------------------------------------------
    def discard_mask(self) -> np.ndarray:
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        mask[:N] = self.hands[self.dealer] & DISCARDABLE  # OTT-4.2: no 5-point card
        return mask

    def discard(self, card: int) -> None:
        d = self.dealer
        self.take_from_hand(d, card)
        self.discards[d, card] = True  # OTT-4.1: face down, hidden from the other three
        if self.hand_sizes[d] == HAND_SIZE:
            self.phase = Phase.DECLARE
            self._start_declaring(self.eldest)  # OTT-5.1: eldest first

    # --- phase: DECLARE (OTT-5, OTT-6) --------------------------------------------------------------
    def _start_declaring(self, seat: int) -> None:
        self.current = seat
        self.declarable = declarable_cards(self.hands[seat], **self._flags())
        self.declare_done_ok = True

    def declare_mask(self) -> np.ndarray:
        """Reveal any card of M(hand) not yet revealed; DONE when the revealed set is empty or scores."""
        seat = self.current
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        mask[:N] = self.declarable & ~self.declared[seat]
        mask[DECLARE_DONE] = self.declare_done_ok
        return mask

    def declare(self, action: int) -> None:
        seat = self.current
        if action != DECLARE_DONE:
            self.declared[seat, action] = True  # OTT-5.2: face up, public; it stays in the hand
            self.declare_done_ok = combos.is_scoring_declaration(self.declared[seat], **self._flags())
            return
        if self.declared[seat].any():  # OTT-5.3: per player
            self.declared_points[seat] = combos.combo_points(self.declared[seat], **self._flags())
        if seat != self.dealer:
            self._start_declaring(self.next_seat(seat))
            return
        self.declarable = np.zeros(N, dtype=bool)
        team_points = self.declared_team_points()
        self.scores += team_points  # OTT-6.1: into the cumulative score at once
        self.declared_added = True
        if self._target_winner() is not None:  # OTT-6.1: won at the declarations
            self.history.append({"hand": self.hands_played, "dealer": self.dealer, "scores": team_points,
                                 "declared": list(self.declared_points), "won_at_declarations": True,
                                 "thrown_in": False})
            self._end_of_hand(check_target=True)
            return
        self.phase = Phase.PLAY
        self.leader = self.current = self.eldest  # OTT-7.1: eldest leads

    def declared_team_points(self) -> list[int]:
        dp = self.declared_points
        return [dp[0] + dp[2], dp[1] + dp[3]]

    # --- phase: PLAY (OTT-7, OTT-8) -----------------------------------------------------------------
    def _signal_cards(self, seat: int) -> np.ndarray:
        """Legal cards a signal may go with under ``after_top_card_played`` (OTT-8.4)."""
        ok = self.legal_cards(seat)
        top_out = self.played.any(axis=0)[TOP_CARD]  # suits 0..3, trumps
        for s in range(5):
            if not top_out[s]:
                ok &= ~self.tables.suit[s]
        ok[MATTO] = False  # the Matto has no suit to signal about
        return ok

    def signal_allowed(self, seat: int) -> bool:
        if self.config.ott_signal_players == "eldest_only" and seat != self.eldest:  # OTT-8.3
            return False
        if self.config.ott_signal_timing == "after_top_card_played":  # OTT-8.4
            return bool(self._signal_cards(seat).any())
        return True

    def play_mask(self) -> np.ndarray:
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        seat = self.current
        if self.pending_signal >= 0 and self.config.ott_signal_timing == "after_top_card_played":
            mask[:N] = self._signal_cards(seat)
        else:
            self.legal_cards(seat, mask[:N])
        self.signal_mask_into(mask, seat)
        return mask

    # --- scoring (C.9, OTT-4.3, OTT-7.3, 7.4) and the end of the hand (OTT-10) -------------------------
    def team_piles(self) -> tuple[np.ndarray, dict]:
        """bool[2, 62]: each team's cards after the Matto and discard transfers, and what moved."""
        piles = self.won.copy()
        info = {"matto_team": -1, "matto_paid": -1, "discards_to": -1}
        owner = self.excuse_owner
        if owner >= 0:
            mine = TEAM_OF[owner]
            other = 1 - mine
            if self.tricks_won[mine] == 0:  # OTT-7.4 / B.4.6: surrendered
                piles[mine, MATTO] = False
                piles[other, MATTO] = True
            elif TEAM_OF[self.excuse_trick_winner] != mine:  # OTT-7.3: pay a low card
                card = int(matto_payments(piles[mine][None], **self._flags())[0])
                piles[mine, card] = False
                piles[other, card] = True
                info["matto_paid"] = card
            info["matto_team"] = int(np.flatnonzero(piles[:, MATTO])[0])
        dealer_team = TEAM_OF[self.dealer]
        to = dealer_team if self.tricks_won[dealer_team] > 0 else 1 - dealer_team  # OTT-4.3
        piles[to] |= self.discards[self.dealer]
        info["discards_to"] = to
        return piles, info

    def hand_scores(self) -> tuple[list[int], dict]:
        """C.9 per team, with the parts, for the hand just played."""
        piles, info = self.team_piles()
        last_team = TEAM_OF[self.tricks[-1][1]]
        declared = self.declared_team_points()
        flags = self._flags()
        combo = [combos.combo_points(piles[t], **flags) for t in range(2)]
        cards = [card_points(piles[t]) for t in range(2)]
        last = [LAST_TRICK_BONUS * (t == last_team) for t in range(2)]
        scores = [declared[t] + combo[t] + cards[t] + last[t] for t in range(2)]
        info.update({"declared": list(self.declared_points), "declared_team": declared, "combo": combo,
                     "card_points": cards, "last_trick": last_team,
                     "pile_sizes": [int(piles[t].sum()) for t in range(2)]})
        return scores, info

    def on_hand_played(self) -> None:
        scores, info = self.hand_scores()
        if info["matto_paid"] >= 0:
            self.matto_paid[info["matto_paid"]] = True  # public (H.3)
        declared = info["declared_team"]
        self.scores += [scores[t] - declared[t] for t in range(2)]  # declarations already added (OTT-6.1)
        self.history.append({
            "hand": self.hands_played, "dealer": self.dealer, "scores": scores,
            "tricks_won": self.tricks_won.tolist(), "thrown_in": False, **info,
            "discards": np.flatnonzero(self.discards[self.dealer]).tolist(),
        })
        self._end_of_hand(check_target=True)

    def _target_winner(self) -> int | None:
        """OTT-6.1, OTT-10.1/10.2 (:func:`target_team`); None while the game goes on."""
        team = target_team(int(self.scores[0]), int(self.scores[1]), self.config.target_score)
        return None if team < 0 else team

    def _end_of_hand(self, check_target: bool) -> None:
        self.hands_played += 1
        winner = self._target_winner() if check_target else None
        if winner is not None:
            self._game_over(winner)
        elif self.hands_played >= self.config.max_hands:  # OTT-10.3: a draw
            self.truncated = True
            self._game_over(-1)
        else:
            self.start_hand(self.next_seat(self.dealer))  # OTT-1.3

    def _game_over(self, winner: int) -> None:
        self.phase = Phase.GAME_OVER
        self.game_over = True
        self.winner = winner

    # --- encoders -----------------------------------------------------------------------------------
    def _scalars(self, seat: int) -> list[float]:
        """The observation's sections from ``pending_signal`` to ``phase``, seen from ``seat``, as one list
        (one write into the vector)."""
        x = [0.0] * _N_SCALARS
        if self.pending_signal >= 0 and seat == self.current:
            x[self.pending_signal] = 1.0                                      # pending_signal
        x[_SEAT_FROM_DEALER + (seat - self.dealer) % PLAYERS] = 1.0           # seat_from_dealer
        x[_LEADER + (self.leader - seat) % PLAYERS] = 1.0                     # leader
        hs, dp = self.hand_sizes, self.declared_points
        for i in range(PLAYERS):
            r = (seat + i) % PLAYERS
            x[_HAND_SIZES + i] = hs[r] / MAX_HELD                             # hand_sizes
            x[_DECLARED_POINTS + i] = dp[r] / DECLARED_SCALE                  # declared_points
        my = TEAM_OF[seat]
        tw, sc = self.tricks_won.tolist(), self.scores.tolist()
        x[_TRICKS_WON], x[_TRICKS_WON + 1] = tw[my] / HAND_SIZE, tw[1 - my] / HAND_SIZE   # tricks_won
        target = self.config.target_score
        x[_SCORES], x[_SCORES + 1] = sc[my] / target, sc[1 - my] / target                # scores
        k = self.config.max_hands
        x[_HANDS_PLAYED], x[_HANDS_PLAYED + 1] = self.hands_played / k, (k - self.hands_played) / k
        x[_PHASE + int(self.phase)] = 1.0                                     # phase
        return x

    def observation(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """What ``seat`` knows (RULES.md H.1–H.3, H.1.1), as a float32 vector laid out by ``OBS``:
        the card sections (``_OBS_HEAD[seat]`` before the scalars, ``_OBS_TAIL[seat]`` for the v1
        ``shown_void`` and ``signal_cards``) are copied from the state block in one compiled pass
        (``kernels.gather_cells`` through ``_OBS_GATHER``), the numbers between them are one list
        (:meth:`_scalars`); these writes, ``played_trick`` and the v2 sections cover every entry (checked
        where the gathers are built)."""
        o = np.empty(OBS_SIZE, dtype=np.float32) if out is None else out
        gather_cells(self.block, _OBS_GATHER[seat], _OBS_POS, o)  # the head and the tail
        o[_GATHERED:OBS.phase.stop] = self._scalars(seat)
        _PLAYED_TRICK.take(self.card_trick, out=o[OBS.played_trick])
        my = TEAM_OF[seat]
        o[_V2_SLICE] = self.combo_sections()[my]
        return o

    def combo_sections(self) -> np.ndarray:
        """float32[2, 126]: row ``t`` is the observation's ``pile_combos`` and ``combo_gain`` as team ``t``
        sees them (its own pile first): the B.5 points of each team's won cards and what each card in
        neither pile would add to them, / ``COMBO_SCALE`` (``combos.combo_gains``). Memoised by the piles."""
        return _combo_sections(self.won.tobytes(), self.config.moors_double_count, self.config.suit_min_natural)

    def state_vector(self, out: np.ndarray | None = None) -> np.ndarray:
        """Everything, for centralised critics in training only (absolute seats, ``STATE`` layout)."""
        o = np.empty(STATE_SIZE, dtype=np.float32) if out is None else out
        o[:_STATE_GATHERED] = self.block[_STATE_HEAD]
        o[_STATE_GATHERED:] = 0.0
        o[_STATE_TAIL_SLICE] = self.block[_STATE_TAIL]
        o[STATE.played_trick] = _PLAYED_TRICK[self.card_trick]
        if self.pending_signal >= 0:
            o[STATE.pending_signal.start + self.pending_signal] = 1.0
        o[STATE.dealer.start + self.dealer] = 1.0
        if not self.game_over:
            o[STATE.current.start + self.current] = 1.0
        o[STATE.leader.start + self.leader] = 1.0
        o[STATE.tricks_won] = self.tricks_won / HAND_SIZE
        o[STATE.declared_points] = np.asarray(self.declared_points) / DECLARED_SCALE
        o[STATE.scores] = self.scores / self.config.target_score
        k = self.config.max_hands
        o[STATE.hands_played] = (self.hands_played / k, (k - self.hands_played) / k)
        o[STATE.phase.start + int(self.phase)] = 1.0
        return o

    # --- what a player may not know (RULES.md H.6), for the leak tests -----------------------------
    def hidden_from(self, seat: int) -> tuple[np.ndarray, np.ndarray]:
        """bool[4, 62] of hand cards and bool[62] of discards that ``seat`` cannot see.

        Declared cards are public (OTT-5.2), so they are not hidden. The undealt rest of the deck
        during the a monte question (``deck[20:]``) is hidden from everyone as well.
        """
        hidden_hands = self.hands & ~self.declared
        hidden_hands[seat] = False
        hidden_discards = self.discards[self.dealer].copy()
        if seat == self.dealer:
            hidden_discards[:] = False
        return hidden_hands, hidden_discards

    @classmethod
    def result_view(cls, result: dict, seat: int) -> dict:
        """What ``seat`` knows of a finished hand's record ``result`` (a ``history`` entry; the AEC
        env's ``info["last_result"]``): everything but the dealer's two discards, known to the dealer
        alone, not to the partner (OTT-4.1, RULES.md H.3). ``"discards"`` lists the known ones and
        ``"discards_hidden"`` counts the others. The paid Matto card, the declarations and the score
        parts are public (H.3, the count). Applying it again to its own output changes nothing."""
        view = dict(result)
        if "discards" in result:
            hidden = result.get("discards_hidden", 0)
            if seat != result["dealer"]:
                hidden += len(result["discards"])
                view["discards"] = []
            view["discards_hidden"] = hidden
        return view

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


def _build_gathers():
    """Per-seat index tables from block positions to the card sections of OBS (and of STATE): the
    head (the v0 card sections, before the scalars) and the tail (``shown_void`` and
    ``signal_cards``, after them)."""
    ix = OttocentoGame.block_index()
    per_seat = []
    for seat in range(PLAYERS):
        rel, my = REL[seat], TEAM_OF[seat]
        parts = [
            ix.hands[seat],                 # hand
            ix.discards[seat],              # my_discards: only the dealer has any (OTT-4.1)
            ix.declared[rel].ravel(),       # declared
            ix.played[rel].ravel(),         # played
            ix.trick_by[rel].ravel(),       # trick
            ix.won[[my, 1 - my]].ravel(),   # won
            ix.signal_table[rel].ravel(),   # signals
            ix.matto_paid,                  # matto_paid
            ix.a_monte_said[rel].ravel(),   # a_monte
        ]
        per_seat.append(np.concatenate(parts))
    assert len(per_seat[0]) == OBS.pending_signal.start, "gathered sections must precede the scalars"
    state = np.concatenate([ix.hands.ravel(), ix.discards.ravel(), ix.declared.ravel(), ix.played.ravel(),
                            ix.trick_by.ravel(), ix.won.ravel(), ix.signal_table.ravel(), ix.matto_paid,
                            ix.a_monte_said.ravel()])
    assert len(state) == STATE.pending_signal.start
    tail = [np.concatenate([ix.shown_void[REL[seat]].ravel(),  # shown_void (seat-relative)
                            ix.signal_card.ravel()])           # signal_cards (absolute card ids)
            for seat in range(PLAYERS)]
    assert len(tail[0]) == OBS.signal_cards.stop - OBS.shown_void.start
    return per_seat, tail, state, np.concatenate([ix.shown_void.ravel(), ix.signal_card.ravel()])


_OBS_HEAD, _OBS_TAIL, _STATE_HEAD, _STATE_TAIL = _build_gathers()
_GATHERED = len(_OBS_HEAD[0])
_STATE_GATHERED = len(_STATE_HEAD)
_OBS_TAIL_SLICE = slice(OBS.shown_void.start, OBS.signal_cards.stop)
# the observation's five writes (head, scalars, tail, played_trick, v2) cover it end to end
assert _GATHERED == OBS.pending_signal.start and OBS.phase.stop == _OBS_TAIL_SLICE.start
assert _OBS_TAIL_SLICE.stop == OBS.played_trick.start and OBS.played_trick.stop == _V2_SLICE.start
assert _V2_SLICE.stop == OBS_SIZE
_STATE_TAIL_SLICE = slice(STATE.shown_void.start, STATE.signal_cards.stop)
# for the batched engine's encoder: every gathered cell of a seat's observation and its position
_OBS_GATHER, _OBS_POS, _STATE_GATHER, _STATE_POS = mirror_gathers(
    _OBS_HEAD, _OBS_TAIL, _STATE_HEAD, _STATE_TAIL, _OBS_TAIL_SLICE, _STATE_TAIL_SLICE)
