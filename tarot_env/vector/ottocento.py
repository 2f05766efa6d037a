"""The batched Ottocento engine: every phase as array code; one rules object per row records each hand.

Row ``i`` is ``OttocentoGame(config, seed=row_seeds[i])`` and, after each finished game,
``next_game()`` (with ``episode="deal"`` an episode ends after each hand and the game goes on), exactly
as the registered AEC environment plays it: same observations, masks, rewards, ends (terminated or
truncated at ``max_hands``), final infos and ``state()``, checked step by step by
``tests/test_vector_ottocento.py`` over every option (signals OTT-8.3/8.4, a monte, B.5 flags,
``episode``, ``reward``, ``max_hands``, ``first_dealer``).

Design (a hybrid, like ``vector/millone.py``: array code for the bulk, the rules module for the rest).

* State. Every row's per-card state block (``TrickGame.block_fields``) lives in one ``bool[B, BLOCK]``
  matrix; each row's rules object has its ``block`` and named views bound to its row, so the array
  code and the rules code write the same cells. The scalar state (seat to act, dealer, leader, pending
  signal, phase, hands played, hand sizes, declared points, tricks won, scores, the Matto's owner and
  trick, the current trick in play order and its led suit, the hand's closed tricks and signals, the
  shuffled deck, the declarer's M(hand)) is kept in ``[B, ...]`` arrays, which are authoritative.
* Observations. A :class:`~tarot_env.vector.base.BlockMirror` keeps every seat's observation card
  sections up to date: each array-code write goes to the blocks and the mirror (``_set``), and the rows
  that rules-object code moved are reloaded from their blocks (``_sync``). An observation is then one
  row copy plus the scalars, computed as array arithmetic.
* Array code (per step, all rows at once, no Python loop over rows):
  - PLAY (OTT-7, OTT-8; 60 cards and the signals of every hand): a signal sets the pending signal; a
    card leaves the hand, goes to ``played`` and the trick, writes its signal into ``signal_table``
    and ``signal_card``, its trick into ``card_trick`` and, when it does not follow, the public voids
    into ``shown_void`` (the v1 table memory, RULES.md H.1.1, as ``TrickGame.play_card``);
    a full trick is resolved through integer rank tables (B.4.4: trumps over the suit led, the Moors'
    later-card-wins rule B.2.2, the Matto never wins and goes back to its owner's team B.4.5), its
    cards go to the won piles, the winner leads;
  - the end of the hand (``_end_hands``, C.9): the Matto surrendered (OTT-7.4) or paid for with the
    reference's ``matto_payments`` (OTT-7.3: the low card whose loss costs the team's pile the fewest
    combination points, every paying row at once), the discards to their team (OTT-4.3), each team's pile
    combinations (``combos.combo_points_many``, B.5), card points (B.3.2) and the last trick;
  - A_MONTE (OTT-3): the answers, the next seat to answer, and dealing rounds 2-3 and the dealer's 2
    from the row's deck (OTT-2.1/2.2); a hand thrown in (all four said a monte) goes to the rules;
  - DISCARD (OTT-4) and DECLARE (OTT-5, 6.1): the dealer's discards; each declarer's M(hand)
    (``declarable_many``, the fixed point of ``combos.evaluate_many``), a reveal and whether the
    revealed set may close (every card scores), the declared points, the team points into the score
    and the first lead; a dealer's close that makes a team reach the target (won at the
    declarations) goes to the rules;
  - the masks of every phase (follow / trump / anything, the Matto always, B.4; the signals under
    ``ott_signal_players`` and ``ott_signal_timing``, incl. the restricted card choice after a signal,
    OTT-8.3/8.4; a monte or play on; no 5-point discard, OTT-4.2; a card of M(hand) not yet revealed,
    and DONE), ``observation_of(seat)`` and ``state()`` (gathers through ``_STATE_HEAD`` and ``_STATE_TAIL``),
    rewards and final results as arrays;
  - the next hand (``_next_hands``, OTT-1.3, 2.1, 2.3): the deal passes, the first round of 5 from a
    deck drawn by the row's rules object (``shuffled_pack()``: its own random stream).
* The rules objects (``OttocentoGame``'s own code, row by row) keep each row's random stream and
  ``history`` (one entry per hand, built by ``_end_hands``) and do the rare rest: the end of a game
  (``_end_of_hand``: the target OTT-10.1, the ``max_hands`` draw OTT-10.3) and the next game, throw-ins
  and wins at the declarations. Before a row's object is used, the array state is written back into it
  (``_push``, also for ``games`` and checkpoints); after it moved, its scalars are read back (``_pull``)
  and its mirror reloaded.

Checkpoints: ``get_state()`` is ``VecEnv.get_state`` with every row's rules object as its
``to_dict()`` JSON (random stream included) and ``set_state()`` rebuilds them, so the trainer's
``VecCollector.state_dict`` resumes exactly (``checkpointable``).

``info`` (valid where ``done``): ``truncated``, ``final_scores``, ``final_hand_scores``,
``final_winner`` (-2 for an ``episode="deal"`` episode whose game goes on); ``final_info(row)`` is the
AEC env's dict.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..cards import BOLOGNESE, TRUMP
from ..engine import NUM_SIGNALS
from ..rules import combos
from ..rules.ottocento import (_GATHERED, _OBS_GATHER, _OBS_POS, _PLAYED_TRICK, _STATE_HEAD,
                                _STATE_GATHERED, _STATE_TAIL, _STATE_TAIL_SLICE, A_MONTE, DECLARE_DONE,
                                DECLARED_SCALE, DISCARDABLE, HAND_SIZE, LAST_TRICK_BONUS, MATTO, MAX_HELD,
                                OBS, PACKET, PLAY_ON, PLAYERS, STATE, TEAM_OF, TOP_CARD,
                                VALUE, N, OttocentoGame, Phase, declarable_many,
                                matto_payments)
from .base import BlockMirror, VecEnv, pack_cards, unpack_cards

_G = _GATHERED  # the observation's v0 card sections come first (the v1 ones follow the scalars)
_SHEAD, _STAIL = (np.asarray(x, dtype=np.int64) for x in (_STATE_HEAD, _STATE_TAIL))
_REL = (np.arange(PLAYERS)[:, None] + np.arange(PLAYERS)[None, :]) % PLAYERS  # [seat, i] -> seat + i
_IX = OttocentoGame.block_index()
_HANDS, _PLAYED, _TRICK_BY = (np.asarray(x, dtype=np.int64) for x in (_IX.hands, _IX.played, _IX.trick_by))
_WON, _SIG = np.asarray(_IX.won, dtype=np.int64), np.asarray(_IX.signal_table, dtype=np.int64)
_DISCARDS, _SAID = np.asarray(_IX.discards, dtype=np.int64), np.asarray(_IX.a_monte_said, dtype=np.int64)
_DECLARED = np.asarray(_IX.declared, dtype=np.int64)
_MATTO_PAID = np.asarray(_IX.matto_paid, dtype=np.int64)
_VOID = np.asarray(_IX.shown_void, dtype=np.int64)  # [4, 5]: seat x suit (4 suits, trumps), H.1.1
_SIGCARD = np.asarray(_IX.signal_card, dtype=np.int64)  # [62, 3]: the signal a card carried, H.1.1
_WON_FLAT = _WON.reshape(-1)  # [2 * N]: team 0's pile, then team 1's
_VALUE = np.asarray(VALUE, dtype=np.int64)
_SUIT = np.asarray(BOLOGNESE.suit, dtype=np.int64)  # 0..3, TRUMP, EXCUSE (the Matto)
_IN_SUIT = np.stack([_SUIT == s for s in range(5)] + [np.ones(N, dtype=bool)])  # [led suit or 5=none: all, N]
_TRUMPS = _SUIT == TRUMP
_NONE = 5  # "no led suit yet" (empty trick, or only the Matto)
# B.4.4 trick ranks as integers: a trump beats any suit card (1000 + strength), a card of the suit led
# ranks by strength, anything else (another suit, the Matto: B.2.4) cannot win; inside the equal
# group (the Moors, B.2.2) a later card of the same strength wins: key = 4 * rank + position there.
_STRENGTH = np.asarray(BOLOGNESE.strength, dtype=np.int64)
_TRUMP_RANK = np.where(_TRUMPS, 1000 + _STRENGTH, -1)
_EQUAL = np.asarray(BOLOGNESE.equal_group, dtype=np.int64)
_POS = np.arange(PLAYERS, dtype=np.int64)
assert _STRENGTH[_SUIT < TRUMP].min() >= 0 and _STRENGTH[_TRUMPS].min() >= 0
_A_MONTE, _DISCARD, _DECLARE, _PLAY = (int(p) for p in (Phase.A_MONTE, Phase.DISCARD, Phase.DECLARE,
                                                          Phase.PLAY))
# OTT-2.1/2.2, rounds 2-3 and the dealer's last 2 (``_deal_rest``): deck position 20 + j goes to seat
# dealer + _DEAL_TO[j] (eldest first: 1, 2, 3, then the dealer 0)
_FIRST_ROUND = PLAYERS * PACKET  # 20 cards dealt before the a monte question (OTT-2.3)
_DEAL_TO = np.array([1 + (j % _FIRST_ROUND) // PACKET for j in range(_FIRST_ROUND, PLAYERS * HAND_SIZE)]
                    + [0] * (N - PLAYERS * HAND_SIZE), dtype=np.int64)
# the array code writes exactly what TrickGame.play_card writes for Ottocento (hands, played, trick_by,
# signal_table, and the v1 shown_void, signal_card, card_trick); with False every action goes to the
# rules objects (the reference path, for debugging)
_VECTOR_PLAY = True
_FIRST_TO = np.repeat(np.arange(PLAYERS), PACKET)  # OTT-2.1 round 1: deck 5i..5i+4 to seat dealer + 1 + i
_TRICKS = HAND_SIZE  # 15 tricks a hand (OTT-7.1)
_MAX_SIGNALS = PLAYERS * HAND_SIZE  # at most one signal per card played

NOT_OVER = -2  # final_winner of an episode="deal" episode that ended with the game going on
_TEAM = np.array(TEAM_OF, dtype=np.int64)


class OttocentoVec(VecEnv):
    """``num_envs`` Ottocento games behind the batched API (see the module docstring)."""

    Game = OttocentoGame
    default_reward_scale = 200.0  # as tarot_env.envs.ottocento.raw_env
    checkpointable = True  # get_state()/set_state() carry the rules objects (their to_dict JSON)

    def __init__(self, num_envs: int, seed: int | None = None, *, copy_outputs: bool = False,
                 **options: Any):
        super().__init__(num_envs, seed, copy_outputs=copy_outputs, **options)
        B = self.num_envs
        self._games: list[OttocentoGame] = []
        self._seen = np.zeros(B, dtype=np.int64)  # len(history) at the episode's last step
        self._truncated = np.zeros(B, dtype=bool)
        self._final_scores = np.zeros((B, 2), dtype=np.int64)
        self._final_hand = np.zeros((B, 2), dtype=np.int64)
        self._final_winner = np.full(B, NOT_OVER, dtype=np.int64)
        self._final: list[dict | None] = [None] * B
        self._deal_reward = self.env_config.reward == "deal"
        self._episode_deal = self.env_config.episode == "deal"
        self._scale = float(self.env_config.reward_scale)
        # every row's state block lives in one matrix: each game's block (and its named views) is
        # re-bound to its row whenever the rules object starts a new hand (a new block), so the
        # array code and the rules code write the same cells
        self._blocks = np.zeros((B, OttocentoGame.block_size()), dtype=bool)
        self._rows = list(self._blocks)  # the row views, bound into the games
        # every seat's observation card sections, kept up to date with the blocks: each array-code
        # write goes to both (``_set``); rows the rules objects moved are reloaded (``_sync``)
        self.m = BlockMirror(OttocentoGame, _OBS_GATHER, B, obs_pos=_OBS_POS)
        # the scalar state of every row (authoritative; the rules objects are brought up to date
        # from it before they are used: ``_stale``)
        i64 = np.int64
        self._cur = np.zeros(B, dtype=i64)
        self._dealer = np.zeros(B, dtype=i64)
        self._leader = np.zeros(B, dtype=i64)
        self._pend = np.full(B, -1, dtype=i64)  # pending signal
        self._phase = np.zeros(B, dtype=i64)
        self._hp = np.zeros(B, dtype=i64)  # hands played
        self._hs = np.zeros((B, PLAYERS), dtype=i64)  # hand sizes
        self._dp = np.zeros((B, PLAYERS), dtype=i64)  # declared points
        self._tw = np.zeros((B, 2), dtype=i64)  # tricks won by team
        self._score = np.zeros((B, 2), dtype=i64)
        self._eowner = np.full(B, -1, dtype=i64)  # excuse_owner
        self._etw = np.full(B, -1, dtype=i64)  # excuse_trick_winner
        self._tlen = np.zeros(B, dtype=i64)  # cards in the current trick
        self._tcards = np.zeros((B, PLAYERS), dtype=i64)  # its cards in play order (from the leader)
        self._led = np.full(B, _NONE, dtype=i64)  # its led suit (B.4.3: the first card not the Matto)
        self._ntr = np.zeros(B, dtype=i64)  # tricks closed this hand
        self._tlog = np.zeros((B, _TRICKS, PLAYERS), dtype=i64)  # closed tricks' cards in play order
        self._tlead = np.zeros((B, _TRICKS), dtype=i64)  # ... their leaders
        self._twin = np.zeros((B, _TRICKS), dtype=i64)  # ... their winners
        self._nsig = np.zeros(B, dtype=i64)  # signals given this hand
        self._ctrick = np.zeros((B, N), dtype=i64)  # card_trick: t + 1 once played in trick t (H.1.1)
        self._siglog = np.zeros((B, _MAX_SIGNALS, 3), dtype=i64)  # (seat, card, signal)
        self._stale = np.zeros(B, dtype=bool)  # the row's rules object lags behind the arrays
        self._deck = np.zeros((B, N), dtype=i64)  # the hand's shuffled deck (read at each new hand)
        self._stop_at_no = self.config.a_monte == "stop_at_no"
        self._a_monte = self.config.a_monte != "off"
        # the declarations (OTT-5, 6.1): M(hand) of the seat declaring now, DECLARE_DONE legal now,
        # the declared points are in the scores
        self._declarable = np.zeros((B, N), dtype=bool)
        self._declarable4 = np.zeros((B, PLAYERS, N), dtype=bool)  # every seat's, from the second discard
        self._done_ok = np.ones(B, dtype=bool)
        self._dadded = np.zeros(B, dtype=bool)
        self._flags = {"moors_double_count": self.config.moors_double_count,
                       "suit_min_natural": self.config.suit_min_natural}

    @property
    def games(self) -> list[OttocentoGame]:
        """Every row's rules object, brought up to date (the array-stepped actions written back)."""
        for b in np.flatnonzero(self._stale).tolist():
            self._push(b)
        return self._games

    def _adopt(self, b: int) -> None:
        """Move game ``b``'s state block into row ``b`` of the batch matrix (values unchanged)."""
        g, row = self._games[b], self._rows[b]
        row[:] = g.block
        g.block = row
        OttocentoGame.bind_block(g, row)
        self._deck[b] = g.deck  # a new block is a new hand

    # --- the rules objects <-> the arrays ------------------------------------------------------------
    def _pull(self, rows: list[int]) -> None:
        """Read rows' scalar state from their rules objects (after the rules code moved them)."""
        if not rows:
            return
        gs = [self._games[b] for b in rows]
        sc = np.array([(g.current, g.dealer, g.leader, g.pending_signal, int(g.phase), g.hands_played,
                        g.excuse_owner, g.excuse_trick_winner, len(g.trick), len(g.tricks), len(g.signals),
                        *g.hand_sizes, *g.declared_points, *g.tricks_won, *g.scores) for g in gs],
                      dtype=np.int64)
        r = np.asarray(rows, dtype=np.int64)
        (self._cur[r], self._dealer[r], self._leader[r], self._pend[r], self._phase[r], self._hp[r],
         self._eowner[r], self._etw[r], self._tlen[r], self._ntr[r], self._nsig[r]) = sc[:, :11].T
        self._hs[r], self._dp[r] = sc[:, 11:15], sc[:, 15:19]
        self._tw[r], self._score[r] = sc[:, 19:21], sc[:, 21:23]
        self._led[r] = _NONE
        self._ctrick[r] = [g.card_trick for g in gs]
        self._declarable[r] = [g.declarable for g in gs]
        self._done_ok[r] = [g.declare_done_ok for g in gs]
        self._dadded[r] = [g.declared_added for g in gs]
        self._stale[r] = False
        for i in np.flatnonzero(sc[:, 8:11].any(1)).tolist():  # mid-play (only without _VECTOR_PLAY)
            b, g = rows[i], gs[i]
            for k, (_, c) in enumerate(g.trick):
                self._tcards[b, k] = c
                if self._led[b] == _NONE and c != MATTO:
                    self._led[b] = _SUIT[c]
            for k, (t, w) in enumerate(g.tricks):
                self._tlog[b, k] = [c for _, c in t]
                self._tlead[b, k], self._twin[b, k] = t[0][0], w
            if g.signals:
                self._siglog[b, :len(g.signals)] = g.signals

    def _push(self, b: int) -> None:
        """Write row ``b``'s array-stepped state (every phase, and hands dealt by ``_next_hands``) back
        into its rules object."""
        g = self._games[b]
        g.phase = Phase(int(self._phase[b]))
        g.current, g.leader = int(self._cur[b]), int(self._leader[b])
        g.pending_signal = int(self._pend[b])
        g.hand_sizes = self._hs[b].tolist()
        g.tricks_won = self._tw[b].copy()
        g.excuse_owner, g.excuse_trick_winner = int(self._eowner[b]), int(self._etw[b])
        ld = int(self._leader[b])
        g.trick = [((ld + i) % PLAYERS, c) for i, c in enumerate(self._tcards[b, :self._tlen[b]].tolist())]
        n = int(self._ntr[b])
        g.tricks = [([((lead + i) % PLAYERS, c) for i, c in enumerate(cards)], w)
                    for cards, lead, w in zip(self._tlog[b, :n].tolist(), self._tlead[b, :n].tolist(),
                                              self._twin[b, :n].tolist())]
        g.signals = [tuple(s) for s in self._siglog[b, :self._nsig[b]].tolist()]
        g.card_trick = self._ctrick[b].copy()
        g.declarable = self._declarable[b].copy()
        g.declare_done_ok = bool(self._done_ok[b])
        g.declared_added = bool(self._dadded[b])
        g.declared_points = self._dp[b].tolist()
        g.scores = self._score[b].copy()
        g.dealer, g.hands_played = int(self._dealer[b]), int(self._hp[b])  # (a hand dealt by _next_hands)
        g.deck = self._deck[b].copy()
        self._stale[b] = False

    def _set(self, r: np.ndarray, cells: np.ndarray, value: bool) -> None:
        """Block cells ``cells`` (int[n] or int[n, m]) of rows ``r`` (int[n]) := ``value``, in the
        blocks and in the observation mirror."""
        self._blocks[r if cells.ndim == 1 else r[:, None], cells] = value
        self.m.write(r, cells, value)

    def _sync(self, rows) -> None:
        """Reload the observation mirror of ``rows`` from their blocks (after rules-object code)."""
        r = np.asarray(rows, dtype=np.int64)
        if len(r):
            self.m.load(r, self._blocks[r])

    # --- VecEnv hooks -------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        cfg = self.config
        self._games = [OttocentoGame(cfg, s) for s in self.row_seeds]
        for b in range(self.num_envs):
            self._adopt(b)
        self._pull(list(range(self.num_envs)))
        self._sync(self._ar)
        self._seen[:] = [len(g.history) for g in self._games]
        self._truncated[:] = False
        self._final_scores[:] = 0
        self._final_hand[:] = 0
        self._final_winner[:] = NOT_OVER
        self._final = [None] * self.num_envs

    def _apply(self, a: np.ndarray) -> None:
        self._truncated[:] = False  # valid where done, as the loop engine's
        ph = self._phase
        if _VECTOR_PLAY:
            play, card = ph == _PLAY, a < N
            am, dc = np.flatnonzero(ph == _A_MONTE), np.flatnonzero(ph == _DISCARD)  # before any change
            de = np.flatnonzero(ph == _DECLARE)
            # the card that closes the hand's last trick goes to the rules object (end-of-hand scoring)
            vec = play.copy()
            sig = np.flatnonzero(vec & ~card)
            if len(sig):  # OTT-8: the signal for the next card
                self._pend[sig] = a[sig] - N
                self._stale[sig] = True
            r = np.flatnonzero(vec & card)
            if len(r):
                self._play_cards(r, a[r])
                over = r[self._ntr[r] == _TRICKS]  # the hand's last trick was closed
                if len(over):
                    self._end_hands(over)
            if len(am):
                vec[am] = self._answer_a_monte(am, a[am])
            if len(de):  # (before the discards: a finished discard starts the declarations)
                vec[de] = self._declare(de, a[de])
            if len(dc):
                self._discard(dc, a[dc])
                vec[dc] = True
        else:
            vec = np.zeros(self.num_envs, dtype=bool)
        if not vec.all():
            self._apply_rules(np.flatnonzero(~vec).tolist(), a)

    def _play_cards(self, r: np.ndarray, c: np.ndarray) -> None:
        """Rows ``r`` play card ``c`` (not the hand's last one): ``TrickGame.play_card`` and
        ``_close_trick`` as array code (B.4.4-B.4.5, OTT-7.2, OTT-8.2)."""
        s = self._cur[r]
        self._set(r, _HANDS[s, c], False)
        self._set(r, _PLAYED[s, c], True)
        self._set(r, _TRICK_BY[s, c], True)
        self._hs[r, s] -= 1
        k = self._tlen[r]
        self._tcards[r, k] = c
        self._tlen[r] = k + 1
        self._ctrick[r, c] = self._ntr[r] + 1  # H.1.1: the trick it was played in
        led = self._led[r]
        v = np.flatnonzero((led != _NONE) & (_SUIT[c] != led) & (c != MATTO))
        if len(v):  # H.1.1 (TrickGame._note_void): not following shows the suit led is gone (B.4.1), and
            rv, sv, lv, cv = r[v], s[v], led[v], c[v]  # a plain card shows no trumps either (B.4.2)
            self._set(rv, np.stack([_VOID[sv, lv], np.where(_SUIT[cv] != TRUMP, _VOID[sv, TRUMP], _VOID[sv, lv])], 1),
                      True)
        p = self._pend[r]
        g = np.flatnonzero(p >= 0)
        if len(g):  # OTT-8.2: the signal goes with this card, public by the suit of the card
            rg, sg, cg, pg = r[g], s[g], c[g], p[g]
            self._set(rg, _SIG[sg, pg, _SUIT[cg]], True)
            self._set(rg, _SIGCARD[cg, pg], True)  # H.1.1: and by the card itself
            n = self._nsig[rg]
            self._siglog[rg, n] = np.stack([sg, cg, pg], 1)
            self._nsig[rg] = n + 1
            self._pend[rg] = -1
        m = c == MATTO
        if m.any():
            self._eowner[r[m]] = s[m]
        first = (self._led[r] == _NONE) & ~m
        self._led[r[first]] = _SUIT[c[first]]
        self._stale[r] = True
        full = k == PLAYERS - 1
        on = ~full
        self._cur[r[on]] = (s[on] + 1) % PLAYERS
        f = r[full]
        if not len(f):
            return
        cards = self._tcards[f]  # [n, 4] in play order
        lead = self._leader[f]
        seats = (lead[:, None] + _POS) % PLAYERS
        rank = np.where(_SUIT[cards] == self._led[f][:, None], _STRENGTH[cards], _TRUMP_RANK[cards])
        wi = (4 * rank + _POS * _EQUAL[cards]).argmax(1)
        nf = np.arange(len(f))
        winner = seats[nf, wi]
        team = _TEAM[winner]
        matto = cards == MATTO
        # B.4.5: the Matto goes back to its owner's team, the rest to the winner's
        wteam = np.where(matto, _TEAM[seats], team[:, None])
        self._set(f, _WON[wteam, cards], True)
        self._set(f, _TRICK_BY[seats, cards], False)
        self._tw[f, team] += 1
        t = self._ntr[f]
        self._tlog[f, t] = cards
        self._tlead[f, t] = lead
        self._twin[f, t] = winner
        self._ntr[f] = t + 1
        hm = matto.any(1)
        self._etw[f[hm]] = winner[hm]
        self._leader[f] = winner
        self._cur[f] = winner
        self._tlen[f] = 0
        self._led[f] = _NONE

    def _end_hands(self, r: np.ndarray) -> None:
        """Rows ``r`` have played their hand out: ``on_hand_played``'s scoring as array code (the Matto
        surrendered OTT-7.4 or paid for OTT-7.3, the discards to a team OTT-4.3, each team's pile
        combinations B.5, card points B.3.2 and the last trick, C.9); each row's history gets the hand's
        entry (as ``on_hand_played`` writes it); a game that ends (the target OTT-10.1, the
        ``max_hands`` draw OTT-10.3) ends in its rules object, the others go on (``_next_hands``)."""
        k = len(r)
        kk = np.arange(k)
        blk = self._blocks
        piles = blk[r[:, None], _WON_FLAT].reshape(k, 2, N)
        tw = self._tw[r]
        owner = self._eowner[r]
        has = owner >= 0
        mine = _TEAM[np.maximum(owner, 0)]
        other = 1 - mine
        surrendered = np.flatnonzero(has & (tw[kk, mine] == 0))  # OTT-7.4: the Matto goes over
        piles[surrendered, mine[surrendered], MATTO] = False
        piles[surrendered, other[surrendered], MATTO] = True
        pays = np.flatnonzero(has & (tw[kk, mine] > 0) & (_TEAM[np.maximum(self._etw[r], 0)] != mine))
        paid = np.full(k, -1, dtype=np.int64)
        if len(pays):  # OTT-7.3: the reference's matto_payments, every paying row at once
            card = matto_payments(piles[pays, mine[pays]], **self._flags)
            piles[pays, mine[pays], card] = False
            piles[pays, other[pays], card] = True
            paid[pays] = card
            self._set(r[pays], _MATTO_PAID[card], True)  # public (H.3)
        matto_team = np.where(has, piles[:, :, MATTO].argmax(1), -1)
        dealer = self._dealer[r]
        dteam = _TEAM[dealer]
        to = np.where(tw[kk, dteam] > 0, dteam, 1 - dteam)  # OTT-4.3
        disc = blk[r[:, None], _DISCARDS[dealer]]
        piles[kk, to] |= disc
        combo = combos.combo_points_many(pack_cards(piles.reshape(2 * k, N)).reshape(k, 2), **self._flags)
        sizes = piles.sum(2, dtype=np.int64)
        card_pts = piles.astype(np.int64) @ _VALUE - sizes // 2  # B.3.2
        last_team = _TEAM[self._twin[r, _TRICKS - 1]]
        dp = self._dp[r]
        declared = np.stack([dp[:, 0] + dp[:, 2], dp[:, 1] + dp[:, 3]], 1)
        scores = declared + combo + card_pts + LAST_TRICK_BONUS * (np.arange(2) == last_team[:, None])
        self._score[r] += scores - declared  # the declarations are in already (OTT-6.1)
        # _end_of_hand: a team at the target with the higher total wins (OTT-10.1/10.2); max_hands
        # ends the game as a draw (OTT-10.3); otherwise the deal passes (OTT-1.3)
        total = self._score[r]
        hp = self._hp[r] + 1
        over = ((total.max(1) >= self.config.target_score) & (total[:, 0] != total[:, 1])) | (
            hp >= self.config.max_hands)
        games = self._games
        cols = [x.tolist() for x in (dealer, scores, tw, matto_team, paid, to, dp, declared, combo, card_pts,
                                     last_team, sizes, self._hp[r], over)]
        for j, b in enumerate(r.tolist()):
            d, sc, t, mt, pd, dto, dpj, decl, cb, cp, lt, sz, h, ov = (c[j] for c in cols)
            g = games[b]
            if ov:  # the game ends (the rules object's own _end_of_hand below; next_game replaces it)
                g.dealer, g.hands_played = int(self._dealer[b]), h
            g.scores = self._score[b].copy()
            g.history.append({"hand": h, "dealer": d, "scores": sc, "tricks_won": t, "thrown_in": False,
                              "matto_team": mt, "matto_paid": pd, "discards_to": dto, "declared": dpj,
                              "declared_team": decl, "combo": cb, "card_points": cp, "last_trick": lt,
                              "pile_sizes": sz, "discards": np.flatnonzero(disc[j]).tolist()})
            if ov:
                g._end_of_hand(check_target=True)
        self._hp[r] = hp
        go_on = r[~over]
        if len(go_on):
            self._next_hands(go_on)
        self._finish(r.tolist())  # every row's history grew: rewards, ends of episodes
        rows = r[over].tolist()
        self._pull(rows)
        self._sync(rows)

    def _next_hands(self, r: np.ndarray) -> None:
        """``start_hand`` of rows ``r`` as array code: the deal passes (OTT-1.3); each row's deck is
        ``shuffled_pack()`` from its rules object's own random stream; the first round of 5 (OTT-2.1),
        then the a monte question (OTT-2.3) or, with ``a_monte="off"``, the rest of the deal. The rules
        objects are brought up to date when next used (``_push``)."""
        games = self._games
        decks = np.array([games[b].shuffled_pack() for b in r.tolist()], dtype=np.int64).reshape(len(r), N)
        d = (self._dealer[r] + 1) % PLAYERS
        self._dealer[r] = d
        self._deck[r] = decks
        self._blocks[r] = False
        self.m.clear_rows(r)
        seats = (d[:, None] + 1 + _FIRST_TO) % PLAYERS
        self._set(r, _HANDS[seats, decks[:, :_FIRST_ROUND]], True)
        self._hs[r] = PACKET
        self._phase[r] = _A_MONTE
        self._cur[r] = self._leader[r] = (d + 1) % PLAYERS  # eldest
        for a, v in ((self._pend, -1), (self._dp, 0), (self._tw, 0), (self._eowner, -1), (self._etw, -1),
                     (self._tlen, 0), (self._ntr, 0), (self._nsig, 0), (self._led, _NONE), (self._ctrick, 0),
                     (self._declarable, False), (self._done_ok, True), (self._dadded, False)):
            a[r] = v
        self._stale[r] = True
        if not self._a_monte:
            self._deal_rest(r)

    def _answer_a_monte(self, r: np.ndarray, act: np.ndarray) -> np.ndarray:
        """``answer_a_monte`` of rows ``r`` as array code (OTT-3.1, 3.2), except a hand thrown in (all
        four said a monte), which is left to the rules object: returns the rows done here."""
        blk = self._blocks
        s, d = self._cur[r], self._dealer[r]
        yes = act == A_MONTE
        self._set(r, _SAID[s, np.where(yes, 0, 1)], True)  # public (H.3)
        last = s == d
        throw = yes & last & blk[r[:, None], _SAID[:, 0]].all(1)
        deal = ~throw & (last | (~yes & self._stop_at_no))
        on = ~throw & ~deal
        self._cur[r[on]] = (s[on] + 1) % PLAYERS
        if deal.any():
            self._deal_rest(r[deal])
        self._stale[r[~throw]] = True
        return ~throw

    def _deal_rest(self, r: np.ndarray) -> None:
        """``_deal_rest``: rounds 2-3 from the same deck, the dealer takes the last 2 (OTT-2.1, 2.2)."""
        d = self._dealer[r]
        seats = (d[:, None] + _DEAL_TO) % PLAYERS
        self._set(r, _HANDS[seats, self._deck[r, _FIRST_ROUND:]], True)
        self._hs[r] = HAND_SIZE
        self._hs[r, d] = MAX_HELD
        self._phase[r] = _DISCARD
        self._cur[r] = d

    def _discard(self, r: np.ndarray, c: np.ndarray) -> None:
        """``discard`` of rows ``r`` as array code (OTT-4.1); after the second card the declarations
        start, eldest first (OTT-5.1)."""
        d = self._dealer[r]
        self._set(r, _HANDS[d, c], False)
        self._set(r, _DISCARDS[d, c], True)  # face down: only the dealer sees them
        self._hs[r, d] -= 1
        self._stale[r] = True
        done = self._hs[r, d] == HAND_SIZE
        if done.any():
            rd = r[done]
            self._phase[rd] = _DECLARE
            # M(hand) of the four hands at once: the hands do not change while the players declare
            hands = self._blocks[rd[:, None], _HANDS.reshape(-1)].reshape(len(rd) * PLAYERS, N)
            m_hands = declarable_many(pack_cards(hands), **self._flags).reshape(len(rd), PLAYERS)
            self._declarable4[rd] = unpack_cards(m_hands, N)
            self._start_declaring(rd, (d[done] + 1) % PLAYERS)

    def _start_declaring(self, r: np.ndarray, seats: np.ndarray) -> None:
        """``_start_declaring``: ``seats`` declare next, with their M(hand) (``declarable_many``)."""
        self._cur[r] = seats
        self._declarable[r] = self._declarable4[r, seats]
        self._done_ok[r] = True

    def _declare(self, r: np.ndarray, act: np.ndarray) -> np.ndarray:
        """``declare`` of rows ``r`` as array code (OTT-5.2, 5.3, 6.1), except the dealer's closing
        ``DECLARE_DONE`` when it makes a team reach the target (won at the declarations, the end of
        the hand), left to the rules object. Returns the rows done here."""
        ok = np.ones(len(r), dtype=bool)
        s = self._cur[r]
        blk = self._blocks
        rev = act < N
        if rev.any():  # a reveal: face up, public, it stays in the hand; DONE legal iff it all scores
            rr, sr = r[rev], s[rev]
            self._set(rr, _DECLARED[sr, act[rev]], True)
            bits = pack_cards(blk[rr[:, None], _DECLARED[sr]])
            pts, scoring = combos.evaluate_many(bits, **self._flags)
            self._done_ok[rr] = (pts > 0) & (scoring == bits)
        done = ~rev
        if done.any():
            rd, sd = r[done], s[done]
            bits = pack_cards(blk[rd[:, None], _DECLARED[sd]])
            some = bits != 0
            if some.any():  # OTT-5.3: per player
                self._dp[rd[some], sd[some]] = combos.combo_points_many(bits[some], **self._flags)
            last = sd == self._dealer[rd]
            if (~last).any():
                self._start_declaring(rd[~last], (sd[~last] + 1) % PLAYERS)
            if last.any():
                rl = rd[last]
                dp = self._dp[rl]
                scores = self._score[rl] + np.stack([dp[:, 0] + dp[:, 2], dp[:, 1] + dp[:, 3]], 1)
                won = (scores.max(1) >= self.config.target_score) & (scores[:, 0] != scores[:, 1])
                ok[np.flatnonzero(done)[last][won]] = False  # OTT-6.1 won at the declarations: the rules
                rl, scores = rl[~won], scores[~won]
                self._score[rl] = scores  # OTT-6.1: into the cumulative score at once
                self._declarable[rl] = False
                self._dadded[rl] = True
                self._phase[rl] = _PLAY
                self._leader[rl] = self._cur[rl] = (self._dealer[rl] + 1) % PLAYERS  # OTT-7.1
        self._stale[r[ok]] = True
        return ok

    def _apply_rules(self, rows: list[int], a: np.ndarray) -> None:
        """The rare phases and the hands' last cards: the rules objects' own code, row by row."""
        games, seen, blocks = self._games, self._seen, self._rows
        acts = a.tolist()
        ended, moved = [], []
        stale = self._stale
        for b in rows:
            moved.append(b)
            if stale[b]:
                self._push(b)
            g = games[b]
            g.apply_unchecked(acts[b])
            if g.block is not blocks[b]:  # a new hand (or a thrown-in one): a new block
                self._adopt(b)
            if len(g.history) != seen[b] or g.game_over:
                ended.append(b)
        if ended:
            self._finish(ended)
        self._pull(moved)
        self._sync(moved)

    def _finish(self, ended: list[int]) -> None:
        """Rewards, ends of episodes, final infos and the next games of rows whose history grew."""
        games, seen = self._games, self._seen
        self._dirty = True
        rew, scale = self._step_rew, self._scale
        for b in ended:
            g = games[b]
            new = g.history[int(seen[b]):]
            seen[b] = len(g.history)
            self.deal_results.extend((b, result) for result in new)
            if self._deal_reward:
                for result in new:
                    s = result["scores"]
                    diff = float(s[0] - s[1])  # team 0's score minus team 1's
                    for p in range(4):
                        rew[b, p] += (diff if TEAM_OF[p] == 0 else -diff) / scale
            elif g.game_over:
                w = g.winner
                for p in range(4):
                    rew[b, p] = 0.0 if w == -1 else (1.0 if w == TEAM_OF[p] else -1.0)
            if g.game_over or (self._episode_deal and new):
                self._done[b] = True
                trunc = bool(getattr(g, "truncated", False))
                self._truncated[b] = trunc
                info = {"scores": g.scores.tolist(), "winner": g.winner,
                        "last_result": g.history[-1] if g.history else None}
                self._final[b] = info
                self._final_scores[b] = info["scores"]
                self._final_hand[b] = info["last_result"]["scores"] if info["last_result"] else (0, 0)
                self._final_winner[b] = NOT_OVER if g.winner is None else g.winner
                if g.game_over:  # the AEC env's reset(): the next game, or the same game's next deal
                    games[b] = g = g.next_game()
                    self._adopt(b)
                seen[b] = len(g.history)

    def _observe(self, seats: np.ndarray, o: np.ndarray) -> None:
        """``o[b]`` = seat ``seats[b]``'s observation of row ``b`` (``OttocentoGame.observation`` for all
        rows at once: one gather of the card sections per seat, the scalars as array arithmetic)."""
        ar = self._ar
        self.m.gather_obs(seats, o)  # the card sections: one row copy per game
        o[:, _G:OBS.phase.stop] = 0.0  # (the v1 card sections after them are gathered too)
        o[:, OBS.played_trick] = _PLAYED_TRICK[self._ctrick]  # absolute card ids: the same for every seat
        pend = self._pend
        sig = np.flatnonzero((pend >= 0) & (seats == self._cur))
        o[sig, OBS.pending_signal.start + pend[sig]] = 1.0
        o[ar, OBS.seat_from_dealer.start + (seats - self._dealer) % PLAYERS] = 1.0
        o[ar, OBS.leader.start + (self._leader - seats) % PLAYERS] = 1.0
        rel = _REL[seats]
        o[:, OBS.hand_sizes] = self._hs[ar[:, None], rel] / MAX_HELD
        o[:, OBS.declared_points] = self._dp[ar[:, None], rel] / DECLARED_SCALE
        my = _TEAM[seats]
        tw, score = self._tw, self._score
        t, s_ = OBS.tricks_won.start, OBS.scores.start
        o[:, t], o[:, t + 1] = tw[ar, my] / HAND_SIZE, tw[ar, 1 - my] / HAND_SIZE
        target, k, h = self.config.target_score, self.config.max_hands, OBS.hands_played.start
        o[:, s_], o[:, s_ + 1] = score[ar, my] / target, score[ar, 1 - my] / target
        hp = self._hp
        o[:, h], o[:, h + 1] = hp / k, (k - hp) / k
        o[ar, OBS.phase.start + self._phase] = 1.0

    def _encode(self) -> None:
        """The acting seats' observations (:meth:`_observe`) and masks: the PLAY phase's as array
        algebra, the rare phases' the rules' ``legal_mask``."""
        cur = self._cur
        self._seat[:] = cur
        self._observe(cur, self._obs)
        ph = self._phase
        games, mask = self._games, self._mask
        if not _VECTOR_PLAY:
            for b, g in enumerate(games):
                mask[b] = g.legal_mask()
            return
        r = np.flatnonzero(ph == _PLAY)
        if len(r):
            self._play_masks(r)
        r = np.flatnonzero(ph == _A_MONTE)  # OTT-3.1: a monte or play on
        if len(r):
            mask[r] = False
            mask[r, A_MONTE] = mask[r, PLAY_ON] = True
        r = np.flatnonzero(ph == _DISCARD)  # OTT-4.2: the dealer's cards but the 5-point ones
        if len(r):
            mask[r] = False
            mask[r, :N] = self._blocks[r[:, None], _HANDS[self._dealer[r]]] & DISCARDABLE
        r = np.flatnonzero(ph == _DECLARE)  # OTT-5: reveal a card of M(hand) not yet revealed; DONE
        if len(r):
            mask[r] = False
            mask[r, :N] = self._declarable[r] & ~self._blocks[r[:, None], _DECLARED[self._cur[r]]]
            mask[r, DECLARE_DONE] = self._done_ok[r]

    def _play_masks(self, r: np.ndarray) -> None:
        """PLAY-phase masks of rows ``r`` (``OttocentoGame.play_mask`` as array algebra): follow, else
        trump, else anything, the Matto always (B.4); the signals (OTT-8.3, 8.4)."""
        cur, pend = self._cur[r], self._pend[r]
        hand = self._blocks[r[:, None], _HANDS[cur]]  # [n, N]
        led = self._led[r]
        ok = hand & _IN_SUIT[led]
        no_follow = ~ok.any(1) & (led != _NONE)
        ok[no_follow] = hand[no_follow] & _TRUMPS
        no_trump = ~ok.any(1) & (led != _NONE)
        ok[no_trump] = hand[no_trump]
        ok[:, MATTO] = hand[:, MATTO]
        cfg = self.config
        after_top = cfg.ott_signal_timing == "after_top_card_played"
        if after_top:  # OTT-8.4: only cards of a suit whose top card was played earlier in the hand
            top_out = self._blocks[r[:, None, None], _PLAYED[None, :, TOP_CARD]].any(1)  # [n, 5]
            sig_ok = ok & (top_out[:, :, None] & _IN_SUIT[None, :5]).any(1)
            sig_ok[:, MATTO] = False
        m = self._mask
        m[r] = False
        m[r, :N] = np.where((pend >= 0)[:, None], sig_ok, ok) if after_top else ok
        allowed = pend < 0
        if cfg.ott_signal_players == "eldest_only":  # OTT-8.3
            allowed &= cur == (self._dealer[r] + 1) % PLAYERS
        if after_top:
            allowed &= sig_ok.any(1)
        m[r[allowed], N:N + NUM_SIGNALS] = True

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"truncated": self._truncated, "final_scores": self._final_scores,
                "final_hand_scores": self._final_hand, "final_winner": self._final_winner}

    # --- checkpoints --------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """As ``VecEnv.get_state``, with each row's rules object as its ``to_dict()`` JSON (the random
        stream included) in place of the objects (``games``)."""
        games = self.games  # brought up to date
        state = super().get_state()
        del state["_games"], state["_rows"]  # the rows are views of _blocks, rebound on restore
        state["games"] = [json.dumps(g.to_dict()) for g in games]
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        state = dict(state)
        data = state.pop("games")
        if data and len(data) != self.num_envs:
            raise ValueError(f"the state holds {len(data)} Ottocento games, this engine has "
                             f"num_envs={self.num_envs}")
        games = [OttocentoGame.from_dict(json.loads(d) if isinstance(d, str) else d) for d in data]
        super().set_state(state)
        if self._blocks.shape != (self.num_envs, OttocentoGame.block_size()):
            raise ValueError(f"the state's blocks have shape {self._blocks.shape}")
        self._rows = list(self._blocks)
        self._games = games  # none: the state of an engine not reset yet
        for b in range(len(games)):
            self._adopt(b)
        if games:
            self._sync(self._ar)

    # --- public extras --------------------------------------------------------------------------------
    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, STATE]: ``OttocentoGame.state_vector`` of every row (one gather, array scalars)."""
        if out is None:
            out = np.empty((self.num_envs, self.state_size), dtype=np.float32)
        ar = self._ar
        out[:, :_STATE_GATHERED] = self._blocks[:, _SHEAD]
        out[:, _STATE_GATHERED:] = 0.0
        out[:, _STATE_TAIL_SLICE] = self._blocks[:, _STAIL]
        out[:, STATE.played_trick] = _PLAYED_TRICK[self._ctrick]
        pend = self._pend
        sig = np.flatnonzero(pend >= 0)
        out[sig, STATE.pending_signal.start + pend[sig]] = 1.0
        out[ar, STATE.dealer.start + self._dealer] = 1.0
        out[ar, STATE.current.start + self._cur] = 1.0  # never game over: rows restart at once
        out[ar, STATE.leader.start + self._leader] = 1.0
        out[:, STATE.tricks_won] = self._tw / HAND_SIZE
        out[:, STATE.declared_points] = self._dp / DECLARED_SCALE
        out[:, STATE.scores] = self._score / self.config.target_score
        k, h = self.config.max_hands, STATE.hands_played.start
        out[:, h], out[:, h + 1] = self._hp / k, (k - self._hp) / k
        out[ar, STATE.phase.start + self._phase] = 1.0
        return out

    def final_info(self, row: int) -> dict[str, Any]:
        if not 0 <= int(row) < self.num_envs:
            raise ValueError(f"row must be in 0..{self.num_envs - 1}, got {row!r}")
        if self._final[row] is None:
            raise ValueError(f"row {row} has not finished an episode yet")
        return self._final[row]

    def observation_of(self, seat: int) -> np.ndarray:
        """float32[B, OBS]: every row's observation of absolute seat ``seat`` (for tests and critics)."""
        if not 0 <= int(seat) < PLAYERS:
            raise ValueError(f"seat must be in 0..{PLAYERS - 1}, got {seat!r}")
        out = np.empty((self.num_envs, self.obs_size), dtype=np.float32)
        self._observe(np.full(self.num_envs, int(seat), dtype=np.int64), out)
        return out

    @property
    def block(self) -> np.ndarray:
        """bool[B, BLOCK]: every row's per-card state block in the reference layout (a fresh copy)."""
        return self._blocks.copy()

    def __getattr__(self, name: str):
        """The reference's block fields (``hands``, ``won``, ...) as fresh ``[B, ...]`` copies."""
        blocks = self.__dict__.get("_blocks")
        if blocks is not None and name in {f for f, _ in OttocentoGame.block_fields()}:
            ix = np.asarray(getattr(_IX, name))
            return blocks[:, ix.ravel()].reshape((self.num_envs,) + ix.shape)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
