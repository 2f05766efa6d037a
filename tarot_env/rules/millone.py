"""Millone: the rules (RULES.md Part D, on Part B), as a PettingZoo-free rules object.

Two players (seats 0 and 1, each its own side) play the 62-card Bolognese pack to 1000 points
(MIL-6.1). The dealer alternates (MIL-2.1). A hand moves through these phases:

``DISCARD``         after the first phase of the deal (four rounds of 5, non-dealer first, the dealer
                    taking 7 in the last round: 20 and 22 cards, 20 in the stock, MIL-2.2) and the
                    automatic game claim (MIL-3), **the non-dealer discards 10, then the dealer 10**,
                    one card per decision, face down to their own piles (MIL-2.4). Honours (Angel,
                    World, Bégato, Matto) and Kings are never legal. Discards are hidden from the
                    opponent (M-6, H.4).
``SECOND_DISCARD``  the second phase of the deal (two rounds of 5 each, non-dealer first, MIL-2.5)
                    has emptied the stock; the dealer discards 2 more, same restriction (MIL-2.6).
``PLAY``            the non-dealer leads (MIL-4.1); 20 tricks of 2 under follow / trump / Matto
                    (MIL-4.2, B.4). The Matto exchange is made at the end of its trick, or owed until
                    its player wins an empty card (MIL-4.3, M-5).
``GAME_OVER``       someone reached 1000 (MIL-6.1), claimed the game (MIL-3), or ``max_hands``
                    hands were played.

Decisions taken here (RULES.md leaves them open; each is pinned by a test in tests/test_millone.py):

1. **Which card pays for the Matto** (MIL-4.3, M-5). The seed says "an empty card", not which one,
   and the environment has no action for it, so the rule picks it (``fool_payments``). At the end of
   the Matto's trick the card comes from the cards the player has **won in tricks** so far (the
   Matto excluded): the discards stay hidden and join his pile only at the end of the hand. Of his
   empty cards (value 1) the one whose loss costs that pile of won cards the fewest combination
   points (B.5) is given, ties broken by a fixed order (``EXCHANGE_RANK``): the suit pips 6–10
   first (they belong to no combination), then the numbered trumps from the 5 up to the 16, Moon,
   Sun, the Moors, the Aces (then Jacks, Cavaliers, Queens, for the payment at the end of the
   hand). The rule reads only the payer's won cards, so the choice reveals nothing of his discards
   nor of the receiver's.
2. **The payment is public.** The card moves between piles in sight of both players (it is shown
   when handed over): it appears in the receiver's ``won`` pile and in the ``exchanged`` section of
   both observations. During the play it always comes from the payer's ``won`` pile, which both
   players see, so no hidden card is revealed.
3. **Owed payment** (MIL-4.3, M-5): when the player has won no empty card at the end of the Matto's
   trick, the payment is owed (public: ``exchange_owed`` in both observations) and made at the end
   of the first later trick that brings him one (``on_trick_closed``; same choice as in 1). If he
   wins none, it is made at the end of the hand from his whole pile, discards included: of the
   lowest-valued cards then available, the one that costs the pile the fewest combination points,
   ties by ``EXCHANGE_RANK``. Only this end-of-hand payment may come from the discards (the hand's
   record then says ``"deferred": True``).
4. **Surrender** (MIL-4.4): if the Matto's player won no trick, at the end of the hand the Matto goes
   to the opponent **instead of** the exchange, and the owed payment is cancelled. (He cannot have
   paid: a player who won no trick has won no empty card.)
5. **Claim** (MIL-3): automatic; the claimant's hand combinations are added to his score (so his
   score becomes his claim, >= 1000), the history gets a ``"claim"`` entry whose ``"scores"`` are
   ``[combos, 0]`` (claimant first in seat order), and the scoring cards shown are public
   (``claim_shown`` in both observations).
6. **The ``max_hands`` cap** (MIL-6.1, M-7): after ``max_hands`` hands without a winner the game
   ends as a draw (``winner = -1``) with ``truncated = True`` (the environment reports a
   truncation, as Ottocento does). Random play ends a game in 4.5 hands on average (at most 7
   in 1000 games), so the default cap of 100 only stops endless ties.
7. **Next game**: ``next_game()`` keeps the alternation: the player who did not deal the last hand
   deals first (MIL-2.1).

``round_suits_inverted=False`` (M-3) plays the coins and cups pips in the long-suit order
(10 high … Ace low); ids and names never change, only the trick strength table does.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import njit

from ..cards import BOLOGNESE, Pack
from ..config import Config, option
from ..engine import NUM_SIGNALS, Layout, TrickGame, mirror_gathers
from ..kernels import gather_cells
from . import combos
from .combos import COMBO_SCALE, cheapest_card, combo_points, combo_tables, scoring_cards

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


def card_points(piles: np.ndarray):
    """B.3.2: Σ value − |pile| / 2 of bool[..., 62] piles (each of even size, B.3.4): an int for one
    pile, int64[...] for many (the batched engine scores every row's two piles at once)."""
    piles = np.asarray(piles, dtype=bool)
    points = piles.astype(np.int64) @ _VALUE64 - piles.sum(-1, dtype=np.int64) // 2
    return int(points) if points.ndim == 0 else points


def hand_scores(piles: np.ndarray, last_trick: int, *, moors_double_count: bool = True):
    """D.5: ``(card_points, combos, scores)``, one entry per seat, of two final piles (bool[2, 62])."""
    cp = [card_points(piles[p]) for p in range(PLAYERS)]
    combos = [combo_points(piles[p], moors_double_count=moors_double_count) for p in range(PLAYERS)]
    scores = [cp[p] + combos[p] + (LAST_TRICK_BONUS if p == last_trick else 0) for p in range(PLAYERS)]
    return cp, combos, scores


# Decision 1 in card bit sets (one uint64 per pile, bit c = card c), compiled: the rule of the
# reference (``fool_payments``) and of the batched engine's kernels (``tarot_env.vector.millone``).
_BIT = np.left_shift(np.uint64(1), np.arange(N, dtype=np.uint64))
_VALUE64 = VALUE.astype(np.int64)
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
    return cheapest_card(pile, payment_candidates(pile, empty_only), EXCHANGE_RANK, moors_double_count, 2, tables)


def fool_payments(piles: np.ndarray, *, empty_only: bool, moors_double_count: bool = True) -> np.ndarray:
    """Decision 1: the card each pile (bool[k, 62]) gives for the Matto, int64[k]; -1 where none.

    During the play the pile is the payer's cards **won in tricks** (with the Matto, never given) and
    ``empty_only``: only an empty card (value 1) may be given (MIL-4.3); at the end of the hand the
    pile is the whole pile, discards included, and the lowest-valued card is given (M-5). Among the
    candidates, the one whose loss costs that pile the fewest combination points (B.5;
    ``combos.cheapest_card``), ties by ``EXCHANGE_RANK``. The rule is :func:`fool_payment_bits`,
    compiled, shared with the batched engine.
    """
    piles = np.asarray(piles, dtype=bool)
    bits = np.bitwise_or.reduce(np.where(piles, _BIT, np.uint64(0)), axis=-1)
    tables = combo_tables()
    return np.array([fool_payment_bits(b, bool(empty_only), bool(moors_double_count), tables) for b in bits],
                    dtype=np.int64)


def fool_payment(pile: np.ndarray, *, empty_only: bool, moors_double_count: bool = True) -> int:
    """:func:`fool_payments` of one pile (bool[62]): a card id, or -1."""
    return int(fool_payments(np.asarray(pile, dtype=bool)[None], empty_only=empty_only,
                             moors_double_count=moors_double_count)[0])


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


def game_result(scores: list[int], hands_played: int, max_hands: int) -> int | None:
    """:func:`game_results` of one game: the winning seat, -1 for a draw, or None to play on."""
    winner = int(game_results(scores, hands_played, max_hands))
    return None if winner == PLAY_ON else winner


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


# Observation of one seat (seat-relative: 0 = me, 1 = the opponent).
OBS = Layout([
    ("hand", N),                 # my cards
    ("my_discards", N),          # my discards, hidden from the opponent (MIL-2.4, H.4)
    ("played", 2 * N),           # cards played to tricks this hand: by me / by the opponent
    ("trick", 2 * N),            # the current trick, by seat
    ("won", 2 * N),              # public part of the piles: cards taken in tricks (+ the Matto and
                                 # the card paid for it) by me / by the opponent
    ("exchanged", N),            # the card paid for the Matto this hand (public, decision 2)
    ("claim_shown", 2 * N),      # scoring cards shown by a game claim: mine / the opponent's (MIL-3)
    ("seat_from_dealer", 2),     # one-hot: 0 = I deal, 1 = the opponent deals
    ("leader", 2),               # one-hot: who led the current trick
    ("hand_sizes", 2),           # cards held, me / opponent, / 22
    ("stock_size", 1),           # cards left in the stock / 20
    ("tricks_won", 2),           # me / opponent, / 20
    ("exchange_owed", 2),        # a deferred Matto payment is owed by me / by the opponent (MIL-4.3)
    ("scores", 2),               # cumulative game score, me / opponent, / 1000 (unbounded)
    ("hands_played", 1),         # hands played / max_hands
    ("phase", 4),                # one-hot: discard, second discard, play, game over
    # v1 (RULES.md H.1.1, table memory), appended so that the v0 sections keep their offsets:
    ("shown_void", 2 * 5),       # me / opponent x suit (4 suits, trumps) shown lacking by not
                                 # following (MIL-4.2, B.4.1-B.4.2; the Matto shows nothing)
    # v2 (issue #12): the combinations (B.5, MIL-5) of my pile and of the opponent's known pile, and what
    # each card would add to them; functions of my cards and the public ``won`` sections, appended:
    ("pile_combos", 2),          # combo_points of my pile (won + my discards) / of the opponent's won
                                 # cards (his discards are hidden, H.4), / 100
    ("combo_gain", 2 * N),       # per card in neither: what it would add to my pile / to the
                                 # opponent's won cards, / 100 (combos.combo_gains)
])
OBS_SIZE = OBS.size
OBS_V0_SIZE = OBS.shown_void.start  # the v0 observation is this prefix (scripts/migrate_policy.py)
OBS_V1_SIZE = OBS.pile_combos.start  # the v1 observation is this prefix (scripts/migrate_policy.py)
_V2_SLICE = slice(OBS.pile_combos.start, OBS.combo_gain.stop)  # the v2 sections, contiguous at the end
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


class _PackOf:
    """``MilloneGame.pack``: the Bolognese pack on the class (ids, names, sizes), and on a game the
    pack whose strength table follows its ``round_suits_inverted`` option (M-3). A non-data
    descriptor, so nothing is stored on the instance (``clone``/``to_dict`` stay unchanged)."""

    def __get__(self, obj, objtype=None) -> Pack:
        if obj is None or obj.config.round_suits_inverted:
            return BOLOGNESE
        return BOLOGNESE_UNIFORM


class MilloneGame(TrickGame):
    name = "millone"
    pack = _PackOf()
    num_players = PLAYERS
    team_of = (0, 1)  # each player is his own side
    num_teams = 2
    hand_size = TRICKS
    num_actions = NUM_ACTIONS
    Phase = Phase
    Config = MilloneConfig
    OBS = OBS
    STATE = STATE
    # B.5 points are at most 846 (combos.COMBO_BOUND): a pile's, or what one card adds, / COMBO_SCALE
    OBS_HIGH = {"pile_combos": combos.COMBO_BOUND / COMBO_SCALE, "combo_gain": combos.COMBO_BOUND / COMBO_SCALE}
    EXTRA_BLOCK_FIELDS = (
        ("stock", (N,)),                # cards not yet dealt (hidden from both, H.4)
        ("exchanged", (N,)),            # the card paid for the Matto (public, decision 2)
        ("claim_shown", (PLAYERS, N)),  # scoring cards shown by a claim (public, MIL-3, H.4)
        (TrickGame.SHOWN_VOID, (PLAYERS, 5)),  # public voids (H.1.1), kept by play_card
    )

    def __init__(self, config: MilloneConfig | None = None, seed: int | None = None,
                 first_dealer: int | None = None):
        super().__init__(config, seed)
        self.hands_played = 0
        self.truncated = False  # the game ended at max_hands (a draw, decision 6)
        if first_dealer is None:
            first_dealer = self.config.first_dealer
        if first_dealer < 0:
            first_dealer = int(self.rng.integers(PLAYERS))  # MIL-2.1: chosen at random
        self.start_hand(first_dealer)

    def next_game(self, seed: int | None = None) -> MilloneGame:
        """A new game; the player who did not deal the last hand deals first (decision 7)."""
        if seed is None:
            seed = int(self.rng.integers(2**63))
        return MilloneGame(self.config, seed, first_dealer=self.next_seat(self.dealer))

    def opponent(self, seat: int) -> int:
        return 1 - seat

    # --- deal (MIL-2) ------------------------------------------------------------------------------
    def start_hand(self, dealer: int, deck: np.ndarray | None = None) -> None:
        """MIL-2.2: four rounds of 5, non-dealer first, the dealer taking 7 in the last; the rest of
        ``deck`` is the stock, dealt after the first discard in that order (MIL-2.5). Then the claim
        check (MIL-2.3, MIL-3).

        ``deck`` (a permutation of the 62 ids) fixes the deal, for tests and golden games; otherwise
        it is shuffled from the game's random stream (so one seed reproduces everything).
        """
        self._reset_hand()
        self.dealer = dealer
        self.deck = self.shuffled_pack() if deck is None else np.asarray(deck, dtype=np.int64)
        self.exchange_card = -1  # card paid for the Matto this hand
        self.exchange_from_discards = False
        self.exchange_owed = -1  # seat that owes a deferred payment (MIL-4.3)
        self.discarded: list[list[int]] = [[], []]  # each seat's discards in order (history, replay)
        nd = self.opponent(dealer)
        pos = 0
        for r in range(FIRST_ROUNDS):
            for seat in (nd, dealer):
                k = DEALER_LAST_PACKET if (seat == dealer and r == FIRST_ROUNDS - 1) else PACKET
                self.deal_cards(seat, self.deck[pos:pos + k])
                pos += k
        self.stock[self.deck[pos:]] = True
        self.stock_pos = pos
        self.phase = Phase.DISCARD
        self.current = self.leader = nd  # MIL-2.4: the non-dealer discards first
        self._check_claims()

    def set_deck(self, dealer: int, deck) -> None:
        """Start the hand from an explicit deck order (62 ids, MIL-2.2 order) — golden games, tests."""
        deck = np.asarray(deck)
        if deck.shape != (N,) or sorted(deck.tolist()) != list(range(N)):
            raise ValueError(f"deck must be a permutation of the {N} card ids 0..{N - 1}")
        if dealer not in (0, 1):
            raise ValueError(f"dealer must be seat 0 or 1, got {dealer!r}")
        self.start_hand(dealer, deck)

    def _deal_second_phase(self) -> None:
        """MIL-2.5: two more rounds of 5 each, non-dealer first, from the stock."""
        nd, pos = self.opponent(self.dealer), self.stock_pos
        for _ in range(SECOND_ROUNDS):
            for seat in (nd, self.dealer):
                cards = self.deck[pos:pos + PACKET]
                self.deal_cards(seat, cards)
                self.stock[cards] = False
                pos += PACKET
        self.stock_pos = pos

    # --- what a state must hold (checked when a state comes from outside: TrickGame.check_state) ------
    def card_places(self) -> list[tuple[str, np.ndarray]]:
        return super().card_places() + [("stock", self.stock)]  # MIL-2.5: the stock, until dealt

    def phase_problems(self) -> list[str]:
        """MIL-2.2, 2.5: the stock is the deck after ``stock_pos``; MIL-4.1: in the play each seat holds
        20 less the cards it played."""
        out = []
        stock = np.zeros(N, dtype=bool)
        stock[np.asarray(self.deck)[self.stock_pos:]] = True
        if not np.array_equal(stock, self.stock):
            out.append(f"the stock is not the deck's cards after position {self.stock_pos} (MIL-2.5)")
        if self.phase == Phase.PLAY:
            have = (self.hands.sum(axis=1) + self.played.sum(axis=1)).tolist()
            if have != [TRICKS] * PLAYERS:
                out.append(f"phase PLAY: hand plus played cards are {have}, not {TRICKS} each (MIL-4.1)")
        return out

    # --- the game claim (MIL-3) --------------------------------------------------------------------
    def _check_claims(self) -> None:
        mdc = self.config.moors_double_count
        combos = [combo_points(self.hands[p], moors_double_count=mdc) for p in range(PLAYERS)]
        claims = [int(self.scores[p]) + combos[p] for p in range(PLAYERS)]
        claimant = int(claimants(claims))  # MIL-3.1-3.3
        if claimant < 0:
            return
        shown = scoring_cards(self.hands[claimant], moors_double_count=mdc)
        self.claim_shown[claimant] = shown
        scores = [combos[p] if p == claimant else 0 for p in range(PLAYERS)]
        self.scores += scores
        self.history.append({
            "hand": self.hands_played, "dealer": self.dealer, "claim": True, "claimant": claimant,
            "claims": claims, "combos": combos, "shown": BOLOGNESE.names_of(shown), "scores": scores,
        })
        self._end_game(claimant)

    def _end_game(self, winner: int) -> None:
        self.phase = Phase.GAME_OVER
        self.game_over = True
        self.winner = winner

    # --- the driver API ----------------------------------------------------------------------------
    def legal_mask(self) -> np.ndarray:
        if self.phase == Phase.PLAY:
            return self.play_mask()
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        if self.phase != Phase.GAME_OVER:
            mask[:N] = self.hands[self.current] & DISCARDABLE  # MIL-2.4, MIL-2.6
        return mask

    def apply_unchecked(self, action: int) -> None:
        if self.phase == Phase.PLAY:
            self.play_card(self.current, action)  # no signals in Millone: ids >= 62 are never legal
        elif self.phase == Phase.DISCARD:
            self.discard(action)
        else:
            self.second_discard(action)

    # --- phase: DISCARD (MIL-2.4), then the second phase of the deal (MIL-2.5) -----------------------
    def discard(self, card: int) -> None:
        seat = self.current
        self.take_from_hand(seat, card)
        self.discards[seat, card] = True  # face down into his own pile
        self.discarded[seat].append(int(card))
        if self.discards[seat].sum() < FIRST_DISCARD:
            return
        if seat != self.dealer:
            self.current = self.dealer  # the dealer discards next
            return
        self._deal_second_phase()
        self.phase = Phase.SECOND_DISCARD  # MIL-2.6: the dealer alone discards 2 more
        self.current = self.dealer

    # --- phase: SECOND_DISCARD (MIL-2.6) --------------------------------------------------------------
    def second_discard(self, card: int) -> None:
        d = self.dealer
        self.take_from_hand(d, card)
        self.discards[d, card] = True
        self.discarded[d].append(int(card))
        if self.discards[d].sum() == FIRST_DISCARD + SECOND_DISCARD:
            self.phase = Phase.PLAY
            self.current = self.leader = self.opponent(d)  # MIL-4.1: the non-dealer leads

    # --- phase: PLAY (MIL-4) ----------------------------------------------------------------------------
    def pile(self, seat: int) -> np.ndarray:
        """bool[62]: ``seat``'s pile now: tricks taken, the Matto, payments, and his discards."""
        return self.won[seat] | self.discards[seat]

    def on_excuse_trick(self, owner: int, winner: int) -> None:
        """MIL-4.3: the Matto went into its player's pile (engine); he pays an empty card at once,
        from the cards he has won in tricks, or owes it (decision 3)."""
        if owner == winner:  # pragma: no cover - the Matto never wins (B.2.4)
            return
        self.exchange_owed = owner
        self._pay_if_able(owner)

    def on_trick_closed(self, winner: int) -> None:
        """MIL-4.3, M-5: an owed payment is made at the end of the first trick that brings its debtor
        an empty card."""
        if self.exchange_owed == winner:
            self._pay_if_able(winner)

    def _pay_if_able(self, payer: int) -> None:
        """Decision 1 during the play: an empty card from ``payer``'s cards won in tricks (never his
        hidden discards), if he has one; the debt (``exchange_owed``) stands otherwise."""
        card = fool_payment(self.won[payer], empty_only=True, moors_double_count=self.config.moors_double_count)
        if card >= 0:
            self._pay(payer, self.opponent(payer), card)
            self.exchange_owed = -1

    def _pay(self, payer: int, receiver: int, card: int) -> None:
        self.exchange_from_discards = bool(self.discards[payer, card])
        self.discards[payer, card] = False
        self.won[payer, card] = False
        self.won[receiver, card] = True  # public from now on (decision 2)
        self.exchanged[card] = True
        self.exchange_card = card

    def _settle_matto(self) -> dict:
        """End of hand: MIL-4.4 surrender (decision 4) or the payment still owed (decision 3).

        The hand's record ``"matto"``: ``owner`` (-1: no Matto played), ``paid`` (the card's name or
        None), ``deferred`` (the payment was still owed at the end of the hand: made now from the
        whole pile, or cancelled by a surrender), ``surrendered`` (MIL-4.4)."""
        owner = self.excuse_owner
        info = {"owner": owner, "paid": None, "deferred": self.exchange_owed >= 0, "surrendered": False}
        if owner < 0:
            return info
        other = self.opponent(owner)
        if self.tricks_won[owner] == 0:  # MIL-4.4: the Matto goes to the opponent instead
            # (no payment was made: a player who won no trick has won no empty card, decision 3)
            self.won[owner, MATTO] = False
            self.won[other, MATTO] = True
            self.exchange_owed = -1
            info["surrendered"] = True
            return info
        if self.exchange_owed >= 0:
            card = fool_payment(self.pile(owner), empty_only=False,
                                moors_double_count=self.config.moors_double_count)
            self._pay(owner, other, card)
            self.exchange_owed = -1
        if self.exchange_card >= 0:
            info["paid"] = BOLOGNESE.names[self.exchange_card]
        return info

    # --- scoring (MIL-5), the game (MIL-6) -------------------------------------------------------------
    def on_hand_played(self) -> None:
        matto = self._settle_matto()
        piles = np.stack([self.pile(p) for p in range(PLAYERS)])
        last = self.tricks[-1][1]
        cp, combos, scores = hand_scores(piles, last, moors_double_count=self.config.moors_double_count)
        self.scores += scores
        self.history.append({
            "hand": self.hands_played, "dealer": self.dealer, "card_points": cp, "last_trick": last,
            "combos": combos, "scores": scores, "tricks_won": self.tricks_won.tolist(),
            "pile_sizes": [int(piles[p].sum()) for p in range(PLAYERS)], "matto": matto,
            "discards": [list(d) for d in self.discarded],
            "tricks": [([[int(s), int(c)] for s, c in t], int(w)) for t, w in self.tricks],
        })
        self.hands_played += 1
        winner = game_result(self.scores.tolist(), self.hands_played, self.config.max_hands)
        if winner is not None:
            self.truncated = winner == -1
            self._end_game(winner)
        else:
            self.start_hand(self.next_seat(self.dealer))  # MIL-2.1: players deal alternately

    # --- encoders ---------------------------------------------------------------------------------------
    def _tail(self, first: int) -> list[float]:
        """The scalar sections from ``leader`` to ``phase`` (the same in OBS and STATE), seen from
        ``first`` (the observer; seat 0 in STATE). Built as a list: one write into the vector."""
        second = 1 - first
        t = [0.0] * _TAIL
        t[(self.leader - first) % PLAYERS] = 1.0                          # leader
        hs = self.hand_sizes
        t[2], t[3] = hs[first] / MAX_HAND, hs[second] / MAX_HAND          # hand_sizes
        t[4] = (N - self.stock_pos) / STOCK_SIZE                          # stock_size
        tw = self.tricks_won.tolist()
        t[5], t[6] = tw[first] / TRICKS, tw[second] / TRICKS              # tricks_won
        if self.exchange_owed >= 0:
            t[7 + (self.exchange_owed - first) % PLAYERS] = 1.0            # exchange_owed
        sc = self.scores.tolist()
        t[9], t[10] = sc[first] / TARGET, sc[second] / TARGET             # scores
        t[11] = min(self.hands_played / self.config.max_hands, 1.0)       # hands_played
        t[12 + int(self.phase)] = 1.0                                      # phase
        return t

    def observation(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """What ``seat`` knows (RULES.md H.1, H.1.1, H.2, H.4), as a float32 vector laid out by ``OBS``.

        The card sections (those before the scalars, ``_OBS_HEAD[seat]``, and the v1 ``shown_void``,
        ``_OBS_TAIL[seat]``) are copied from the state block in one compiled pass (``kernels.gather_cells``
        through ``_OBS_GATHER``); the numbers between them are one list (``seat_from_dealer`` + ``_tail``);
        the v2 sections at the end one slice (:meth:`combo_view`).
        """
        o = np.empty(OBS_SIZE, dtype=np.float32) if out is None else out
        gather_cells(self.block, _OBS_GATHER[seat], _OBS_POS, o)  # the head and shown_void
        d = (seat - self.dealer) % PLAYERS
        o[_GATHERED:OBS.phase.stop] = [float(d == 0), float(d == 1)] + self._tail(seat)
        self.combo_view(seat, o[_V2_SLICE])
        return o

    def combo_view(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """float32[126]: the observation's ``pile_combos`` and ``combo_gain`` of ``seat``: the B.5 points of
        its pile (:meth:`pile`: won cards and its own discards) and of the cards the opponent won (his
        discards are hidden from ``seat``, H.4), and what each card in neither would add to them, /
        ``COMBO_SCALE`` (``combos.seat_piles_view``: one compiled call, each pile's values memoised)."""
        o = np.empty(2 + 2 * N, dtype=np.float32) if out is None else out
        mdc = self.config.moors_double_count
        keys, values = combos.pile_memo(mdc, 2)
        combos.seat_piles_view(self.won, self.discards, seat, mdc, 2, combos.tables_buffer(), keys, values, o)
        return o

    def state_vector(self, out: np.ndarray | None = None) -> np.ndarray:
        """Everything (both hands, both discards, the stock), for centralised critics in training only."""
        o = np.empty(STATE_SIZE, dtype=np.float32) if out is None else out
        o[:_STATE_GATHERED] = self.block[_STATE_HEAD]
        head = [0.0] * 4  # dealer, current
        head[self.dealer] = 1.0
        if not self.game_over:
            head[2 + self.current] = 1.0
        o[_STATE_GATHERED:STATE.phase.stop] = head + self._tail(0)
        o[STATE.shown_void] = self.block[_STATE_TAIL]
        return o

    # --- what a player may not know (RULES.md H.4, H.6), for the leak tests ---------------------------
    def hidden_from(self, seat: int) -> dict[str, np.ndarray]:
        """Where the cards ``seat`` cannot see are: the opponent's hand, his discards, the stock."""
        opp = self.opponent(seat)
        return {"hand": self.hands[opp].copy(), "discards": self.discards[opp].copy(),
                "stock": self.stock.copy()}

    @classmethod
    def result_view(cls, result: dict, seat: int) -> dict:
        """What ``seat`` knows of a finished hand's record ``result`` (a ``history`` entry; the AEC
        env's ``info["last_result"]``), RULES.md H.4:

        * ``"discards"`` (per seat): his own, never the opponent's (MIL-2.4); the opponent's entry is
          an empty list and ``"discards_hidden"`` (per seat) counts the cards left out. A card paid
          for the Matto from the discards is public anyway (``matto.paid``, MIL-4.3);
        * a claim (MIL-3): the claimant shows his combinations, so his ``combos``/``claims`` are
          public; the other player's are known to that player alone (``None`` in the claimant's view).

        The score parts (``card_points``, ``combos`` of a played hand) are the announced count.
        Applying it again to its own output changes nothing."""
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


def _build_gathers():
    """Per-seat index tables from block positions to the card sections of OBS (and of STATE): the
    head (the v0 card sections, before the scalars) and the tail (``shown_void``, after them)."""
    ix = MilloneGame.block_index()
    per_seat = []
    for seat in range(PLAYERS):
        rel = np.array([seat, 1 - seat])
        parts = [
            ix.hands[seat],                  # hand
            ix.discards[seat],               # my_discards
            ix.played[rel].ravel(),          # played
            ix.trick_by[rel].ravel(),        # trick
            ix.won[rel].ravel(),             # won (team = seat in Millone)
            ix.exchanged,                    # exchanged
            ix.claim_shown[rel].ravel(),     # claim_shown
        ]
        per_seat.append(np.concatenate(parts))
    assert len(per_seat[0]) == OBS.seat_from_dealer.start, "gathered sections must precede the scalars"
    state = np.concatenate([ix.hands.ravel(), ix.discards.ravel(), ix.stock, ix.played.ravel(),
                            ix.trick_by.ravel(), ix.won.ravel(), ix.exchanged, ix.claim_shown.ravel()])
    assert len(state) == STATE.dealer.start
    tail = [ix.shown_void[np.array([seat, 1 - seat])].ravel() for seat in range(PLAYERS)]  # seat-relative
    return per_seat, tail, state, ix.shown_void.ravel()


_OBS_HEAD, _OBS_TAIL, _STATE_HEAD, _STATE_TAIL = _build_gathers()
_GATHERED = len(_OBS_HEAD[0])
_STATE_GATHERED = len(_STATE_HEAD)
# for the batched engine's encoder: every gathered cell of a seat's observation and its position
_OBS_GATHER, _OBS_POS, _STATE_GATHER, _STATE_POS = mirror_gathers(
    _OBS_HEAD, _OBS_TAIL, _STATE_HEAD, _STATE_TAIL, OBS.shown_void, STATE.shown_void)
