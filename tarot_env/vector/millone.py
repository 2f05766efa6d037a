"""Millone, vectorised: ``num_envs`` games of RULES.md Part D stepped together with numpy.

The rules are those of :mod:`tarot_env.rules.millone` (the readable reference), on arrays with the
batch axis first. The hot path — the legal masks of the discards and of the play, the two-card trick,
the observation updates — is boolean algebra over card tables built once from the reference's
constants; the rare, per-hand parts call the reference's own functions row by row:

* legal moves: each hand, pile and discard set is a 62-bit set (one uint64 per seat), so the
  discard rule (MIL-2.4, 2.6: no Honours, no Kings) is one AND, and follow suit / else trump / else
  anything / the Matto always (MIL-4.2, B.4) a few integer operations per row, unpacked once into
  the ``[B, 65]`` mask (the three signal ids are never legal);
* the trick: two cards, so its winner is one lookup in ``BEATS[lead, card]``, a table filled by the
  engine's own ``trick_winner`` for every pair of cards (and per pack: ``round_suits_inverted``);
* per-card state: every seat's observation card sections are kept up to date incrementally by
  :class:`~tarot_env.vector.base.BlockMirror` through the reference's gather tables
  (``_OBS_GATHER``, placed by ``_OBS_POS``: the v1 ``shown_void`` follows the scalars); the stock,
  which no seat sees, is kept beside it (``hidden``); the reference's state ``block`` of a row is
  read back from it (``m.block``, ``state()``); the second card of a trick that does not follow
  writes the public voids (``SHOWS_VOID``/``VOID_CELLS``, RULES.md H.1.1);
* the 18 scalar features of the acting seat are computed from per-row integers when encoding;
* per hand, every row at once: the pile combinations (D.5) and the claim check after the first phase
  of the deal (MIL-3), through ``combos.combo_points_many`` (B.5 for many card sets); per row, in
  Python, only the rare cases: the Matto payments (MIL-4.3, decisions 1–4: the reference's
  ``fool_payments`` for the rows that pay) and the cards shown by a claim (``scoring_cards``);
* dealing: each row owns a ``np.random.Generator`` seeded like ``MilloneGame(config, seed)`` (first
  dealer ``rng.integers(2)``, one ``rng.permutation(62)`` per hand, the next game seeded from
  ``rng.integers(2**63)`` and dealt first by the player who did not deal the last hand, decision 7),
  so row ``i`` plays exactly the reference game of seed ``row_seeds[i]`` and, after each automatic
  reset, its ``next_game()``.

Every hand lasts exactly 62 decisions (10 + 10 + 2 discards, 40 cards played), and a claim ends a
game at the start of a hand, so the rows of a batch stay in the same phase: the step code takes the
whole batch through one branch (``slice(None)``) whenever it can.

Outputs are :class:`~tarot_env.vector.base.VecStep`; ``info`` holds, valid where ``done``:
``final_scores`` (int64[B, 2]), ``final_winner`` (the seat, -1 a draw, -2 an ``episode="deal"``
episode that ended with the game going on), ``truncated`` (the game ended at ``max_hands``: the AEC
env reports a truncation) and ``final_hand_scores`` (the last history entry's ``"scores"``: the last
hand's, or a claim's); ``final_info(row)`` gives the AEC env's whole final info dict.

``tests/test_vector_millone.py`` drives this engine and the registered AEC environment with the same
actions and compares every observation, mask, reward, final info, state block and ``state()``.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..cards import BOLOGNESE, EXCUSE, TRUMP
from ..engine import trick_winner
from ..rules.combos import combo_points, combo_points_many, scoring_cards
from ..rules.millone import (
    _GATHERED, _OBS_GATHER, _OBS_POS, _STATE_GATHER, _STATE_GATHERED, BOLOGNESE_UNIFORM,
    DEALER_LAST_PACKET, DISCARDABLE, EMPTY, FIRST_DEAL, FIRST_DISCARD, FIRST_ROUNDS,
    LAST_TRICK_BONUS, MATTO, MAX_HAND, N, OBS, PACKET, PLAYERS, SECOND_DISCARD, SECOND_ROUNDS, STATE,
    STOCK_SIZE, TARGET, TRICKS, VALUE,
    MilloneGame, Phase, fool_payments,
)
from .base import BlockMirror, VecEnv, VecStep, pack_cards, unpack_cards

DISCARD, SECOND, PLAY, OVER = (int(p) for p in (Phase.DISCARD, Phase.SECOND_DISCARD, Phase.PLAY,
                                                 Phase.GAME_OVER))
NO_CARD = N  # "nothing led yet" (also the row of LEAD_BITS that allows every card)
NOT_OVER = -2  # final_winner of an episode that ended with the game still going (episode="deal")
ALL_DISCARDS = FIRST_DISCARD + SECOND_DISCARD  # the dealer's 12
HAND_KIND, CLAIM_KIND = 0, 1  # what the last history entry of a row is
assert N <= 64

# --- card tables (built once from the reference constants) ----------------------------------------
BIT = np.left_shift(np.uint64(1), np.arange(N, dtype=np.uint64))
ZERO = np.uint64(0)


def _bits(mask: np.ndarray) -> np.uint64:
    return np.uint64(np.bitwise_or.reduce(BIT[np.asarray(mask, dtype=bool)]))


SUIT = BOLOGNESE.suit.astype(np.int64)
ALL_BITS = _bits(np.ones(N, dtype=bool))
TRUMP_BITS = _bits(SUIT == TRUMP)
MATTO_BIT = BIT[MATTO]
DISCARD_BITS = _bits(DISCARDABLE)  # MIL-2.4, MIL-2.6
# LEAD_BITS[lead]: the cards that follow ``lead`` (its suit); the Matto led, or nothing led yet,
# fixes no suit (B.4.3), so every card "follows"
LEAD_BITS = np.array([_bits(SUIT == SUIT[c]) if SUIT[c] != EXCUSE else ALL_BITS for c in range(N)]
                     + [ALL_BITS], dtype=np.uint64)
VALUE64 = VALUE.astype(np.int64)
EMPTY_BITS = _bits(EMPTY)  # MIL-1.2: the empty cards (value 1; never the Matto, worth 5)
assert not EMPTY[MATTO]
_BEATS: dict[str, np.ndarray] = {}


def beats_table(pack) -> np.ndarray:
    """BEATS[lead, card]: ``card``, played second, takes the trick led with ``lead`` — the engine's
    ``trick_winner`` (B.4.4, B.2.2; the Matto never wins) asked once for every pair of cards."""
    if pack.key not in _BEATS:
        t = np.zeros((N, N), dtype=bool)
        for a in range(N):
            for b in range(N):
                if a != b:
                    t[a, b] = trick_winner(pack, [(0, a), (1, b)]) == 1
        _BEATS[pack.key] = t
    return _BEATS[pack.key]


pack_bits = pack_cards  # bool[..., 62] -> uint64[...]


def unpack_bits(bits: np.ndarray) -> np.ndarray:
    """uint64[...] card sets -> bool[..., 62]."""
    return unpack_cards(bits, N)


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
# block positions of each field (the reference's block layout)
_IX = MilloneGame.block_index()
CELL_HAND = np.asarray(_IX.hands, dtype=np.int64)        # [2, 62]
CELL_PLAYED = np.asarray(_IX.played, dtype=np.int64)     # [2, 62]
CELL_TRICK = np.asarray(_IX.trick_by, dtype=np.int64)    # [2, 62]
CELL_WON = np.asarray(_IX.won, dtype=np.int64)           # [2, 62]
CELL_DISC = np.asarray(_IX.discards, dtype=np.int64)     # [2, 62]
CELL_STOCK = np.asarray(_IX.stock, dtype=np.int64)       # [62]
CELL_EXCH = np.asarray(_IX.exchanged, dtype=np.int64)    # [62]
CELL_CLAIM = np.asarray(_IX.claim_shown, dtype=np.int64)  # [2, 62]
CELL_PLAY = np.stack([CELL_PLAYED, CELL_TRICK], axis=-1)  # [2, 62, 2]: what a played card sets
CELL_VOID = np.asarray(_IX.shown_void, dtype=np.int64)   # [2, 5]: seat x suit (4 suits, trumps)


def _void_tables() -> tuple[np.ndarray, np.ndarray]:
    """SHOWS_VOID[lead, card]: the second card ``card`` on a trick led with ``lead`` shows a void
    (MIL-4.2, B.4.1, as TrickGame._note_void: it is not of the suit led, and neither card is the
    Matto, which fixes no suit and shows nothing, B.4.3); VOID_CELLS[lead, seat, card] the two
    shown_void cells it sets: the suit led and, for a plain card (not a trump), trumps (B.4.2); for a
    trump the suit led twice. Row NO_CARD (nothing led) shows nothing."""
    shows = np.zeros((N + 1, N), dtype=bool)
    cells = np.zeros((N + 1, PLAYERS, N, 2), dtype=np.int64)
    for lead in range(N):
        led = SUIT[lead]
        if led == EXCUSE:
            continue
        shows[lead] = (SUIT != led) & (SUIT != EXCUSE)
        for s in range(PLAYERS):
            cells[lead, s, :, 0] = CELL_VOID[s, led]
            cells[lead, s, :, 1] = np.where(SUIT != TRUMP, CELL_VOID[s, TRUMP], CELL_VOID[s, led])
    return shows, cells


SHOWS_VOID, VOID_CELLS = _void_tables()
OWN_HAND = OBS.hand.start + np.arange(N)          # one's hand, in one's own observation only
OWN_DISC = OBS.my_discards.start + np.arange(N)   # one's discards, likewise (H.4)

# the scalar features after the card sections (seat-relative), offsets from their start
SCALARS = OBS.phase.stop - _GATHERED  # (the v1 shown_void follows them)
Q_DEALER, Q_LEADER, Q_HS, Q_STOCK, Q_TW, Q_OWED, Q_SCORES, Q_HP, Q_PHASE = (
    getattr(OBS, name).start - _GATHERED for name in (
        "seat_from_dealer", "leader", "hand_sizes", "stock_size", "tricks_won", "exchange_owed",
        "scores", "hands_played", "phase"))
assert SCALARS == STATE.phase.stop - STATE.dealer.start - 2  # the state: dealer, current, then the same tail
# float64 quotients rounded once to float32, exactly as the reference encoder
_HS = (np.arange(MAX_HAND + 1) / MAX_HAND).astype(np.float32)
_TW = (np.arange(TRICKS + 1) / TRICKS).astype(np.float32)
_STOCK = (np.arange(STOCK_SIZE + 1) / STOCK_SIZE).astype(np.float32)


class MilloneVec(VecEnv):
    """``num_envs`` Millone games in lockstep (see the module docstring and :class:`VecEnv`).

    Row selectors ``R`` in the step code are ``slice(None)`` when every row takes the same branch
    and an index array otherwise; per-(row, seat) arrays are addressed through flat indices.
    """

    Game = MilloneGame
    default_reward_scale = 200.0  # tarot_env.envs.millone.raw_env's

    def __init__(self, num_envs: int, seed: int | None = None, **options: Any):
        super().__init__(num_envs, seed, **options)
        B = self.num_envs
        cfg = self.config
        self.mdc = cfg.moors_double_count
        self.max_hands = cfg.max_hands
        self.beats = beats_table(BOLOGNESE if cfg.round_suits_inverted else BOLOGNESE_UNIFORM)
        self._hp_table = np.minimum(np.arange(cfg.max_hands + 1) / cfg.max_hands, 1.0).astype(np.float32)
        self.m = m = BlockMirror(MilloneGame, _OBS_GATHER, B, obs_pos=_OBS_POS, hidden_ok=True)
        self._pos_play = m.positions(CELL_PLAY)              # [2, 62, 4]
        self._pos_trick = m.positions(CELL_TRICK[..., None])  # [2, 62, 2]
        self._pos_won = m.positions(CELL_WON[..., None])      # [2, 62, 2]
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
        # flat views for per-(row, seat) updates
        self._hb, self._wb, self._db = (x.reshape(-1) for x in (self.hand_bits, self.won_bits, self.disc_bits))
        self._hs, self._tw, self._dn = (x.reshape(-1) for x in (self.hand_sizes, self.tricks_won, self.disc_n))
        self._dl = self.disc_log.reshape(-1)
        self._row2 = self._ar * PLAYERS
        # the last history entry of each row (a hand's result, or a claim) and the final episode info
        self.last = {k: i64(*s) for k, s in (
            ("kind", ()), ("hand", ()), ("dealer", ()), ("card_points", (2,)), ("last_trick", ()),
            ("combos", (2,)), ("scores", (2,)), ("tricks_won", (2,)), ("pile_sizes", (2,)),
            ("matto_owner", ()), ("matto_paid", ()), ("matto_deferred", ()), ("matto_surrendered", ()),
            ("disc_n", (2,)), ("disc_log", (2, ALL_DISCARDS)), ("log_seat", (TRICKS, PLAYERS)),
            ("log_card", (TRICKS, PLAYERS)), ("log_winner", (TRICKS,)))}
        self.final = {k: i64(*s) for k, s in (("scores", (2,)), ("winner", ()))}
        self.final_truncated = np.zeros(B, dtype=bool)
        self._finished = np.zeros(B, dtype=bool)  # the row has finished an episode since reset()
        self.final_last = {k: v.copy() for k, v in self.last.items()}
        self._claims: list[dict | None] = [None] * B  # the claim entry of a row's last claim
        self._final_claims: list[dict | None] = [None] * B
        self._scal = np.zeros((B, SCALARS), dtype=np.float32)

    # --- episodes ------------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        B = self.num_envs
        dealers = self._reseed_first_dealers()
        self.scores[:] = 0
        self.hands_played[:] = 0
        for v in (*self.last.values(), *self.final.values(), *self.final_last.values()):
            v[...] = 0
        self.final_truncated[:] = False
        self._finished[:] = False
        self._claims = [None] * B
        self._final_claims = [None] * B
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
        """MIL-2.2: shuffle each row's pack from its own stream and deal the first phase (20 to the
        non-dealer, 22 to the dealer, 20 in the stock); then the claim check (MIL-2.3, MIL-3).
        Returns the rows whose game a claim ended."""
        k = len(rows)
        if decks is None:
            rngs = self.rngs
            decks = np.array([rngs[r].permutation(N) for r in rows.tolist()], dtype=np.int64).reshape(k, N)
        m = self.m
        m.clear_rows(rows)
        nd = 1 - dealers
        seat_of = np.stack([nd, dealers], axis=1)  # receiver 0/1 -> seat
        first = decks[:, :FIRST_N]
        owners = seat_of[:, FIRST_TO]  # [k, 42]
        m.write_own(rows[:, None], owners, OWN_HAND[first], True)  # a hand is seen by its owner
        m.write_hidden(rows, CELL_STOCK[decks[:, FIRST_N:]], True)  # the stock is seen by no one
        if m.smir is not None:
            m.write_state(rows[:, None], CELL_HAND[owners, first], True)
        fb = BIT[first]
        hb = np.stack([np.bitwise_or.reduce(np.where(FIRST_TO == w, fb, ZERO), axis=1) for w in (0, 1)], 1)
        r2 = np.arange(k)[:, None]
        hand_bits = np.zeros((k, PLAYERS), dtype=np.uint64)
        hand_bits[r2, seat_of] = hb
        self.hand_bits[rows] = hand_bits
        hs = np.zeros((k, PLAYERS), dtype=np.int64)
        hs[r2, seat_of] = np.array(FIRST_DEAL)
        self.hand_sizes[rows] = hs
        self.deck[rows] = decks
        self.dealer[rows] = dealers
        self.current[rows] = nd  # MIL-2.4: the non-dealer discards first
        self.leader[rows] = nd
        self.phase[rows] = DISCARD
        self.stock_left[rows] = STOCK_SIZE
        for a, v in ((self.lead, NO_CARD), (self.lead_seat, 0), (self.tricks, 0), (self.tricks_won, 0),
                     (self.won_bits, 0), (self.disc_bits, 0), (self.disc_n, 0), (self.excuse_owner, -1),
                     (self.exchange_card, -1), (self.exchange_owed, -1), (self.exchange_from_discards, False)):
            a[rows] = v
        return self._check_claims(rows, hand_bits)

    def _check_claims(self, rows: np.ndarray, hand_bits: np.ndarray) -> np.ndarray:
        """MIL-3: claim = score + combinations in hand; one claim >= 1000, or the higher of two,
        wins at once (a tie is no claim). The combinations of every hand at once (``combo_points_many``)."""
        mdc = self.mdc
        combos = combo_points_many(hand_bits, moors_double_count=mdc)  # [k, 2]
        claims = self.scores[rows] + combos
        able = claims >= TARGET
        fire = able.any(1) & ~(able.all(1) & (claims[:, 0] == claims[:, 1]))
        if not fire.any():
            return rows[:0]
        out = []
        cfg = self.env_config
        for j in np.flatnonzero(fire).tolist():
            r = int(rows[j])
            c = claims[j].tolist()
            claimant = int(np.argmax(c)) if able[j].all() else int(np.flatnonzero(able[j])[0])
            shown = scoring_cards(unpack_bits(hand_bits[j, claimant]), moors_double_count=mdc)
            self.m.write(np.array([r]), CELL_CLAIM[claimant, np.flatnonzero(shown)], True)
            sc = [int(combos[j, p]) if p == claimant else 0 for p in range(PLAYERS)]
            self.scores[r] += sc
            self._claims[r] = {
                "hand": int(self.hands_played[r]), "dealer": int(self.dealer[r]), "claim": True,
                "claimant": claimant, "claims": c, "combos": combos[j].tolist(),
                "shown": BOLOGNESE.names_of(shown), "scores": sc}
            self.last["kind"][r] = CLAIM_KIND
            self.last["scores"][r] = sc  # final_hand_scores: history[-1]["scores"], the claim's here
            self.phase[r] = OVER
            self.final["winner"][r] = claimant  # provisional: _finish records it
            if cfg.reward == "deal":
                for p in range(PLAYERS):
                    self._step_rew[r, p] += float(sc[p] - sc[1 - p]) / cfg.reward_scale
            out.append(r)
        self._dirty = True
        return np.array(out, dtype=np.int64)

    # --- one action per row ----------------------------------------------------------------------------
    def _apply(self, a: np.ndarray) -> None:
        play = self.phase == PLAY
        if play.all():
            self._play(slice(None), a)
        elif not play.any():
            self._discard(slice(None), a)
        else:
            R = np.flatnonzero(~play)
            P = np.flatnonzero(play)
            self._discard(R, a[R])
            self._play(P, a[P])

    def _discard(self, R, cards: np.ndarray) -> None:
        """MIL-2.4: the card goes face down into its player's pile (seen by him alone); after the
        non-dealer's 10 the dealer discards 10, then the stock is dealt (MIL-2.5) and the dealer
        discards 2 more (MIL-2.6); then the non-dealer leads (MIL-4.1)."""
        rows = self._ar[R]
        s = self.current[R].copy()  # a view when R is slice(None): current changes below
        m = self.m
        m.write_own(rows, s, OWN_HAND[cards], False)
        m.write_own(rows, s, OWN_DISC[cards], True)
        if m.smir is not None:
            m.write_state(rows, CELL_HAND[s, cards], False)
            m.write_state(rows, CELL_DISC[s, cards], True)
        i = self._row2[R] + s
        bit = BIT[cards]
        self._hb[i] ^= bit
        self._db[i] |= bit
        self._hs[i] -= 1
        n = self._dn[i]
        self._dl[i * ALL_DISCARDS + n] = cards
        n += 1
        self._dn[i] = n
        d = self.dealer[R]
        first = self.phase[R] == DISCARD
        done1 = first & (n == FIRST_DISCARD)
        if done1.any():
            to_dealer = done1 & (s != d)
            self.current[rows[to_dealer]] = d[to_dealer]
            stock = done1 & (s == d)
            if stock.any():
                self._deal_second_phase(rows[stock], d[stock])
        done2 = ~first & (n == ALL_DISCARDS)
        if done2.any():
            r = rows[done2]
            self.phase[r] = PLAY
            self.current[r] = self.leader[r] = 1 - d[done2]

    def _deal_second_phase(self, rows: np.ndarray, dealers: np.ndarray) -> None:
        """MIL-2.5: two more rounds of 5 each from the stock, non-dealer first; MIL-2.6 follows."""
        cards = self.deck[rows, FIRST_N:]
        seat_of = np.stack([1 - dealers, dealers], axis=1)
        owners = seat_of[:, SECOND_TO]
        m = self.m
        m.write_own(rows[:, None], owners, OWN_HAND[cards], True)
        m.write_hidden(rows, CELL_STOCK[cards], False)
        if m.smir is not None:
            m.write_state(rows[:, None], CELL_HAND[owners, cards], True)
        cb = BIT[cards]
        for w in (0, 1):
            packets = np.bitwise_or.reduce(np.where(SECOND_TO == w, cb, ZERO), axis=1)
            self._hb[rows * PLAYERS + seat_of[:, w]] |= packets
        self.hand_sizes[rows] += STOCK_SIZE // 2
        self.stock_left[rows] = 0
        self.phase[rows] = SECOND

    def _play(self, R, cards: np.ndarray) -> None:
        rows = self._ar[R]
        s = self.current[R].copy()  # a view when R is slice(None): current changes below
        m = self.m
        m.write_own(rows, s, OWN_HAND[cards], False)
        m.write_at(rows, self._pos_play[s, cards], True)
        if m.smir is not None:
            m.write_state(rows, CELL_HAND[s, cards], False)
            m.write_state(rows, CELL_PLAY[s, cards], True)
        i = self._row2[R] + s
        self._hb[i] ^= BIT[cards]
        self._hs[i] -= 1
        mat = cards == MATTO
        if mat.any():
            self.excuse_owner[rows[mat]] = s[mat]
        leading = self.lead[R] == NO_CARD
        if leading.all():
            self.lead[R] = cards
            self.lead_seat[R] = s
            self.current[R] = 1 - s
        elif not leading.any():
            self._note_voids(rows, s, cards)
            self._close_trick(rows, cards, s)
        else:
            r = rows[leading]
            self.lead[r] = cards[leading]
            self.lead_seat[r] = s[leading]
            self.current[r] = 1 - s[leading]
            f = ~leading
            self._note_voids(rows[f], s[f], cards[f])
            self._close_trick(rows[f], cards[f], s[f])

    def _note_voids(self, rows: np.ndarray, s: np.ndarray, cards: np.ndarray) -> None:
        """The second card of a trick: not following shows a public void (H.1.1; SHOWS_VOID)."""
        lead = self.lead[rows]
        v = np.flatnonzero(SHOWS_VOID[lead, cards])
        if len(v):
            self.m.write(rows[v], VOID_CELLS[lead[v], s[v], cards[v]], True)

    def _close_trick(self, rows: np.ndarray, c2: np.ndarray, s2: np.ndarray) -> None:
        """B.4.4: the trick's winner takes both cards, except the Matto, which goes to its player's
        pile (B.4.5) who pays for it at once (MIL-4.3); the winner leads next (MIL-4.1)."""
        c1, s1 = self.lead[rows], self.lead_seat[rows]
        w = np.where(self.beats[c1, c2], s2, s1)
        t = self.tricks[rows]
        self.log_card[rows, t, 0], self.log_card[rows, t, 1] = c1, c2
        self.log_seat[rows, t, 0], self.log_seat[rows, t, 1] = s1, s2
        self.log_winner[rows, t] = w
        to1 = np.where(c1 == MATTO, s1, w)
        to2 = np.where(c2 == MATTO, s2, w)
        m = self.m
        m.write_at(rows, np.concatenate([self._pos_won[to1, c1], self._pos_won[to2, c2]], 1), True)
        m.write_at(rows, np.concatenate([self._pos_trick[s1, c1], self._pos_trick[s2, c2]], 1), False)
        if m.smir is not None:
            m.write_state(rows, np.stack([CELL_WON[to1, c1], CELL_WON[to2, c2]], 1), True)
            m.write_state(rows, np.stack([CELL_TRICK[s1, c1], CELL_TRICK[s2, c2]], 1), False)
        r2 = rows * PLAYERS
        self._wb[r2 + to1] |= BIT[c1]
        self._wb[r2 + to2] |= BIT[c2]
        self._tw[r2 + w] += 1
        self.leader[rows] = w
        self.current[rows] = w
        self.lead[rows] = NO_CARD
        t += 1
        self.tricks[rows] = t
        mat = (c1 == MATTO) | (c2 == MATTO)
        if mat.any():
            j = np.flatnonzero(mat)
            owner = np.where(c1[j] == MATTO, s1[j], s2[j])
            lost = owner != w[j]  # always: the Matto never wins (B.2.4)
            self.exchange_owed[rows[j][lost]] = owner[lost]  # on_excuse_trick: owed until paid
        # on_excuse_trick / on_trick_closed: a debtor who has won an empty card pays (one won before,
        # at the Matto's trick; one won in this trick, later: he had none at the trick before)
        owed = self.exchange_owed[rows]
        due = (owed >= 0) & ((self._wb[r2 + np.maximum(owed, 0)] & EMPTY_BITS) != ZERO)
        if due.any():
            self._pay_owed(rows[due])
        end = t == TRICKS
        if end.any():
            self._end_hand(rows if end.all() else rows[end])

    # --- the Matto exchange (MIL-4.3, 4.4; the reference's decisions 1-4), per row ---------------------
    def _pay_owed(self, rows: np.ndarray) -> None:
        """MIL-4.3 during the play: each row's debtor pays the empty card of his cards won in tricks
        that the reference's ``fool_payments`` chooses (decision 1), in sight (decision 2)."""
        payers = self.exchange_owed[rows]
        piles = unpack_bits(self._wb[rows * PLAYERS + payers])
        cards = fool_payments(piles, empty_only=True, moors_double_count=self.mdc)
        self._pay(rows, payers, 1 - payers, cards)
        self.exchange_owed[rows] = -1

    def _pay(self, rows: np.ndarray, payers: np.ndarray, receivers: np.ndarray, cards: np.ndarray) -> None:
        """The card moves from the payer's pile (his won cards; his discards only at the end of the
        hand) to the receiver's, in sight (decision 2: it shows in the receiver's ``won`` and in
        ``exchanged``)."""
        bit = BIT[cards]
        i = rows * PLAYERS + payers
        from_disc = (self._db[i] & bit) != ZERO
        self.exchange_from_discards[rows] = from_disc
        self._db[i] &= ~bit
        self._wb[i] &= ~bit
        self._wb[rows * PLAYERS + receivers] |= bit
        m = self.m
        m.write(rows, np.where(from_disc, CELL_DISC[payers, cards], CELL_WON[payers, cards]), False)
        m.write(rows, np.stack([CELL_WON[receivers, cards], CELL_EXCH[cards]], 1), True)
        self.exchange_card[rows] = cards

    def _settle_matto(self, r: int) -> None:
        """End of hand: MIL-4.4 surrender (decision 4) or the payment still owed (decision 3)."""
        owner = int(self.excuse_owner[r])
        other = 1 - owner
        m, rr = self.m, np.array([r])
        if self.tricks_won[r, owner] == 0:  # MIL-4.4: the Matto goes to the opponent instead
            # (no payment was made: a player who won no trick has won no empty card, decision 3)
            mb = BIT[MATTO]
            self.won_bits[r, owner] &= ~mb
            self.won_bits[r, other] |= mb
            m.write(rr, CELL_WON[owner, [MATTO]], False)
            m.write(rr, CELL_WON[other, [MATTO]], True)
            self.exchange_owed[r] = -1
            return
        if self.exchange_owed[r] >= 0:
            pile = unpack_bits(self.won_bits[r, owner] | self.disc_bits[r, owner])[None]
            card = int(fool_payments(pile, empty_only=False, moors_double_count=self.mdc)[0])
            self._pay(rr, np.array([owner]), np.array([other]), np.array([card]))
            self.exchange_owed[r] = -1

    # --- scoring (MIL-5), the game (MIL-6) -------------------------------------------------------------
    def _end_hand(self, rows: np.ndarray) -> None:
        """D.5: card points + 6 for the last trick + pile combinations; MIL-6.1; the next hand."""
        self._dirty = True
        k = len(rows)
        last = self.last
        owner = self.excuse_owner[rows]
        has = owner >= 0
        ow = np.where(has, owner, 0)
        deferred = has & (self.exchange_owed[rows] >= 0)
        surrendered = has & (self.tricks_won[rows, ow] == 0)
        for r in rows[deferred | surrendered].tolist():
            self._settle_matto(r)
        pile_bits = self.won_bits[rows] | self.disc_bits[rows]  # [k, 2]
        piles = unpack_bits(pile_bits)  # [k, 2, 62]
        sizes = piles.sum(2, dtype=np.int64)
        cp = piles.astype(np.int64) @ VALUE64 - sizes // 2  # B.3.2, card_points
        combos = combo_points_many(pile_bits, moors_double_count=self.mdc)  # D.5, every pile at once
        last_trick = self.log_winner[rows, TRICKS - 1]
        sc = cp + combos + LAST_TRICK_BONUS * (np.arange(PLAYERS)[None, :] == last_trick[:, None])
        last["kind"][rows] = HAND_KIND
        last["hand"][rows] = self.hands_played[rows]
        last["dealer"][rows] = self.dealer[rows]
        last["card_points"][rows] = cp
        last["last_trick"][rows] = last_trick
        last["combos"][rows] = combos
        last["scores"][rows] = sc
        last["tricks_won"][rows] = self.tricks_won[rows]
        last["pile_sizes"][rows] = sizes
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
            diff = (sc[:, 0] - sc[:, 1]).astype(np.float64)
            self._step_rew[rows, 0] += diff / cfg.reward_scale
            self._step_rew[rows, 1] += (-diff) / cfg.reward_scale
        hp = self.hands_played[rows] + 1
        self.hands_played[rows] = hp
        # MIL-6.1 (game_result): the first to 1000 wins, both: the higher; equal: play on; the cap
        tot = self.scores[rows]
        decided = (tot.max(1) >= TARGET) & (tot[:, 0] != tot[:, 1])
        capped = ~decided & (hp >= self.max_hands)
        over = decided | capped
        winner = np.where(decided, np.argmax(tot, 1), -1)
        self.final["winner"][rows[over]] = winner[over]
        self.phase[rows[over]] = OVER
        truncated = np.zeros(k, dtype=bool)
        truncated[capped] = True
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
        for r in rows[self.last["kind"][rows] == CLAIM_KIND].tolist():
            self._final_claims[r] = self._claims[r]
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
        B, ar = self.num_envs, self._ar
        t = np.zeros((B, SCALARS), dtype=np.float32) if out is None else out
        if out is not None:
            t[...] = 0.0
        other = 1 - seat
        t[ar, Q_DEALER + ((seat - self.dealer) & 1)] = 1.0
        t[ar, Q_LEADER + ((self.leader - seat) & 1)] = 1.0
        hs, tw, sc = self.hand_sizes, self.tricks_won, self.scores
        t[:, Q_HS] = _HS[hs[ar, seat]]
        t[:, Q_HS + 1] = _HS[hs[ar, other]]
        t[:, Q_STOCK] = _STOCK[self.stock_left]
        t[:, Q_TW] = _TW[tw[ar, seat]]
        t[:, Q_TW + 1] = _TW[tw[ar, other]]
        owed = self.exchange_owed
        o = np.flatnonzero(owed >= 0)
        if len(o):
            t[o, Q_OWED + ((owed[o] - seat[o]) & 1)] = 1.0
        t[:, Q_SCORES] = sc[ar, seat] / TARGET
        t[:, Q_SCORES + 1] = sc[ar, other] / TARGET
        t[:, Q_HP] = self._hp_table[np.minimum(self.hands_played, self.max_hands)]
        t[ar, Q_PHASE + self.phase] = 1.0
        return t

    def _encode(self) -> None:
        """The acting seat's observation (as ``MilloneGame.observation``) and legal mask per row."""
        seat = self._seat
        np.copyto(seat, self.current)
        obs = self._obs
        self.m.gather_obs(seat, obs)
        obs[:, _GATHERED:OBS.phase.stop] = self.scalars(seat, self._scal)
        self._encode_masks()

    def _encode_masks(self) -> None:
        """MIL-4.2 / B.4 in play (follow suit, else trump, else anything; the Matto always);
        MIL-2.4 / 2.6 in the discards (anything but Honours and Kings)."""
        h = self._hb[self._row2 + self.current]
        play = self.phase == PLAY
        if play.all():
            f = h & LEAD_BITS[self.lead]
            t = h & TRUMP_BITS
            legal = np.where(f != ZERO, f, np.where(t != ZERO, t, h)) | (h & MATTO_BIT)
        elif not play.any():
            legal = h & DISCARD_BITS
        else:
            f = h & LEAD_BITS[self.lead]
            t = h & TRUMP_BITS
            legal = np.where(play, np.where(f != ZERO, f, np.where(t != ZERO, t, h)) | (h & MATTO_BIT),
                             h & DISCARD_BITS)
        self._mask[:, :N] = unpack_bits(legal)

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
        if fl["kind"] == CLAIM_KIND:
            result = copy.deepcopy(self._final_claims[row])
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
