"""Partita, vectorised: ``num_envs`` games of RULES.md Part E stepped together with numpy.

The rules are those of :mod:`tarot_env.rules.partita` (the readable reference), written as boolean
algebra over card tables built once from the same constants, on arrays with the batch axis first:

* per-card state: the reference's boolean ``block`` per row (``hands``, ``played``, ``trick_by``,
  ``won``, ``discards``, ``signal_table``, ``public_discards`` as ``[B, ...]`` views), mirrored into
  every seat's observation card sections by :class:`~tarot_env.vector.base.BlockMirror` through the
  reference's own gather tables (``_OBS_GATHER``), so the two encoders cannot drift apart;
* per-row integers: dealer, seat to act, leader, phase, pending signal, the current trick (cards,
  seats, best card so far, suit led), tricks, hand sizes, scores, deals played;
* dealing: each row owns a ``np.random.default_rng`` seeded like ``PartitaGame(config, seed)``
  (first dealer ``rng.integers(4)``, one ``rng.permutation(54)`` per deal, next game seeded from
  ``rng.integers(2**63)`` and dealt first by the partner of the last dealer, PAR-3.3), so row ``i``
  plays exactly the reference game of seed ``row_seeds[i]`` and, after auto-reset, its ``next_game()``.

``tests/test_vector_partita.py`` drives this engine and the registered AEC environment with the same
random actions and compares every observation, mask, reward, final info and state.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..cards import FRENCH54, TRUMP
from ..engine import NUM_SIGNALS
from ..rules.partita import (
    _OBS_GATHER, _STATE_GATHER, COUNTING_VALUE, DEALER_EXTRA, DISCARD_SIZE, FOOL, FOOL_POINTS,
    HALF_TOTAL, HAND_SIZE, N, OBS, PLAIN_DISCARDABLE, PLAYERS, STATE, TRUMP_DISCARDABLE, PartitaGame,
    Phase,
)
from .base import BlockMirror, VecEnv

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
VALUE = COUNTING_VALUE.astype(np.int64)

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
# PAR-4.1: deck position -> seat that receives it, per dealer (13 each from the dealer's right,
# the last 2 to the dealer), as in PartitaGame.start_deal.
OWNER = np.array([[(d + 1 + p // HAND_SIZE) % PLAYERS if p < PLAYERS * HAND_SIZE else d for p in range(N)]
                  for d in range(PLAYERS)], dtype=np.int64)
REL = np.array([[(s + i) % PLAYERS for i in range(PLAYERS)] for s in range(PLAYERS)], dtype=np.int64)

# block positions of each field (the reference's block layout)
_IX = PartitaGame.block_index()
CELL_HAND = np.asarray(_IX.hands, dtype=np.int64)            # [4, 54]
CELL_PLAYED = np.asarray(_IX.played, dtype=np.int64)         # [4, 54]
CELL_TRICK = np.asarray(_IX.trick_by, dtype=np.int64)        # [4, 54]
CELL_WON = np.asarray(_IX.won, dtype=np.int64)               # [2, 54]
CELL_DISCARD = np.asarray(_IX.discards, dtype=np.int64)      # [4, 54]
CELL_SIGNAL = np.asarray(_IX.signal_table, dtype=np.int64)   # [4, 3, 6]
CELL_PUBLIC = np.asarray(_IX.public_discards, dtype=np.int64)  # [54]

# scalar features: float64 quotients rounded once to float32, exactly as the reference encoder
_HS = (np.arange(HAND_SIZE + DEALER_EXTRA + 1) / (HAND_SIZE + DEALER_EXTRA)).astype(np.float32)
_TW = (np.arange(HAND_SIZE + 1) / HAND_SIZE).astype(np.float32)
_GATHERED = len(_OBS_GATHER[0])
_STATE_GATHERED = len(_STATE_GATHER)

DISCARD, PLAY = int(Phase.DISCARD), int(Phase.PLAY)
NOT_OVER = -2  # final_winner of an episode that ended with the game still going (episode="deal")


class PartitaVec(VecEnv):
    """``num_envs`` Partita games in lockstep (see the module docstring and :class:`VecEnv`)."""

    Game = PartitaGame

    def __init__(self, num_envs: int, seed: int | None = None, **options: Any):
        super().__init__(num_envs, seed, **options)
        B = self.num_envs
        self.signals = self.config.partita_signals == "bolognese3"  # PAR-7.1
        self.deals_per_game = self.config.deals_per_game
        self.m = m = BlockMirror(PartitaGame, _OBS_GATHER, B)
        self.hands = m.view("hands")
        self.played = m.view("played")
        self.trick_by = m.view("trick_by")
        self.won = m.view("won")
        self.discards = m.view("discards")
        self.signal_table = m.view("signal_table")
        self.public_discards = m.view("public_discards")
        i64 = lambda *shape: np.zeros((B,) + shape, dtype=np.int64)  # noqa: E731
        self.dealer, self.current, self.leader, self.phase = i64(), i64(), i64(), i64()
        self.pending = np.full(B, -1, dtype=np.int64)
        self.trick_len, self.trick_cards, self.trick_seats = i64(), i64(PLAYERS), i64(PLAYERS)
        self.best, self.best_seat, self.led = i64(), i64(), i64()
        self.tricks, self.tricks_won, self.hand_sizes = i64(), i64(2), i64(PLAYERS)
        self.scores, self.deals_played = i64(2), i64()
        self.trumps_needed, self.discarded, self.trumps_discarded = i64(), i64(), i64()
        self.rngs: list[np.random.Generator] = []
        # the last finished deal of each row (the reference's history[-1]) and final episode info
        self.last = {k: i64(*s) for k, s in (("deal", ()), ("dealer", ()), ("points", (2,)),
                                              ("scores", (2,)), ("tricks_won", (2,)), ("fool_team", ()))}
        self.final = {k: i64(*s) for k, s in (("scores", (2,)), ("winner", ()))}
        self.final_last = {k: v.copy() for k, v in self.last.items()}
        self._obs_row = np.arange(B, dtype=np.int64) * self.obs_size
        self._deal_table = (np.arange(self.deals_per_game + 1) / self.deals_per_game)
        self._left_table = ((self.deals_per_game - np.arange(self.deals_per_game + 1)) / self.deals_per_game)

    # --- episodes ------------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        B = self.num_envs
        self.rngs = [np.random.default_rng(s) for s in self.row_seeds]
        fd = self.config.first_dealer
        dealers = np.array([int(g.integers(PLAYERS)) if fd < 0 else fd for g in self.rngs], dtype=np.int64)
        self.scores[:] = 0
        self.deals_played[:] = 0
        for v in (*self.last.values(), *self.final.values(), *self.final_last.values()):
            v[...] = 0
        self._start_deal(np.arange(B, dtype=np.int64), dealers)

    def _start_deal(self, rows: np.ndarray, dealers: np.ndarray) -> None:
        """PAR-4.1: shuffle each row's pack from its own stream and deal 13 + 13 + 13 + 15."""
        rngs = self.rngs
        decks = np.stack([rngs[r].permutation(N) for r in rows.tolist()])
        self.m.clear_rows(rows)
        self.m.write(rows, CELL_HAND[OWNER[dealers], decks], True)
        self.dealer[rows] = dealers
        self.current[rows] = dealers
        self.leader[rows] = dealers
        self.phase[rows] = DISCARD
        hs = np.full((len(rows), PLAYERS), HAND_SIZE, dtype=np.int64)
        hs[np.arange(len(rows)), dealers] += DEALER_EXTRA
        self.hand_sizes[rows] = hs
        plain = (self.hands[rows, dealers] & PLAIN_DISCARDABLE).sum(1)
        self.trumps_needed[rows] = np.maximum(0, DISCARD_SIZE - plain)  # PAR-4.4, per-card reading
        for a, v in ((self.discarded, 0), (self.trumps_discarded, 0), (self.pending, -1), (self.trick_len, 0),
                     (self.best, NO_BEST), (self.best_seat, -1), (self.led, NO_LED), (self.tricks, 0),
                     (self.tricks_won, 0)):
            a[rows] = v

    # --- one action per row ----------------------------------------------------------------------------
    def _apply(self, a: np.ndarray) -> None:
        phase = self.phase
        if self.signals:
            sig = a >= N
            if sig.any():
                r = np.flatnonzero(sig)
                self.pending[r] = a[r] - N  # PAR-7.1: the signal goes with this seat's next card
            play = np.flatnonzero((phase == PLAY) & ~sig)
        else:
            play = self._ar if phase.all() else np.flatnonzero(phase == PLAY)  # PLAY == 1
        if len(play) < self.num_envs:
            disc = np.flatnonzero(phase == DISCARD)
            if len(disc):
                self._discard(disc, a[disc])
        if len(play):
            self._play(play, a[play] if len(play) < self.num_envs else a)

    def _discard(self, rows: np.ndarray, cards: np.ndarray) -> None:
        """PAR-4.2, 4.5: the card leaves the dealer's hand for his discards; a trump is announced."""
        d = self.dealer[rows]
        m = self.m
        m.write(rows, CELL_HAND[d, cards], False)
        m.write(rows, CELL_DISCARD[d, cards], True)
        self.hand_sizes[rows, d] -= 1
        tr = SUIT[cards] == TRUMP
        if tr.any():
            m.write(rows[tr], CELL_PUBLIC[cards[tr]], True)
            self.trumps_discarded[rows[tr]] += 1
        n = self.discarded[rows] + 1
        self.discarded[rows] = n
        self.phase[rows[n == DISCARD_SIZE]] = PLAY  # PAR-5.1: the dealer (already current) leads

    def _play(self, rows: np.ndarray, cards: np.ndarray) -> None:
        s = self.current[rows]
        m = self.m
        m.write(rows, CELL_HAND[s, cards], False)
        m.write(rows, np.stack([CELL_PLAYED[s, cards], CELL_TRICK[s, cards]], axis=1), True)
        self.hand_sizes[rows, s] -= 1
        if self.signals:
            ps = self.pending[rows]
            sg = ps >= 0
            if sg.any():
                r = rows[sg]
                m.write(r, CELL_SIGNAL[s[sg], ps[sg], SUIT[cards[sg]]], True)
                self.pending[r] = -1
        n = self.trick_len[rows]
        self.trick_cards[rows, n] = cards
        self.trick_seats[rows, n] = s
        best = self.best[rows]
        first = (best == NO_BEST) & (cards != FOOL)
        if first.any():
            self.led[rows[first]] = SUIT[cards[first]]  # the first card other than the Fool
        beats = BEATS[best, cards]
        self.best[rows] = np.where(beats, cards, best)
        self.best_seat[rows] = np.where(beats, s, self.best_seat[rows])
        n += 1
        self.trick_len[rows] = n
        self.current[rows] = (s + 1) % PLAYERS
        full = n == PLAYERS
        if full.any():
            self._close_trick(rows if full.all() else rows[full])

    def _close_trick(self, rows: np.ndarray) -> None:
        """B.4.4 / PAR-2: the best card takes the trick; PAR-5.3: the Fool goes to its owner's team."""
        w = self.best_seat[rows]
        team = w & 1
        tc, ts = self.trick_cards[rows], self.trick_seats[rows]
        to = np.where(tc == FOOL, ts & 1, team[:, None])
        m = self.m
        m.write(rows, CELL_WON[to, tc], True)
        m.write(rows, CELL_TRICK[ts, tc], False)
        self.tricks_won[rows, team] += 1
        self.leader[rows] = w
        self.current[rows] = w
        self.trick_len[rows] = 0
        self.best[rows] = NO_BEST
        self.best_seat[rows] = -1
        self.led[rows] = NO_LED
        t = self.tricks[rows] + 1
        self.tricks[rows] = t
        end = t == HAND_SIZE
        if end.any():
            self._end_deal(rows if end.all() else rows[end])

    def _end_deal(self, rows: np.ndarray) -> None:
        """PAR-6: X = ceil(n/2) + Σ values + 5 for the Fool per team; score = X − 40; next deal."""
        k = len(rows)
        d = self.dealer[rows]
        piles = self.won[rows]  # a copy
        piles[np.arange(k), d & 1] |= self.discards[rows, d]
        fool = piles[:, :, FOOL].astype(np.int64)
        cnt = piles.sum(2) - fool
        points = (cnt + 1) // 2 + piles.astype(np.int64) @ VALUE + FOOL_POINTS * fool
        sc = points - HALF_TOTAL
        self.scores[rows] += sc
        last = self.last
        last["deal"][rows] = self.deals_played[rows]
        last["dealer"][rows] = d
        last["points"][rows] = points
        last["scores"][rows] = sc
        last["tricks_won"][rows] = self.tricks_won[rows]
        last["fool_team"][rows] = fool[:, 1]
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
            g, wg = rows[over], winner[over]
            for seat in range(PLAYERS):
                team = seat % 2
                self._step_rew[g, seat] = np.where(wg == -1, 0.0, np.where(wg == team, 1.0, -1.0))

    def _new_game(self, rows: np.ndarray) -> None:
        """PartitaGame.next_game: seeded from the row's stream; the last dealer's partner deals."""
        for r in rows.tolist():
            self.rngs[r] = np.random.default_rng(int(self.rngs[r].integers(2**63)))
        self.scores[rows] = 0
        self.deals_played[rows] = 0
        self._start_deal(rows, (self.dealer[rows] + 2) % PLAYERS)

    # --- encoders ------------------------------------------------------------------------------------
    def _encode(self) -> None:
        """The acting seat's observation (as ``PartitaGame.observation``) and legal mask per row."""
        seat = self._seat
        np.copyto(seat, self.current)
        obs, ar = self._obs, self._ar
        self.m.gather_obs(seat, obs)
        obs[:, _GATHERED:] = 0.0
        flat, row = obs.reshape(-1), self._obs_row
        if self.signals:
            p = np.flatnonzero(self.pending >= 0)
            if len(p):
                flat[row[p] + OBS.pending_signal.start + self.pending[p]] = 1.0
        flat[row + OBS.seat_from_dealer.start + (seat - self.dealer) % PLAYERS] = 1.0
        flat[row + OBS.leader.start + (self.leader - seat) % PLAYERS] = 1.0
        flat[row + OBS.phase.start + self.phase] = 1.0
        obs[:, OBS.hand_sizes] = _HS[self.hand_sizes[ar[:, None], REL[seat]]]
        my = seat & 1
        tw, sc = OBS.tricks_won.start, OBS.scores.start
        obs[:, tw] = _TW[self.tricks_won[ar, my]]
        obs[:, tw + 1] = _TW[self.tricks_won[ar, 1 - my]]
        obs[:, sc] = self.scores[ar, my] / HALF_TOTAL
        obs[:, sc + 1] = self.scores[ar, 1 - my] / HALF_TOTAL
        obs[:, OBS.deal.start] = self._deal_table[self.deals_played]
        obs[:, OBS.deal.start + 1] = self._left_table[self.deals_played]
        self._encode_masks()

    def _encode_masks(self) -> None:
        mask, phase = self._mask, self.phase
        all_play = bool(phase.all())
        if all_play:
            self._play_mask(self._ar, mask)
        else:
            mask[:] = False
            play = np.flatnonzero(phase == PLAY)
            if len(play):
                mask[play] = self._play_mask(play, None)
            disc = np.flatnonzero(phase == DISCARD)
            self._discard_mask(disc, mask)

    def _play_mask(self, rows: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        """B.4.2 / PAR-5.2: follow suit, else trump, else anything; the Fool always (PAR-5.3)."""
        h = self.hands[rows, self.current[rows]]
        f = h & SUIT_MASK[self.led[rows]]
        t = h & TRUMP_MASK
        legal = np.where(f.any(1)[:, None], f, np.where(t.any(1)[:, None], t, h))
        legal |= h & FOOL_MASK
        if out is None:
            out = np.zeros((len(rows), self.num_actions), dtype=bool)
        out[:, :N] = legal
        if self.signals:
            out[:, N:N + NUM_SIGNALS] = (self.pending[rows] < 0)[:, None]  # one signal per card
        return out

    def _discard_mask(self, rows: np.ndarray, mask: np.ndarray) -> None:
        """PAR-4.3/4.4: a card may go if the discard can still end as a legal set."""
        if not len(rows):
            return
        h = self.hands[rows, self.dealer[rows]]
        need, tdone = self.trumps_needed[rows], self.trumps_discarded[rows]
        plain_ok = (self.discarded[rows] - tdone) < DISCARD_SIZE - need
        trump_ok = tdone < need
        allowed = (PLAIN_DISCARDABLE & plain_ok[:, None]) | (TRUMP_DISCARDABLE & trump_ok[:, None])
        mask[rows, :N] = h & allowed

    # --- full information ----------------------------------------------------------------------------
    def state(self) -> np.ndarray:
        """float32[B, STATE]: ``PartitaGame.state_vector()`` of every row (centralised critics only)."""
        B, ar = self.num_envs, self._ar
        o = np.zeros((B, STATE.size), dtype=np.float32)
        o[:, :_STATE_GATHERED] = self.m.block[:, _STATE_GATHER]
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
                            "tricks_won": fl["tricks_won"].tolist(), "fool_team": int(fl["fool_team"])},
        }
