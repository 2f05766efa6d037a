"""Partita: the rules (RULES.md Part E), as a PettingZoo-free rules object.

Four players in fixed teams ``{0, 2}`` and ``{1, 3}`` (PAR-3.1) play the 54-card French-suited pack
(PAR-1). A game is ``deals_per_game`` deals (PAR-3.2). Each deal has two phases:

``DISCARD``  the dealer, holding 15 cards (PAR-4.1), discards 2 into his team's pile, one decision
             per card (PAR-4.2–4.6); a discarded trump is announced and becomes public (PAR-4.5).
``PLAY``     the dealer leads (PAR-5.1); 13 tricks (PAR-5.4) under follow / trump / Fool (PAR-5.2,
             5.3); with ``partita_signals = "bolognese3"`` a player may choose one public signal
             just before a card (PAR-7.1).

After the 13th trick the deal is scored (PAR-6: ``X = ceil(n / 2) + Σ counting values + 5 for the
Fool``, ``score = X − 40``, zero-sum) and the next deal starts with ``next(dealer)`` dealing (PAR-3.3),
until the game is over (``GAME_OVER``). ``next_game()`` starts the following game, dealt first by the
partner of the last dealer (PAR-3.3).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import njit

from ..cards import FRENCH54, TRUMP
from ..config import Config, option
from ..engine import NUM_SIGNALS, Layout, TrickGame, mirror_gathers, played_trick_table
from ..kernels import gather_cells, play_tables

N = FRENCH54.size  # 54 cards
PLAYERS = 4
HAND_SIZE = 13  # PAR-4.1, PAR-5.4
DEALER_EXTRA = 2  # PAR-4.1: the dealer takes the last 2
DISCARD_SIZE = 2  # PAR-4.2
FOOL = FRENCH54.excuse
FOOL_POINTS = 5  # PAR-6.3
HALF_TOTAL = 40  # PAR-6.5/6.6: 80 points per deal; score = X − 40
NUM_ACTIONS = N + NUM_SIGNALS  # card ids 0..53 in every phase, then the three signals


def _cards(names: str) -> np.ndarray:
    return FRENCH54.mask(names.split())


# PAR-4.3: never discarded. PAR-4.4: trumps II–XX only when there is no other option.
FORBIDDEN_DISCARD = _cards("KS KC KD KH I XXI Fool")
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


def card_bits(cards: np.ndarray) -> np.uint64:
    """bool[54] (or card ids) -> the uint64 card set the kernels below take."""
    return _T.to_bits(cards)


@njit(cache=True, nogil=True)
def popcount(cards: np.uint64) -> int:
    """The number of cards in a set."""
    n = 0
    while cards:
        cards &= cards - np.uint64(1)
        n += 1
    return n


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
    """PAR-6.2–6.4: points X of a team's pile (bool[54]) — :func:`pile_points` of its card set."""
    return int(pile_points(card_bits(pile)))


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
# the scalar sections, pending_signal .. phase, offsets within them (PartitaGame._scalars)
_N_SCALARS = OBS.phase.stop - OBS.pending_signal.start
_SEAT_FROM_DEALER, _LEADER, _HAND_SIZES, _TRICKS_WON, _SCORES, _DEAL, _PHASE = (
    getattr(OBS, name).start - OBS.pending_signal.start
    for name in ("seat_from_dealer", "leader", "hand_sizes", "tricks_won", "scores", "deal", "phase"))
assert OBS_V0_SIZE == 54 * 13 + 72 + 20 + 3 + 4 + 4 + 4 + 2 + 2 + 2 + 3 == 818
assert OBS_SIZE == OBS_V0_SIZE + 54 * 4 == 1034

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


class PartitaGame(TrickGame):
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
    EXTRA_BLOCK_FIELDS = (("public_discards", (N,)),   # PAR-4.5: announced trumps
                          (TrickGame.SHOWN_VOID, (PLAYERS, 5)),  # public voids, kept by play_card
                          (TrickGame.SIGNAL_CARD, (N, NUM_SIGNALS)))  # H.1.1: which card carried a signal

    def __init__(self, config: PartitaConfig | None = None, seed: int | None = None,
                 first_dealer: int | None = None):
        super().__init__(config, seed)
        self.deals_played = 0
        if first_dealer is None:
            first_dealer = self.config.first_dealer
        if first_dealer < 0:
            first_dealer = int(self.rng.integers(PLAYERS))  # PAR-3.3: chosen at random
        self.start_deal(first_dealer)

    def next_game(self, seed: int | None = None) -> PartitaGame:
        """PAR-3.3: the next game is dealt first by the partner of the last dealer of this one."""
        if seed is None:
            seed = int(self.rng.integers(2**63))
        return PartitaGame(self.config, seed, first_dealer=self.partner(self.dealer))

    # --- deal ---------------------------------------------------------------------------------------
    def start_deal(self, dealer: int, deck: np.ndarray | None = None) -> None:
        """PAR-4.1: 13 cards to each player from the dealer's right, the last 2 to the dealer.

        ``deck`` (a permutation of the 54 ids) fixes the deal, for tests and golden games; otherwise
        it is shuffled from the game's random stream.
        """
        self._reset_hand()
        self.dealer = dealer
        deck = self.shuffled_pack() if deck is None else np.asarray(deck)
        for i in range(PLAYERS):
            seat = (dealer + 1 + i) % PLAYERS
            self.deal_cards(seat, deck[HAND_SIZE * i: HAND_SIZE * (i + 1)])
        self.deal_cards(dealer, deck[PLAYERS * HAND_SIZE:])
        self.discard_trumps_needed = discard_trumps_needed(card_bits(self.hands[dealer]))  # PAR-4.4
        self.phase = Phase.DISCARD
        self.current = self.leader = dealer

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
        if self.phase == Phase.DISCARD:
            return self.discard_mask()
        if self.phase == Phase.PLAY:
            return self.play_mask()
        return np.zeros(NUM_ACTIONS, dtype=bool)

    def apply_unchecked(self, action: int) -> None:
        if self.phase == Phase.DISCARD:
            self.discard(action)
        else:
            self.play_or_signal(action)

    # --- phase: DISCARD (PAR-4.2 – 4.6) -------------------------------------------------------------
    def discard_mask(self) -> np.ndarray:
        """A card may go now if the discard can still end as a legal set (PAR-4.3, PAR-4.4):
        :func:`discard_legal`, shared with the batched engine."""
        d = self.dealer
        ok = discard_legal(card_bits(self.hands[d]), card_bits(self.discards[d]), self.discard_trumps_needed)
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        mask[:N] = _T.from_bits(ok)
        return mask

    def discard(self, card: int) -> None:
        d = self.dealer
        self.take_from_hand(d, card)
        self.discards[d, card] = True  # PAR-4.2: into the dealer's team pile, face down
        if FRENCH54.suit[card] == TRUMP:
            self.public_discards[card] = True  # PAR-4.5: announced and shown
        if self.discards[d].sum() == DISCARD_SIZE:
            self.phase = Phase.PLAY
            self.current = self.leader = d  # PAR-5.1: the dealer leads

    # --- phase: PLAY (PAR-5) ----------------------------------------------------------------------
    def signal_allowed(self, seat: int) -> bool:
        return self.config.partita_signals == "bolognese3"  # PAR-7.1: everyone, when agreed

    # --- what a state must hold (checked when a state comes from outside: TrickGame.check_state) ------
    def phase_problems(self) -> list[str]:
        """PAR-4.1, 4.2, 5.4: the dealer holds 15 less his discards while discarding, then every seat 13
        less the cards it played; only the dealer discards, two cards in the end."""
        d, held, out = self.dealer, self.hands.sum(axis=1), []
        made = self.discards.sum(axis=1)
        if made.sum() != made[d]:
            out.append(f"seats other than the dealer (seat {d}) hold discards (PAR-4.2)")
        if self.phase == Phase.DISCARD:
            want = [HAND_SIZE + (DEALER_EXTRA - made[d] if s == d else 0) for s in range(PLAYERS)]
            if made[d] >= DISCARD_SIZE or self.played.any():
                out.append(f"phase DISCARD with {made[d]} discards made and {self.played.sum()} cards played")
        else:
            want = [HAND_SIZE - self.played[s].sum() for s in range(PLAYERS)]
            if made[d] != DISCARD_SIZE:
                out.append(f"phase {self.phase.name} but the dealer discarded {made[d]} cards, not {DISCARD_SIZE}")
        if held.tolist() != [int(x) for x in want]:
            out.append(f"the hands hold {held.tolist()} cards; phase {self.phase.name} means {want} (PAR-4.1)")
        if not (self.public_discards <= self.discards[d]).all() or (
                self.public_discards != (self.discards[d] & (FRENCH54.suit == TRUMP))).any():
            out.append("the announced discards are not the dealer's discarded trumps (PAR-4.5)")
        return out

    # --- scoring (PAR-6) and the next deal (PAR-3) ----------------------------------------------
    def team_piles(self) -> np.ndarray:
        """bool[2, 54]: each team's cards at the end of the deal (tricks, the Fool, the discards)."""
        piles = self.won.copy()
        piles[TEAM_OF[self.dealer]] |= self.discards[self.dealer]
        return piles

    def on_hand_played(self) -> None:
        piles = self.team_piles()
        points = [deal_points(piles[t]) for t in range(2)]
        scores = [p - HALF_TOTAL for p in points]  # PAR-6.6
        self.scores += scores
        self.history.append({
            "deal": self.deals_played, "dealer": self.dealer, "points": points, "scores": scores,
            "tricks_won": self.tricks_won.tolist(),
            "fool_team": int(np.flatnonzero(piles[:, FOOL])[0]),
            "discards": np.flatnonzero(self.discards[self.dealer]).tolist(),
            "tricks": [([[int(s), int(c)] for s, c in t], int(w)) for t, w in self.tricks],
        })
        self.deals_played += 1
        if self.deals_played >= self.config.deals_per_game:
            self.phase = Phase.GAME_OVER
            self.game_over = True
            total = int(self.scores[0])
            self.winner = 0 if total > 0 else 1 if total < 0 else -1  # PAR-6.7: 0 is a draw
        else:
            self.start_deal(self.next_seat(self.dealer))  # PAR-3.3

    # --- encoders -----------------------------------------------------------------------------------
    def observation(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """What ``seat`` knows (RULES.md H.1, H.1.1, H.2, H.5), as a float32 vector laid out by ``OBS``.

        The card sections (``_OBS_HEAD[seat]`` before the scalars, ``_OBS_TAIL[seat]`` for the v1
        ``signal_cards``; built below from the same field names) are copied from the state block in one
        compiled pass (``kernels.gather_cells`` through ``_OBS_GATHER``); the few numbers after the head
        are one list (:meth:`_scalars`); ``played_trick`` is a lookup of ``card_trick``. These writes cover
        every entry (checked where the gathers are built).
        """
        o = np.empty(OBS_SIZE, dtype=np.float32) if out is None else out
        gather_cells(self.block, _OBS_GATHER[seat], _OBS_POS, o)  # the head and signal_cards
        o[_GATHERED:OBS.phase.stop] = self._scalars(seat)
        _PLAYED_TRICK.take(self.card_trick, out=o[OBS.played_trick])
        return o

    def _scalars(self, seat: int) -> list[float]:
        """The observation's sections from ``pending_signal`` to ``phase``, seen from ``seat``, as one list
        (one write into the vector)."""
        x = [0.0] * _N_SCALARS
        if self.pending_signal >= 0 and seat == self.current:
            x[self.pending_signal] = 1.0                                      # pending_signal
        x[_SEAT_FROM_DEALER + (seat - self.dealer) % PLAYERS] = 1.0           # seat_from_dealer
        x[_LEADER + (self.leader - seat) % PLAYERS] = 1.0                     # leader
        hs = self.hand_sizes
        for i in range(PLAYERS):
            x[_HAND_SIZES + i] = hs[(seat + i) % PLAYERS] / (HAND_SIZE + DEALER_EXTRA)   # hand_sizes
        my = TEAM_OF[seat]
        tw, sc = self.tricks_won.tolist(), self.scores.tolist()
        x[_TRICKS_WON], x[_TRICKS_WON + 1] = tw[my] / HAND_SIZE, tw[1 - my] / HAND_SIZE   # tricks_won
        x[_SCORES], x[_SCORES + 1] = sc[my] / HALF_TOTAL, sc[1 - my] / HALF_TOTAL        # scores
        k = self.config.deals_per_game
        x[_DEAL], x[_DEAL + 1] = self.deals_played / k, (k - self.deals_played) / k      # deal
        x[_PHASE + int(self.phase)] = 1.0                                     # phase
        return x

    def state_vector(self, out: np.ndarray | None = None) -> np.ndarray:
        """Everything, for centralised critics in training only (absolute seats, ``STATE`` layout)."""
        o = np.empty(STATE_SIZE, dtype=np.float32) if out is None else out
        o[:_STATE_GATHERED] = self.block[_STATE_HEAD]
        o[_STATE_GATHERED:] = 0.0
        o[STATE.signal_cards] = self.block[_STATE_TAIL]
        o[STATE.played_trick] = _PLAYED_TRICK[self.card_trick]
        if self.pending_signal >= 0:
            o[STATE.pending_signal.start + self.pending_signal] = 1.0
        o[STATE.dealer.start + self.dealer] = 1.0
        if not self.game_over:
            o[STATE.current.start + self.current] = 1.0
        o[STATE.leader.start + self.leader] = 1.0
        o[STATE.tricks_won] = self.tricks_won / HAND_SIZE
        o[STATE.scores] = self.scores / HALF_TOTAL
        k = self.config.deals_per_game
        o[STATE.deal] = (self.deals_played / k, (k - self.deals_played) / k)
        o[STATE.phase.start + int(self.phase)] = 1.0
        return o

    # --- what a player may not know (RULES.md H.6), for the leak tests -----------------------------
    def hidden_from(self, seat: int) -> np.ndarray:
        """bool[4, 54] of hand cards and bool[54] of discards that ``seat`` cannot see."""
        hidden_hands = self.hands.copy()
        hidden_hands[seat] = False
        hidden_discards = self.discards[self.dealer] & ~self.public_discards
        if seat == self.dealer:
            hidden_discards = np.zeros(N, dtype=bool)
        return hidden_hands, hidden_discards

    @classmethod
    def result_view(cls, result: dict, seat: int) -> dict:
        """What ``seat`` knows of a finished deal's record ``result`` (a ``history`` entry; the AEC
        env's ``info["last_result"]``): everything but the dealer's discards, of which a seat other
        than the dealer knows only the announced trumps (PAR-4.5, RULES.md H.5). ``"discards"`` lists
        the known ones and ``"discards_hidden"`` counts the others. The score parts (``points``) are
        the announced count. Applying it again to its own output changes nothing."""
        view = dict(result)
        if "discards" in result and seat != result["dealer"]:
            known = [c for c in result["discards"] if FRENCH54.suit[c] == TRUMP]
            view["discards"] = known
            view["discards_hidden"] = result.get("discards_hidden", 0) + len(result["discards"]) - len(known)
        elif "discards" in result:
            view["discards_hidden"] = result.get("discards_hidden", 0)
        return view

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


def _build_gathers():
    """Per-seat index tables from block positions to the card sections of OBS (and of STATE): the
    head (the v0 card sections, before the scalars) and the tail (``signal_cards``, after them)."""
    ix = PartitaGame.block_index()
    per_seat = []
    for seat in range(PLAYERS):
        rel, my = REL[seat], TEAM_OF[seat]
        parts = [
            ix.hands[seat],                 # hand
            ix.discards[seat],              # my_discards: only the dealer has any (PAR-4.2)
            ix.public_discards,             # public_discards
            ix.played[rel].ravel(),         # played
            ix.trick_by[rel].ravel(),       # trick
            ix.won[[my, 1 - my]].ravel(),   # won
            ix.signal_table[rel].ravel(),   # signals
            ix.shown_void[rel].ravel(),     # shown_void
        ]
        per_seat.append(np.concatenate(parts))
    assert len(per_seat[0]) == OBS.pending_signal.start, "gathered sections must precede the scalars"
    state = np.concatenate([ix.hands.ravel(), ix.discards.ravel(), ix.public_discards, ix.played.ravel(),
                            ix.trick_by.ravel(), ix.won.ravel(), ix.signal_table.ravel(),
                            ix.shown_void.ravel()])
    assert len(state) == STATE.pending_signal.start
    tail = [ix.signal_card.ravel() for _ in range(PLAYERS)]  # absolute card ids: the same for every seat
    assert len(tail[0]) == OBS.signal_cards.stop - OBS.signal_cards.start
    return per_seat, tail, state, ix.signal_card.ravel()


_OBS_HEAD, _OBS_TAIL, _STATE_HEAD, _STATE_TAIL = _build_gathers()
_GATHERED = len(_OBS_HEAD[0])
# the observation's four writes (head, scalars, signal_cards, played_trick) cover it end to end
assert _GATHERED == OBS.pending_signal.start and OBS.phase.stop == OBS.signal_cards.start
assert OBS.signal_cards.stop == OBS.played_trick.start and OBS.played_trick.stop == OBS_SIZE
_STATE_GATHERED = len(_STATE_HEAD)
# for the batched engine's encoder: every gathered cell of a seat's observation and its position
_OBS_GATHER, _OBS_POS, _STATE_GATHER, _STATE_POS = mirror_gathers(
    _OBS_HEAD, _OBS_TAIL, _STATE_HEAD, _STATE_TAIL, OBS.signal_cards, STATE.signal_cards)
