"""The batched Ottocento engine: the whole game as arrays, the hot path as compiled kernels.

Row ``i`` plays exactly ``OttocentoGame(config, seed=row_seeds[i])`` and, after each finished game,
its ``next_game()`` (with ``episode="deal"`` an episode ends after each hand and the game goes on), as
the registered AEC environment plays it: same observations, masks, rewards, ends (terminated or
truncated at ``max_hands``), final infos and ``state()``, checked step by step by
``tests/test_vector_ottocento.py`` over every option (signals OTT-8.3/8.4, a monte, B.5 flags,
``episode``, ``reward``, ``max_hands``, ``first_dealer``).

Design: there are no per-row rules objects. Every row's state is arrays with the batch axis first:

* **Per-card state**: the reference's boolean state block (``TrickGame.block_fields``: hands, played,
  trick, won, discards, signal table, declared, matto_paid, a monte answers, shown voids, signal cards)
  in one ``bool[B, BLOCK]`` matrix (``_blocks``), in the reference's layout, so ``block``, ``state()``
  and the observations read it through the reference's own gather tables; the hands again as 62-bit
  sets (``_hbits``, for ``kernels.legal_play`` and the discard mask).
* **Scalars**: seat to act, dealer, leader, pending signal, phase, hands played, hand sizes, declared
  points, tricks won, scores, the Matto's owner and trick, the current trick (cards in play order and
  the suit led), the hand's closed tricks and signals (for the records), ``card_trick`` (H.1.1), the
  shuffled deck, the declarer's M(hand) (``_declarable``, and every seat's: ``_declarable4``).
* **The v2 combination features** by absolute team (``OttocentoGame.combo_sections``) in a
  ``combo_cache.ComboCache`` (``_cc``, keyed by the won piles): the encoder re-values a pile only when it
  changed (at most once a trick, from the family values kept for it), so they need no bookkeeping at
  resets, loads or checkpoints (the cache is left out of ``get_state``).
* **Random streams**: each row's numpy PCG64 stream in arrays (``rng_state``, ``rng_inc``,
  ``rng_half``; :mod:`tarot_env.vector.pcg`, numpy's draws written in compiled code), seeded like the
  reference (``Game(config, seed)``: the first dealer ``rng.integers(4)`` unless ``first_dealer`` is
  set, by numpy's own Generators at ``reset``; then one ``rng.permutation(62)`` per hand, ``_shuffled``,
  and the next game seeded from ``rng.integers(2**63)``, ``pcg.next_games``), so row ``i`` plays the
  reference game of seed ``row_seeds[i]`` draw for draw.
* **Records**: each row's ``history`` (one dict per finished hand, as ``OttocentoGame.history``) is
  built from the arrays when the hand ends (``_end_hands``, ``_throw_in``, ``_won_at_declarations``);
  ``deal_results`` and ``final_info`` hand out those dicts.

The work of a step (``_apply``, ``_encode``):

* **Compiled kernels** (``numba``, ``@njit(cache=True)``, loops over the rows):
  - ``_act_kernel``: every row's action by its phase: PLAY (OTT-7, OTT-8: a signal becomes pending;
    a card leaves the hand for the trick, shows voids by ``kernels.shown_voids``, carries the pending
    signal; a full trick goes by ``kernels.trick_winner_index`` over ``play_tables(BOLOGNESE).beats``,
    the Matto back to its owner's team B.4.5), A_MONTE (OTT-3.1, 3.2, the rest of the deal OTT-2.1,
    2.2), DISCARD (OTT-4.1) and a DECLARE reveal (OTT-5.2); it returns the few rows that need more;
  - ``_encode_kernel``: the acting seat's observation written straight into the output buffer (the
    card sections copied from the block run by run, ``_OBS_RUNS`` from the reference's
    ``_OBS_GATHER``; ``played_trick`` from ``_ptf``, kept as float32 beside ``card_trick``; the scalars
    as ``OttocentoGame.observation``; the v2 ``pile_combos``/``combo_gain`` from the row's cache, a pile
    brought up to date by ``combos.pile_gains_kept`` when it changed) and its mask (``kernels.legal_play``,
    the signals OTT-8.3/8.4, a monte or play on OTT-3.1, no 5-point discard OTT-4.2, a card of M(hand) not yet
    revealed and DONE OTT-5.2);
  - over the rows the action kernel returns: ``_declare_kernel`` (OTT-5.2, 5.3, 6.1, 7.1: the B.5
    points of a declared set by ``combos.evaluate_bits``), ``_declarable_kernel`` (M(hand), OTT-5.1:
    the fixed point of ``declarable_cards``), ``_end_hands_kernel`` (the end of a played-out hand:
    ``_matto_kernel`` OTT-7.4 the Matto surrendered, ``_matto_payment`` OTT-7.3 the card paid for it
    by ``combos.cheapest_card``, ``_count_kernel`` OTT-4.3 the discards, B.3.2 card points, B.3.5 the
    last trick, the piles' B.5 points, the scores C.9), ``_game_ends`` (``target_team`` OTT-10.1/10.2,
    the ``max_hands`` draw OTT-10.3), ``_shuffled`` (each new deck, ``pcg.permutation``) and
    ``_start_hand_kernel`` (OTT-2.1, 2.3: a new hand dealt from a deck).
* **NumPy / Python over the few rows that need it**: the records (``_history``), the rewards
  (``tarot_env.rewards``), the ends of episodes and each new game's stream (``pcg.next_games``).
  (Measured and left: writing every row's observation in the action kernel, row by row while the
  row is in cache, was slower; so was expanding the card sets from 62-bit sets instead of copying
  the block's bytes.)

Checkpoints: every attribute is an array, a plain value or a list/dict of those, so the
default ``VecEnv.get_state``/``set_state`` carry the whole state (``checkpointable``); ``set_state``
only refuses a state of another batch size.

``games`` builds, on demand, each row's ``OttocentoGame`` from the arrays (for tests and debugging:
``to_dict()`` equals the AEC env's game). ``info`` (valid where ``done``): ``truncated``,
``final_scores``, ``final_hand_scores``, ``final_winner`` (-2 for an ``episode="deal"`` episode whose
game goes on); ``final_info(row)`` is the AEC env's dict.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ..cards import BOLOGNESE, EXCUSE
from ..engine import NUM_SIGNALS, _tables
from ..kernels import NO_SUIT, legal_play, play_tables, shown_voids, trick_winner_index
from ..rewards import deal_rewards, game_rewards
from ..rewards import final_info as _final_info
from ..rules import combos
from ..rules.combos import cheapest_card, evaluate_bits
from ..rules.ottocento import (_GATHERED, _OBS_GATHER, _OBS_POS, _PLAYED_TRICK, _STATE_GATHERED,
                                _STATE_HEAD, _STATE_TAIL, _STATE_TAIL_SLICE, A_MONTE, DECLARE_DONE,
                                DECLARED_SCALE, DISCARDABLE, HAND_SIZE, LAST_TRICK_BONUS, MATTO, MAX_HELD,
                                OBS, PACKET, PLAY_ON, PLAYERS, STATE, TEAM_OF, TOP_CARD, VALUE, N,
                                PAYMENT_RANK, OttocentoGame, Phase, declarable_many, target_team)
from .base import VecEnv, pack_cards, unpack_cards
from .combo_cache import ComboCache, write_view
from .pcg import Streams, next_games, permutation, stream_arrays

_SHEAD, _STAIL = (np.asarray(x, dtype=np.int64) for x in (_STATE_HEAD, _STATE_TAIL))
_IX = OttocentoGame.block_index()
_MATTO_PAID = np.asarray(_IX.matto_paid, dtype=np.int64)
# the block fields the kernels write, as their first cell (each field is contiguous, row-major):
# hands[s, c] is cell _H0 + s * N + c, and so on
_H0, _PL0, _TB0, _WON0, _DISC0, _SIG0, _DECL0, _SAID0, _VOID0, _SC0 = (
    int(np.asarray(getattr(_IX, f)).flat[0]) for f in ("hands", "played", "trick_by", "won", "discards", "signal_table",
                                                       "declared", "a_monte_said", "shown_void", "signal_card"))
_VALUE = np.asarray(VALUE, dtype=np.int64)
_PAYMENT_RANK = np.asarray(PAYMENT_RANK, dtype=np.int64)  # OTT-7.3's tie-break
_PT = play_tables(BOLOGNESE)  # B.4: the suit tables, the trick order ``beats``, ``led_after``
_BIT, _SUIT, _SUIT_BITS, _BEATS, _LED_AFTER = _PT.bit, _PT.suit, _PT.suit_bits, _PT.beats, _PT.led_after
_MATTO_BIT = _PT.excuse_bits
_TOP = np.asarray(TOP_CARD, dtype=np.int64)  # OTT-8.4: the top card of suits 0..3 and trumps
_DISCARDABLE_BITS = _PT.to_bits(np.asarray(DISCARDABLE, dtype=bool))  # OTT-4.2: all but the 5-point cards
_A_MONTE, _DISCARD, _DECLARE, _PLAY = (int(p) for p in (Phase.A_MONTE, Phase.DISCARD, Phase.DECLARE,
                                                          Phase.PLAY))
# OTT-2.1/2.2, rounds 2-3 and the dealer's last 2 (``_deal_rest``): deck position 20 + j goes to seat
# dealer + _DEAL_TO[j] (eldest first: 1, 2, 3, then the dealer 0)
_FIRST_ROUND = PLAYERS * PACKET  # 20 cards dealt before the a monte question (OTT-2.3)
_DEAL_TO = np.array([1 + (j % _FIRST_ROUND) // PACKET for j in range(_FIRST_ROUND, PLAYERS * HAND_SIZE)]
                    + [0] * (N - PLAYERS * HAND_SIZE), dtype=np.int64)
_TRICKS = HAND_SIZE  # 15 tricks a hand (OTT-7.1)
_MAX_SIGNALS = PLAYERS * HAND_SIZE  # at most one signal per card played
# the observation's scalar sections (OttocentoGame.observation), and the v1 played_trick
_O_SCAL, _O_SCAL_END = _GATHERED, OBS.phase.stop  # the v0 scalars: pending_signal .. phase
_O_PEND, _O_FROM_DEALER, _O_LEADER = OBS.pending_signal.start, OBS.seat_from_dealer.start, OBS.leader.start
_O_HS, _O_TW, _O_DP = OBS.hand_sizes.start, OBS.tricks_won.start, OBS.declared_points.start
_O_SC, _O_HP, _O_PHASE, _O_PT = OBS.scores.start, OBS.hands_played.start, OBS.phase.start, OBS.played_trick.start
_O_PC, _O_CG = OBS.pile_combos.start, OBS.combo_gain.start  # v2 (combo_cache.write_view: contiguous)
assert _O_CG == _O_PC + 2 and _O_CG + 2 * N == OBS.size

_PLAYED_OUT, _THROWN_IN, _WON_AT_DECLARATIONS = 0, 1, 2  # a hand's record's kind (its first int)
# the record of a played-out hand (one int64 row, ``_end_hands``): its fields and their widths, in the
# order of ``OttocentoGame.on_hand_played``'s history entry (``_result`` rebuilds the dict)
_RECORD = (("kind", 1), ("hand", 1), ("dealer", 1), ("scores", 2), ("tricks_won", 2), ("matto_team", 1),
           ("matto_paid", 1), ("discards_to", 1), ("declared", 4), ("declared_team", 2), ("combo", 2),
           ("card_points", 2), ("last_trick", 1), ("pile_sizes", 2), ("discards", 2))
_RECORD_AT = dict(zip((f for f, _ in _RECORD), np.cumsum([0] + [w for _, w in _RECORD[:-1]]).tolist()))
_RECORD_AT_LIST = list(_RECORD_AT.values())
_RECORD_SIZE = sum(w for _, w in _RECORD)
(_R_HAND, _R_DEALER, _R_SCORES, _R_TW, _R_MATTO_TEAM, _R_PAID, _R_TO, _R_DECLARED, _R_DECLARED_TEAM, _R_COMBO,
 _R_CARDS, _R_LAST, _R_SIZES, _R_DISCARDS) = (_RECORD_AT[f] for f, _ in _RECORD[1:])


def _obs_runs() -> tuple[np.ndarray, np.ndarray]:
    """The card sections of each seat's observation as runs of consecutive block cells: ``[seat, run]
    = (first block cell, first observation position, length)`` and the number of runs per seat, from
    the reference's own gather table (``_OBS_GATHER``, ``_OBS_POS``: ``OttocentoGame.observation``)."""
    runs = np.zeros((PLAYERS, 32, 3), dtype=np.int64)
    count = np.zeros(PLAYERS, dtype=np.int64)
    pos = np.asarray(_OBS_POS, dtype=np.int64)
    for v in range(PLAYERS):
        g = np.asarray(_OBS_GATHER[v], dtype=np.int64)
        cut = np.flatnonzero((np.diff(g) != 1) | (np.diff(pos) != 1)) + 1
        starts, stops = np.r_[0, cut], np.r_[cut, len(g)]
        assert len(starts) <= runs.shape[1]
        count[v] = len(starts)
        runs[v, :len(starts)] = np.stack([g[starts], pos[starts], stops - starts], 1)
    covered = np.zeros(OBS.size, dtype=bool)
    covered[pos] = True
    v2 = OBS.size - OBS.pile_combos.start
    assert not covered[_O_SCAL:_O_SCAL_END].any() and not covered[OBS.played_trick].any() and (
        covered.sum() + (_O_SCAL_END - _O_SCAL) + N + v2 == OBS.size), "the kernel writes every position once"
    return runs, count


_OBS_RUNS, _OBS_NRUNS = _obs_runs()

NOT_OVER = -2  # final_winner of an episode="deal" episode that ended with the game going on


# --- the compiled kernels --------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _act_kernel(acts, stop_at_no, blocks, hbits, phase, cur, dealer, leader, pend, hs, tw, eowner, etw, tlen,
                tcards, led, ntr, tlog, tlead, twin, nsig, siglog, ctrick, ptf, deck):
    """Every row's action (``OttocentoGame.apply_unchecked``), by the row's phase:

    * PLAY (OTT-7, OTT-8, ``TrickGame.play_or_signal``): a signal becomes pending for the seat's next
      card; a card leaves the hand for the trick, shows voids (H.1.1, ``kernels.shown_voids``),
      carries the pending signal (OTT-8.2), and a full trick goes to the best card's team (B.4.4,
      ``kernels.trick_winner_index``; the Matto back to its owner's team, B.4.5), the winner leading;
    * A_MONTE (OTT-3.1, 3.2): the answer is public (H.3); the first "play on" (``stop_at_no``) or the
      dealer's answer deals the rest (OTT-2.1, 2.2), else the next seat answers;
    * DISCARD (OTT-4.1): the card goes face down (the dealer alone sees it);
    * DECLARE (OTT-5.2): a revealed card goes face up (public, it stays in the hand).

    Returns the rows whose hand was played out (for ``_end_hands``), thrown in by all four (OTT-3.2),
    whose dealer laid the second discard (the declarations start, OTT-5.1), and the declaring rows
    with their declarers' declared sets as bits (for ``combos.evaluate_many``)."""
    B = len(phase)
    ended, thrown = np.empty(B, dtype=np.int64), np.empty(B, dtype=np.int64)
    discarded, declaring = np.empty(B, dtype=np.int64), np.empty(B, dtype=np.int64)
    bits = np.zeros(B, dtype=np.uint64)
    n_ended = n_thrown = n_discarded = n_declaring = 0
    one = np.uint64(1)
    for b in range(B):
        ph, a, s = phase[b], acts[b], cur[b]
        if ph == _PLAY:
            if a >= N:  # OTT-8.1: a signal, for the seat's next card
                pend[b] = a - N
                continue
            c = a
            cs = _SUIT[c]
            v1, v2 = shown_voids(led[b], cs)  # H.1.1: not following shows voids (B.4.1, B.4.2)
            if v1 >= 0:
                blocks[b, _VOID0 + s * 5 + v1] = True
            if v2 >= 0:
                blocks[b, _VOID0 + s * 5 + v2] = True
            blocks[b, _H0 + s * N + c] = False
            hbits[b, s] &= ~(one << np.uint64(c))
            hs[b, s] -= 1
            blocks[b, _PL0 + s * N + c] = True
            blocks[b, _TB0 + s * N + c] = True
            ctrick[b, c] = ntr[b] + 1  # H.1.1: the trick it was played in
            ptf[b, c] = _PLAYED_TRICK[ntr[b] + 1]  # ... as the observation's feature
            k = tlen[b]
            tcards[b, k] = c
            tlen[b] = k + 1
            p = pend[b]
            if p >= 0:  # OTT-8.2: public, by the suit of the card (signal table) and by the card (H.1.1)
                blocks[b, _SIG0 + (s * NUM_SIGNALS + p) * 6 + cs] = True
                blocks[b, _SC0 + c * NUM_SIGNALS + p] = True
                j = nsig[b]
                siglog[b, j, 0], siglog[b, j, 1], siglog[b, j, 2] = s, c, p
                nsig[b] = j + 1
                pend[b] = -1
            if cs == EXCUSE:
                eowner[b] = s
            led[b] = _LED_AFTER[led[b] * N + c]  # B.4.3: the first card but the Matto sets the suit led
            if k < PLAYERS - 1:
                cur[b] = (s + 1) % PLAYERS
                continue
            # the trick is full: B.4.4 the best card takes it; B.4.5 the Matto goes back to its owner's team
            lead = leader[b]
            w = (lead + trick_winner_index(_BEATS, N, tcards[b])) % PLAYERS
            team = w % 2  # TEAM_OF: partners sit opposite (OTT-1.1)
            t = ntr[b]
            for q in range(PLAYERS):
                sq, cq = (lead + q) % PLAYERS, tcards[b, q]
                if cq == MATTO:
                    blocks[b, _WON0 + (sq % 2) * N + cq] = True
                    etw[b] = w
                else:
                    blocks[b, _WON0 + team * N + cq] = True
                blocks[b, _TB0 + sq * N + cq] = False
                tlog[b, t, q] = cq
            tw[b, team] += 1
            tlead[b, t], twin[b, t] = lead, w
            ntr[b] = t + 1
            leader[b] = cur[b] = w
            tlen[b] = 0
            led[b] = NO_SUIT
            if t + 1 == _TRICKS:
                ended[n_ended] = b
                n_ended += 1
        elif ph == _A_MONTE:
            yes = a == A_MONTE
            blocks[b, _SAID0 + 2 * s + (0 if yes else 1)] = True
            last = s == dealer[b]  # eldest speaks first, the dealer last
            if yes and last:
                everyone = True
                for q in range(PLAYERS):
                    everyone &= blocks[b, _SAID0 + 2 * q]
                if everyone:
                    thrown[n_thrown] = b
                    n_thrown += 1
                    continue
            if last or (not yes and stop_at_no):
                _deal_rest(b, blocks, hbits, dealer, deck, hs, phase, cur)
            else:
                cur[b] = (s + 1) % PLAYERS
        elif ph == _DISCARD:
            d = dealer[b]
            blocks[b, _H0 + d * N + a] = False
            hbits[b, d] &= ~(one << np.uint64(a))
            blocks[b, _DISC0 + d * N + a] = True
            hs[b, d] -= 1
            if hs[b, d] == HAND_SIZE:
                phase[b] = _DECLARE
                discarded[n_discarded] = b
                n_discarded += 1
        elif ph == _DECLARE:
            if a < N:
                blocks[b, _DECL0 + s * N + a] = True
            x = np.uint64(0)
            for c in range(N):
                if blocks[b, _DECL0 + s * N + c]:
                    x |= one << np.uint64(c)
            declaring[n_declaring] = b
            bits[n_declaring] = x
            n_declaring += 1
    return (ended[:n_ended], thrown[:n_thrown], discarded[:n_discarded], declaring[:n_declaring],
            bits[:n_declaring])


@njit(cache=True, nogil=True)
def _encode_kernel(seats, out, with_obs, mask, with_mask, blocks, hbits, cur, dealer, leader, pend, hs, dp, tw,
                   score, hp, phase, ptf, led, declarable, done_ok, target, max_hands, after_top, eldest_only, cc,
                   mdc, smn, t):
    """``out[b]`` := seat ``seats[b]``'s observation of row ``b`` (``OttocentoGame.observation``): the
    card sections copied from the block run by run (``_OBS_RUNS``), then the scalars (float64
    quotients rounded once to float32, as there), the v2 combination features (``combos.combo_gains`` of
    the won piles, by absolute team in the ``ComboCache`` ``cc``, brought up to date for a pile that
    changed: ``combo_cache.combo_values``), unless ``with_obs`` is false (``observe=False``: masks only); with
    ``with_mask``, ``mask[b]`` := the legal actions of the seat to act (``OttocentoGame.legal_mask``)."""
    for b in range(len(seats)):
        s = seats[b]
        o, blk = out[b], blocks[b]
        if with_obs:
            for r in range(_OBS_NRUNS[s]):
                src, dst, n = _OBS_RUNS[s, r, 0], _OBS_RUNS[s, r, 1], _OBS_RUNS[s, r, 2]
                to, fro = o[dst:dst + n], blk[src:src + n]  # (slices: a vectorised loop)
                for j in range(n):
                    to[j] = fro[j]
            for j in range(_O_SCAL, _O_SCAL_END):
                o[j] = 0.0
            to, fro = o[_O_PT:_O_PT + N], ptf[b]  # played_trick (kept as float32: a vectorised copy)
            for c in range(N):
                to[c] = fro[c]
            # v2 pile_combos, combo_gain: the two teams' won piles (the row's ComboCache: pile k = team k), mine first
            p0, p1 = np.uint64(0), np.uint64(0)
            for c in range(N):
                p0 |= np.uint64(blk[_WON0 + c]) << np.uint64(c)
                p1 |= np.uint64(blk[_WON0 + N + c]) << np.uint64(c)
            my = s % 2
            write_view(cc, b, my, p1 if my else p0, 1 - my, p0 if my else p1, mdc, smn, t, o, _O_PC)
            if pend[b] >= 0 and s == cur[b]:
                o[_O_PEND + pend[b]] = 1.0
            o[_O_FROM_DEALER + (s - dealer[b]) % PLAYERS] = 1.0
            o[_O_LEADER + (leader[b] - s) % PLAYERS] = 1.0
            for i in range(PLAYERS):
                r = (s + i) % PLAYERS
                o[_O_HS + i] = hs[b, r] / MAX_HELD
                o[_O_DP + i] = dp[b, r] / DECLARED_SCALE
            o[_O_TW], o[_O_TW + 1] = tw[b, my] / HAND_SIZE, tw[b, 1 - my] / HAND_SIZE
            o[_O_SC], o[_O_SC + 1] = score[b, my] / target, score[b, 1 - my] / target
            o[_O_HP], o[_O_HP + 1] = hp[b] / max_hands, (max_hands - hp[b]) / max_hands
            o[_O_PHASE + phase[b]] = 1.0
        if not with_mask:
            continue
        ph = phase[b]
        m = mask[b]
        for j in range(len(m)):  # (element loops: slice assignments cost seconds of compile time)
            m[j] = False
        cards = np.uint64(0)
        if ph == _PLAY:
            ok = legal_play(hbits[b, s], led[b], _SUIT_BITS)  # B.4.1-B.4.3, OTT-7.2
            cards = ok
            sig_ok = np.uint64(0)
            if after_top:  # OTT-8.4: a signal goes with a card of a suit whose top card is out
                top = np.uint64(0)
                for u in range(5):
                    for q in range(PLAYERS):
                        if blk[_PL0 + q * N + _TOP[u]]:
                            top |= _SUIT_BITS[u]
                sig_ok = ok & top & ~_MATTO_BIT
                if pend[b] >= 0:
                    cards = sig_ok
            allowed = pend[b] < 0
            if eldest_only and s != (dealer[b] + 1) % PLAYERS:  # OTT-8.3
                allowed = False
            if after_top and sig_ok == 0:
                allowed = False
            if allowed:
                for j in range(NUM_SIGNALS):
                    m[N + j] = True
        elif ph == _A_MONTE:  # OTT-3.1
            m[A_MONTE] = True
            m[PLAY_ON] = True
        elif ph == _DISCARD:  # OTT-4.2: the dealer's cards but the 5-point ones
            cards = hbits[b, dealer[b]] & _DISCARDABLE_BITS
        elif ph == _DECLARE:  # OTT-5.2: a card of M(hand) not yet revealed; DONE when it all scores
            for c in range(N):
                m[c] = declarable[b, c] and not blk[_DECL0 + s * N + c]
            m[DECLARE_DONE] = done_ok[b]
        if cards:
            for c in range(N):  # (a mask per card: a vectorised loop)
                m[c] = cards & _BIT[c] != 0


@njit(cache=True, nogil=True)
def _deal_rest(b, blocks, hbits, dealer, deck, hs, phase, cur):
    """``_deal_rest`` of row ``b``: rounds 2-3 from the same deck, then the dealer takes the last 2
    (OTT-2.1, 2.2); the dealer discards next (OTT-4.1)."""
    d = dealer[b]
    for j in range(_FIRST_ROUND, N):
        q, c = (d + _DEAL_TO[j - _FIRST_ROUND]) % PLAYERS, deck[b, j]
        blocks[b, _H0 + q * N + c] = True
        hbits[b, q] |= np.uint64(1) << np.uint64(c)
    for q in range(PLAYERS):
        hs[b, q] = MAX_HELD if q == d else HAND_SIZE
    phase[b] = _DISCARD
    cur[b] = d


@njit(cache=True, nogil=True)
def _start_hand_kernel(rows, dealers, decks, a_monte_off, blocks, hbits, dealer, deck, hs, phase, cur, leader,
                       pend, dp, tw, eowner, etw, tlen, ntr, nsig, led, ctrick, ptf, declarable, done_ok, dadded):
    """``start_hand(dealer)`` of ``rows`` with their shuffled ``decks``: a new hand's state, the first
    round of 5 (OTT-2.1) and the a monte question (OTT-2.3) or, with ``a_monte="off"``, the rest."""
    for i in range(len(rows)):
        b, d = rows[i], dealers[i]
        dealer[b] = d
        for j in range(blocks.shape[1]):  # (element loops: slice assignments cost seconds of compile time)
            blocks[b, j] = False
        for q in range(PLAYERS):
            hs[b, q] = PACKET
            dp[b, q] = 0
            hbits[b, q] = 0
        for j in range(N):
            deck[b, j] = decks[i, j]
        for j in range(_FIRST_ROUND):  # OTT-2.1: packet i of 5 to seat dealer + 1 + i
            q, c = (d + 1 + j // PACKET) % PLAYERS, decks[i, j]
            blocks[b, _H0 + q * N + c] = True
            hbits[b, q] |= np.uint64(1) << np.uint64(c)
        phase[b] = _A_MONTE
        cur[b] = leader[b] = (d + 1) % PLAYERS  # eldest
        pend[b], eowner[b], etw[b] = -1, -1, -1
        tw[b, 0] = tw[b, 1] = 0
        tlen[b], ntr[b], nsig[b] = 0, 0, 0
        led[b] = NO_SUIT
        for c in range(N):
            ctrick[b, c] = 0
            ptf[b, c] = _PLAYED_TRICK[0]
            declarable[b, c] = False
        done_ok[b], dadded[b] = True, False
        if a_monte_off:
            _deal_rest(b, blocks, hbits, dealer, deck, hs, phase, cur)


@njit(cache=True, nogil=True)
def _matto_kernel(rows, blocks, tw, eowner, etw, piles, pays):
    """The end of a played-out hand, part 1 (``OttocentoGame.team_piles``): ``piles[i, t]`` := team
    ``t``'s cards won in tricks (bit sets), with the Matto surrendered to the other team when its
    owner's team took no trick (OTT-7.4); ``pays[i]`` := the team that must give a card for the Matto
    (OTT-7.3: it took tricks but not the Matto's), else -1."""
    for i in range(len(rows)):
        b = rows[i]
        for t in range(2):
            x = np.uint64(0)
            for c in range(N):
                if blocks[b, _WON0 + t * N + c]:
                    x |= np.uint64(1) << np.uint64(c)
            piles[i, t] = x
        pays[i] = -1
        owner = eowner[b]
        if owner >= 0:
            mine = owner % 2
            if tw[b, mine] == 0:  # OTT-7.4: surrendered
                piles[i, mine] &= ~_MATTO_BIT
                piles[i, 1 - mine] |= _MATTO_BIT
            elif etw[b] % 2 != mine:  # OTT-7.3: pays a low card
                pays[i] = mine


@njit(cache=True, nogil=True)
def _count_kernel(rows, blocks, tw, eowner, dealer, twin, hp, dp, piles, paid, rec):
    """The end of a played-out hand, part 2 (after the Matto payment), into the hand's record ``rec[i]``
    (``_RECORD``; the combinations and the scores follow in ``_end_hands_kernel``): the Matto's team, the
    dealer's discards to a team (OTT-4.3: his own if it took a trick, else the other), each pile's size
    and card points (B.3.2: the values less one per pair), the team of the last trick (B.3.5), the
    declared points (OTT-5.3) per player and team."""
    for i in range(len(rows)):
        b = rows[i]
        r = rec[i]
        r[0], r[_R_HAND], r[_R_DEALER], r[_R_PAID] = _PLAYED_OUT, hp[b], dealer[b], paid[i]
        r[_R_MATTO_TEAM] = -1
        if eowner[b] >= 0:
            r[_R_MATTO_TEAM] = 0 if piles[i, 0] & _MATTO_BIT else 1
        d = dealer[b]
        dteam = d % 2
        to = dteam if tw[b, dteam] > 0 else 1 - dteam
        r[_R_TO] = to
        j = 0
        for c in range(N):
            if blocks[b, _DISC0 + d * N + c]:
                piles[i, to] |= np.uint64(1) << np.uint64(c)
                r[_R_DISCARDS + j] = c
                j += 1
        for t in range(2):
            n, v = 0, 0
            x = piles[i, t]
            for c in range(N):
                if (x >> np.uint64(c)) & np.uint64(1):
                    n += 1
                    v += _VALUE[c]
            r[_R_SIZES + t] = n
            r[_R_CARDS + t] = v - n // 2
            r[_R_TW + t] = tw[b, t]
            r[_R_DECLARED_TEAM + t] = dp[b, t] + dp[b, t + 2]
        for q in range(PLAYERS):
            r[_R_DECLARED + q] = dp[b, q]
        r[_R_LAST] = twin[b, _TRICKS - 1] % 2


@njit(cache=True, nogil=True)
def _matto_payment(pile, mdc, smn, t):
    """OTT-7.3, ``rules.ottocento.matto_payments`` of one pile (bits): of its cards of the lowest value
    (O-9), never the Matto, the one whose loss costs the pile the fewest B.5 points
    (``combos.cheapest_card``), ties broken by ``PAYMENT_RANK``; -1 for none."""
    cand = pile & ~_MATTO_BIT
    low = 1 << 30
    for c in range(N):
        if (cand >> np.uint64(c)) & np.uint64(1) and _VALUE[c] < low:
            low = _VALUE[c]
    lowest = np.uint64(0)
    for c in range(N):
        if (cand >> np.uint64(c)) & np.uint64(1) and _VALUE[c] == low:
            lowest |= np.uint64(1) << np.uint64(c)
    return cheapest_card(pile, lowest, _PAYMENT_RANK, mdc, smn, t)


@njit(cache=True, nogil=True)
def _end_hands_kernel(rows, blocks, tw, eowner, etw, dealer, twin, hp, dp, score, mdc, smn, t):
    """``on_hand_played`` of the played-out ``rows``, into their records (``_RECORD``, returned as
    int64[k, _RECORD_SIZE]): the piles and the Matto surrendered (OTT-7.4, ``_matto_kernel``), the
    card paid for it (OTT-7.3, ``_matto_payment``; public, H.3: the block's matto_paid), the discards,
    card points and last trick (``_count_kernel``), each pile's combinations (B.5, ``evaluate_bits``),
    the hand's scores (C.9: declared + combinations + card points + the last trick B.3.5), added to
    the game's (the declarations are in already, OTT-6.1)."""
    k = len(rows)
    piles = np.empty((k, 2), dtype=np.uint64)
    pays, paid = np.empty(k, dtype=np.int64), np.full(k, -1, dtype=np.int64)
    _matto_kernel(rows, blocks, tw, eowner, etw, piles, pays)
    for i in range(k):
        team = pays[i]
        if team >= 0:
            card = _matto_payment(piles[i, team], mdc, smn, t)
            if card >= 0:
                bit = np.uint64(1) << np.uint64(card)
                piles[i, team] &= ~bit
                piles[i, 1 - team] |= bit
                paid[i] = card
                blocks[rows[i], _MATTO_PAID[card]] = True
    rec = np.zeros((k, _RECORD_SIZE), dtype=np.int64)
    _count_kernel(rows, blocks, tw, eowner, dealer, twin, hp, dp, piles, paid, rec)
    for i in range(k):
        r = rec[i]
        for q in range(2):
            combo, _ = evaluate_bits(piles[i, q], mdc, smn, t)
            r[_R_COMBO + q] = combo
            r[_R_SCORES + q] = r[_R_DECLARED_TEAM + q] + combo + r[_R_CARDS + q]
        r[_R_SCORES + r[_R_LAST]] += LAST_TRICK_BONUS
        for q in range(2):
            score[rows[i], q] += r[_R_SCORES + q] - r[_R_DECLARED_TEAM + q]
    return rec


@njit(cache=True, nogil=True)
def _declarable_kernel(rows, hbits, dealer, cur, declarable, declarable4, done_ok, mdc, smn, t):
    """Rows whose dealer has discarded (OTT-5.1): M(hand) of the four hands (``declarable_cards``: the
    fixed point ``S -> S & scoring_cards(S)``, ``evaluate_bits``; the hands do not change while the
    players declare); the eldest declares first."""
    for i in range(len(rows)):
        b = rows[i]
        for q in range(PLAYERS):
            x = hbits[b, q]
            while True:
                _, scoring = evaluate_bits(x, mdc, smn, t)
                if x & scoring == x:
                    break
                x &= scoring
            for c in range(N):
                declarable4[b, q, c] = (x >> np.uint64(c)) & np.uint64(1) != 0
        e = (dealer[b] + 1) % PLAYERS
        cur[b] = e
        for c in range(N):
            declarable[b, c] = declarable4[b, e, c]
        done_ok[b] = True


@njit(cache=True, nogil=True, _nrt=False)
def _shuffled(rng_state, rng_inc, rng_half, rows, decks):
    """Each row's ``rng.permutation(62)`` (``TrickGame.shuffled_pack``), from its own stream."""
    for j in range(rows.shape[0]):
        permutation(rng_state, rng_inc, rng_half, rows[j], decks[j])


@njit(cache=True, nogil=True)
def _game_ends(rows, check_target, hp, score, target, max_hands):
    """``_end_of_hand`` of ``rows`` (one more hand played): the winning team, ``target_team`` (OTT-10.1/
    10.2; not after a throw-in: ``check_target[i]`` off), else -1; and whether ``max_hands`` ends the
    game as a draw (OTT-10.3). Returns (winner int64[k], truncated bool[k])."""
    k = len(rows)
    winner, trunc = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.bool_)
    for i in range(k):
        b = rows[i]
        hp[b] += 1
        winner[i] = target_team(score[b, 0], score[b, 1], target) if check_target[i] else -1
        trunc[i] = winner[i] < 0 and hp[b] >= max_hands
    return winner, trunc


@njit(cache=True, nogil=True)
def _declare_kernel(rows, acts, bits, mdc, smn, t, target, cur, dealer, dp, score, declarable, declarable4,
                    done_ok, dadded, phase, leader):
    """``declare`` of ``rows`` with their declared sets ``bits`` (B.5 points and scoring cards by
    ``evaluate_bits``): after a reveal,
    DONE is legal iff the whole set scores (OTT-5.2); DONE records the player's points (OTT-5.3) and
    passes to the next declarer (OTT-5.1) or, after the dealer, puts the team points into the scores
    (OTT-6.1) and starts the play, eldest leading (OTT-7.1). Returns the rows whose game was won at
    the declarations (OTT-6.1)."""
    won = np.empty(len(rows), dtype=np.int64)
    n = 0
    for i in range(len(rows)):
        b = rows[i]
        pts, scoring = evaluate_bits(bits[i], mdc, smn, t)  # B.5
        if acts[b] < N:
            done_ok[b] = pts > 0 and scoring == bits[i]
            continue
        s = cur[b]
        dp[b, s] = pts
        if s != dealer[b]:
            s = (s + 1) % PLAYERS
            cur[b] = s
            for c in range(N):
                declarable[b, c] = declarable4[b, s, c]
            done_ok[b] = True
            continue
        score[b, 0] += dp[b, 0] + dp[b, 2]
        score[b, 1] += dp[b, 1] + dp[b, 3]
        for c in range(N):
            declarable[b, c] = False
        dadded[b] = True
        if target_team(score[b, 0], score[b, 1], target) >= 0:
            won[n] = b
            n += 1
        else:
            phase[b] = _PLAY
            leader[b] = cur[b] = (dealer[b] + 1) % PLAYERS
    return won[:n]


# --- the hands' records ------------------------------------------------------------------------------
# A finished hand is recorded as one list of ints (cheap to append at every hand's end); the reference's
# history dict (``OttocentoGame.history``: ``on_hand_played``, ``_throw_in``, ``declare``) is built from
# it when asked for (``deal_results``, ``final_info``, ``games``).


def _result(rec: list[int]) -> dict[str, Any]:
    """The reference's history entry of the hand recorded as ``rec``."""
    kind, h, d, s0, s1 = rec[:5]
    if kind == _THROWN_IN:  # OTT-3.2
        return {"hand": h, "dealer": d, "scores": [s0, s1], "thrown_in": True}
    if kind == _WON_AT_DECLARATIONS:  # OTT-6.1
        return {"hand": h, "dealer": d, "scores": [s0, s1], "declared": rec[5:9], "won_at_declarations": True,
                "thrown_in": False}
    result = {f: rec[at] if w == 1 else rec[at:at + w] for (f, w), at in zip(_RECORD[1:], _RECORD_AT_LIST[1:])}
    result["discards"] = [c for c in result["discards"] if c >= 0]  # (-1: blanked, ``_record``)
    result["thrown_in"] = False
    return result


def _record(result: dict[str, Any]) -> list[int]:
    """The record of the reference's history entry ``result`` (the inverse of :func:`_result`, for
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


class _DealResults:
    """``deal_results`` of the last step: ``(row, result)`` pairs whose ``result`` dicts are built from
    the records only when read (a trainer's per-hand statistics); its length costs nothing."""

    def __init__(self, pairs: list):
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __iter__(self):
        return ((b, _result(rec)) for b, rec in self.pairs)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [(b, _result(rec)) for b, rec in self.pairs[i]]
        b, rec = self.pairs[i]
        return b, _result(rec)


class OttocentoVec(VecEnv):
    """``num_envs`` Ottocento games behind the batched API (see the module docstring)."""

    Game = OttocentoGame
    default_reward_scale = 200.0  # as tarot_env.envs.ottocento.raw_env
    checkpointable = True  # every attribute is an array or plain data

    def __init__(self, num_envs: int, seed: int | None = None, *, copy_outputs: bool = False,
                 **options: Any):
        super().__init__(num_envs, seed, copy_outputs=copy_outputs, **options)
        B = self.num_envs
        cfg = self.config
        # dealing: each row's PCG64 stream in arrays (tarot_env.vector.pcg: numpy's draws, in compiled
        # code); ``rngs`` are numpy's Generators, used for a reset's first dealers only
        self.rng_state, self.rng_inc, self.rng_half = stream_arrays(B)
        self.rngs: list[np.random.Generator] = []
        self._history: list[list[list[int]]] = [[] for _ in range(B)]  # each row's hands' records
        self._truncated = np.zeros(B, dtype=bool)
        self._final_scores = np.zeros((B, 2), dtype=np.int64)
        self._final_hand = np.zeros((B, 2), dtype=np.int64)
        self._final_winner = np.full(B, NOT_OVER, dtype=np.int64)
        self._final: list[list | None] = [None] * B  # the last episode's [scores, winner, record]
        self._deal_reward = self.env_config.reward == "deal"
        self._episode_deal = self.env_config.episode == "deal"
        self._scale = float(self.env_config.reward_scale)
        self._after_top = cfg.ott_signal_timing == "after_top_card_played"  # OTT-8.4
        self._eldest_only = cfg.ott_signal_players == "eldest_only"  # OTT-8.3
        self._stop_at_no = cfg.a_monte == "stop_at_no"
        self._a_monte = cfg.a_monte != "off"
        self._mdc, self._smn = bool(cfg.moors_double_count), int(cfg.suit_min_natural)  # the B.5 flags
        # the per-card state: every row's block in the reference layout (TrickGame.block_fields)
        self._blocks = np.zeros((B, OttocentoGame.block_size()), dtype=bool)
        self._hbits = np.zeros((B, PLAYERS), dtype=np.uint64)  # the hands again, as card bit sets
        i64 = np.int64
        self._cur = np.zeros(B, dtype=i64)
        self._dealer = np.zeros(B, dtype=i64)
        self._leader = np.zeros(B, dtype=i64)
        self._pend = np.full(B, -1, dtype=i64)  # pending signal
        self._phase = np.zeros(B, dtype=i64)
        self._hp = np.zeros(B, dtype=i64)  # hands played (thrown-in ones included, OTT-10.3)
        self._hs = np.zeros((B, PLAYERS), dtype=i64)  # hand sizes
        self._dp = np.zeros((B, PLAYERS), dtype=i64)  # declared points
        self._tw = np.zeros((B, 2), dtype=i64)  # tricks won by team
        self._score = np.zeros((B, 2), dtype=i64)
        self._eowner = np.full(B, -1, dtype=i64)  # excuse_owner
        self._etw = np.full(B, -1, dtype=i64)  # excuse_trick_winner
        self._tlen = np.zeros(B, dtype=i64)  # cards in the current trick
        self._tcards = np.zeros((B, PLAYERS), dtype=i64)  # its cards in play order (from the leader)
        self._led = np.full(B, NO_SUIT, dtype=i64)  # its suit led (B.4.3)
        self._ntr = np.zeros(B, dtype=i64)  # tricks closed this hand
        self._tlog = np.zeros((B, _TRICKS, PLAYERS), dtype=i64)  # closed tricks' cards in play order
        self._tlead = np.zeros((B, _TRICKS), dtype=i64)  # ... their leaders
        self._twin = np.zeros((B, _TRICKS), dtype=i64)  # ... their winners
        self._nsig = np.zeros(B, dtype=i64)  # signals given this hand
        self._ctrick = np.zeros((B, N), dtype=i64)  # card_trick: t + 1 once played in trick t (H.1.1)
        self._ptf = np.zeros((B, N), dtype=np.float32)  # its observation feature, _PLAYED_TRICK[card_trick]
        # v2 pile_combos / combo_gain: each team's won pile valued (OttocentoGame.combo_sections), pile k =
        # team k; a cache that checks its keys (not part of get_state, kept across set_state)
        self._cc = ComboCache.empty(B, 2)
        self._siglog = np.zeros((B, _MAX_SIGNALS, 3), dtype=i64)  # (seat, card, signal)
        self._deck = np.zeros((B, N), dtype=i64)  # the hand's shuffled deck
        # the declarations (OTT-5, 6.1): M(hand) of the seat declaring now, DECLARE_DONE legal now,
        # the declared points are in the scores
        self._declarable = np.zeros((B, N), dtype=bool)
        self._declarable4 = np.zeros((B, PLAYERS, N), dtype=bool)  # every seat's, from the second discard
        self._done_ok = np.ones(B, dtype=bool)
        self._dadded = np.zeros(B, dtype=bool)
        self._ended: list[tuple[np.ndarray, np.ndarray, bool]] = []  # within a step: (rows, scores, target?)

    # --- VecEnv hooks -------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        B = self.num_envs
        dealers = self._reseed_first_dealers()  # OTT-1.2: Game(config, seed)'s first dealer (numpy's Generators)
        self._streams().load(range(B), self.rngs)
        self.rngs = []  # the streams go on in the arrays
        self._history = [[] for _ in range(B)]
        self._score[:] = 0
        self._hp[:] = 0
        self._next_hands(self._ar, dealers)
        self._truncated[:] = False
        self._final_scores[:] = 0
        self._final_hand[:] = 0
        self._final_winner[:] = NOT_OVER
        self._final = [None] * B

    def _apply(self, a: np.ndarray) -> None:
        self._truncated[:] = False  # valid where done, as the loop engine's
        ended, thrown, discarded, declaring, bits = _act_kernel(
            a, self._stop_at_no, self._blocks, self._hbits, self._phase, self._cur, self._dealer, self._leader,
            self._pend, self._hs, self._tw, self._eowner, self._etw, self._tlen, self._tcards, self._led, self._ntr,
            self._tlog, self._tlead, self._twin, self._nsig, self._siglog, self._ctrick, self._ptf, self._deck)
        if len(ended):
            self._end_hands(ended)
        if len(thrown):
            self._throw_in(thrown)
        if len(declaring):
            self._declare(declaring, a, bits)
        if len(discarded):
            self._start_declaring(discarded)
        if self._ended:  # the hands that ended in this step (played out, thrown in, won at the declarations)
            ended = self._ended
            self._ended = []
            if len(ended) == 1:  # (the usual case: one kind of end in a step)
                r, scores, check = ended[0]
                self._hands_ended(r, scores, np.full(len(r), check))
            else:
                self._hands_ended(np.concatenate([e[0] for e in ended]), np.concatenate([e[1] for e in ended]),
                                  np.concatenate([np.full(len(e[0]), e[2]) for e in ended]))

    def _streams(self) -> Streams:
        return Streams(self.rng_state, self.rng_inc, self.rng_half)

    # --- what follows the action kernel, over the few rows that need it ------------------------------
    def _next_hands(self, r: np.ndarray, dealers: np.ndarray) -> None:
        """``start_hand(dealer)`` of rows ``r``: each row's deck is ``rng.permutation(62)`` from its own
        stream (``shuffled_pack``; ``_shuffled``: numpy's draws, compiled), dealt by ``_start_hand_kernel``."""
        decks = np.empty((len(r), N), dtype=np.int64)
        _shuffled(self.rng_state, self.rng_inc, self.rng_half, r, decks)
        _start_hand_kernel(r, dealers, decks, not self._a_monte, self._blocks, self._hbits, self._dealer, self._deck,
                           self._hs, self._phase, self._cur, self._leader, self._pend, self._dp, self._tw, self._eowner,
                           self._etw, self._tlen, self._ntr, self._nsig, self._led, self._ctrick, self._ptf,
                           self._declarable,
                           self._done_ok, self._dadded)

    def _throw_in(self, r: np.ndarray) -> None:
        """OTT-3.2: the cards are thrown in with no score; OTT-1.3: the deal passes (no target check)."""
        hist = self._history
        for b, h, d in zip(r.tolist(), self._hp[r].tolist(), self._dealer[r].tolist()):
            hist[b].append([_THROWN_IN, h, d, 0, 0])
        self._ended.append((r, np.zeros((len(r), 2), dtype=np.int64), False))

    def _start_declaring(self, r: np.ndarray) -> None:
        """Rows ``r`` whose dealer has discarded: M(hand) of the four hands and the eldest to declare
        (OTT-5.1, ``_declarable_kernel``)."""
        _declarable_kernel(r, self._hbits, self._dealer, self._cur, self._declarable, self._declarable4,
                           self._done_ok, self._mdc, self._smn, combos.combo_tables())

    def _declare(self, r: np.ndarray, act: np.ndarray, bits: np.ndarray) -> None:
        """``declare`` of rows ``r`` (OTT-5.2, 5.3, 6.1; ``act``: every row's action) whose declared sets
        are ``bits`` (``_declare_kernel``)."""
        won = _declare_kernel(r, act, bits, self._mdc, self._smn, combos.combo_tables(), self.config.target_score,
                              self._cur, self._dealer, self._dp, self._score, self._declarable, self._declarable4,
                              self._done_ok, self._dadded, self._phase, self._leader)
        if len(won):
            self._won_at_declarations(won)

    def _won_at_declarations(self, r: np.ndarray) -> None:
        """OTT-6.1: the declarations made a team reach the target: the hand ends there."""
        dp = self._dp[r]
        team = np.stack([dp[:, 0] + dp[:, 2], dp[:, 1] + dp[:, 3]], 1)
        rec = np.column_stack([np.full(len(r), _WON_AT_DECLARATIONS), self._hp[r], self._dealer[r], team, dp])
        hist = self._history
        for b, x in zip(r.tolist(), rec.tolist()):
            hist[b].append(x)
        self._ended.append((r, team, True))

    def _end_hands(self, r: np.ndarray) -> None:
        """Rows ``r`` have played their hand out: ``on_hand_played`` (the Matto surrendered OTT-7.4 or
        paid for OTT-7.3, the discards to a team OTT-4.3, each team's pile combinations B.5, card
        points B.3.2 and the last trick, C.9: ``_end_hands_kernel``) and the hand's history entry."""
        rec = _end_hands_kernel(r, self._blocks, self._tw, self._eowner, self._etw, self._dealer, self._twin, self._hp,
                                self._dp, self._score, self._mdc, self._smn, combos.combo_tables())
        hist = self._history
        for b, x in zip(r.tolist(), rec.tolist()):
            hist[b].append(x)
        self._ended.append((r, rec[:, _R_SCORES:_R_SCORES + 2], True))

    def _hands_ended(self, r: np.ndarray, scores: np.ndarray, check_target: np.ndarray) -> None:
        """``_end_of_hand`` of rows ``r`` whose hand's entry (team scores ``scores``) was just recorded:
        a team at the target wins (OTT-10.1/10.2; not after a throw-in: ``check_target`` off); else
        ``max_hands`` ends the game as a draw (OTT-10.3); else the deal passes (OTT-1.3). Then the
        rewards (``tarot_env.rewards``), the ends of episodes, and the next hands and games."""
        self._dirty = True
        winner, trunc = _game_ends(r, check_target, self._hp, self._score, self.config.target_score,
                                   self.config.max_hands)
        total = self._score[r]
        over = (winner >= 0) | trunc
        if self._deal_reward:
            self._step_rew[r] += deal_rewards(scores, TEAM_OF, self._scale)
        elif over.any():
            self._step_rew[r[over]] = game_rewards(winner[over], TEAM_OF)
        hist = self._history
        rl = r.tolist()
        self._results.extend((b, hist[b][-1]) for b in rl)
        ends = np.ones(len(r), dtype=bool) if self._episode_deal else over
        if ends.any():
            re = r[ends]
            self._done[re] = True
            self._truncated[re] = trunc[ends]
            self._final_scores[re] = total[ends]
            self._final_hand[re] = scores[ends]
            w = np.where(over, winner, NOT_OVER)[ends]
            self._final_winner[re] = w
            for b, s, wb in zip(re.tolist(), total[ends].tolist(), w.tolist()):
                self._final[b] = [s, None if wb == NOT_OVER else wb, hist[b][-1]]
        if over.any():  # next_game(): seeded from the row's own stream, scores and history afresh
            ro = r[over]
            next_games(self._streams(), ro)  # default_rng(rng.integers(2**63)), compiled
            for b in ro.tolist():
                hist[b] = []
            self._score[ro] = 0
            self._hp[ro] = 0
        self._next_hands(r, (self._dealer[r] + 1) % PLAYERS)  # OTT-1.3: the deal passes (also to a new game)

    # --- encoders ------------------------------------------------------------------------------------
    def _encode_rows(self, seats: np.ndarray, out: np.ndarray, with_mask: bool, with_obs: bool = True) -> None:
        """``out[b]`` := seat ``seats[b]``'s observation of row ``b``, and the masks (``_encode_kernel``)."""
        cfg = self.config
        _encode_kernel(seats, out, with_obs, self._mask, with_mask, self._blocks.view(np.uint8), self._hbits, self._cur,
                       self._dealer, self._leader, self._pend, self._hs, self._dp, self._tw, self._score, self._hp,
                       self._phase, self._ptf, self._led, self._declarable, self._done_ok, cfg.target_score,
                       cfg.max_hands, self._after_top, self._eldest_only, self._cc,
                       self._mdc, self._smn, combos.combo_tables())

    def _encode(self) -> None:
        """The acting seats' observations and masks."""
        np.copyto(self._seat, self._cur)
        self._encode_rows(self._cur, self._obs, True, self.observe)

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"truncated": self._truncated, "final_scores": self._final_scores,
                "final_hand_scores": self._final_hand, "final_winner": self._final_winner}

    @property
    def deal_results(self) -> _DealResults:
        """The hands finished in the last step, as ``(row, result)`` with ``result`` the rules module's
        own history entry (built when read)."""
        return _DealResults(self._results)

    @deal_results.setter
    def deal_results(self, value) -> None:  # VecEnv clears it at each step
        self._results = list(value)

    # --- checkpoints --------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """``VecEnv.get_state`` without the last step's ``deal_results`` (statistics, not state)."""
        state = super().get_state()
        state.pop("_results", None)
        state.pop("_cc", None)  # a cache that checks its keys (combo_cache)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """``VecEnv.set_state``, refusing a state of another batch size before changing anything."""
        blocks = state.get("_blocks")
        if blocks is not None and len(blocks) != self.num_envs:
            raise ValueError(f"the state holds {len(blocks)} Ottocento games, this engine has "
                             f"num_envs={self.num_envs}")
        super().set_state(state)

    # --- public extras --------------------------------------------------------------------------------
    @property
    def games(self) -> list[OttocentoGame]:
        """Every row's game as an ``OttocentoGame`` rules object, built from the arrays (fresh copies,
        for tests and debugging: changing them changes nothing here)."""
        return [self._game_of(b) for b in range(self.num_envs)]

    def _generator(self, b: int) -> np.random.Generator:
        """Row ``b``'s stream as the reference's ``rng`` (a copy), its ``bit_generator.state`` equal
        field for field: numpy keeps the high half of its last 64-bit output after handing it out
        (``uinteger`` with ``has_uint32 = 0``). Every row has drawn 32-bit words since its last seeding
        (each hand's deck), and a used half was the high half of the output of the current state (a
        32-bit draw that steps keeps its half), so that stale word is recomputed from the state."""
        g = self._streams().generator(b)
        st = g.bit_generator.state
        if not st["has_uint32"]:
            m64 = (1 << 64) - 1
            hi, lo = st["state"]["state"] >> 64, st["state"]["state"] & m64
            x, rot = hi ^ lo, hi >> 58
            st["uinteger"] = (((x >> rot) | (x << (64 - rot))) & m64) >> 32  # XSL-RR output's high half
            g.bit_generator.state = st
        return g

    def _game_of(self, b: int) -> OttocentoGame:
        g = object.__new__(OttocentoGame)
        g.config = self.config
        g.tables = _tables(BOLOGNESE)
        g.rng = self._generator(b)
        g.scores = self._score[b].copy()
        g.history = [_result(rec) for rec in self._history[b]]
        g.winner, g.game_over = None, False  # rows never rest at the end of a game (the next one starts)
        g.hands_played, g.truncated = int(self._hp[b]), False
        g.block = self._blocks[b].copy()
        OttocentoGame.bind_block(g, g.block)
        g.tricks_won = self._tw[b].copy()
        g.hand_sizes = self._hs[b].tolist()
        ld = int(self._leader[b])
        g.trick = [((ld + i) % PLAYERS, c) for i, c in enumerate(self._tcards[b, :self._tlen[b]].tolist())]
        n = int(self._ntr[b])
        g.tricks = [([((lead + i) % PLAYERS, c) for i, c in enumerate(cards)], w)
                    for cards, lead, w in zip(self._tlog[b, :n].tolist(), self._tlead[b, :n].tolist(),
                                              self._twin[b, :n].tolist())]
        g.signals = [tuple(s) for s in self._siglog[b, :self._nsig[b]].tolist()]
        g.card_trick = self._ctrick[b].copy()
        g.pending_signal = int(self._pend[b])
        g.excuse_owner, g.excuse_trick_winner = int(self._eowner[b]), int(self._etw[b])
        g.dealer = int(self._dealer[b])
        g.deck = self._deck[b].copy()
        g.declared_points = self._dp[b].tolist()
        g.declarable = self._declarable[b].copy()
        g.declare_done_ok = bool(self._done_ok[b])
        g.declared_added = bool(self._dadded[b])
        g.leader, g.current = ld, int(self._cur[b])
        g.phase = Phase(int(self._phase[b]))
        return g

    def _load_rows(self, groups: list[tuple[np.ndarray, OttocentoGame]]) -> None:
        """``VecEnv.load_games``: each game's state into its rows, field by field the inverse of
        :meth:`_game_of` (the block, the hands as bit sets, the scalars, the trick and the hand's closed
        tricks and signals, the deck, the declarations, the records of the finished hands, the stream).
        In the declarations (OTT-5.1) every seat's M(hand) is computed again (``declarable_many``: the
        hands do not change while the players declare, so it is what the engine computed at the
        second discard)."""
        records = [[_record(x) for x in g.history] for _, g in groups]  # (raises before anything changes)
        flags = {"moors_double_count": self._mdc, "suit_min_natural": self._smn}
        streams = self._streams()
        for (r, g), rec in zip(groups, records):
            self._blocks[r] = g.block
            self._hbits[r] = hbits = pack_cards(g.hands)
            self._cur[r], self._dealer[r], self._leader[r] = g.current, g.dealer, g.leader
            self._pend[r], self._phase[r], self._hp[r] = g.pending_signal, int(g.phase), g.hands_played
            self._hs[r], self._dp[r], self._tw[r], self._score[r] = (g.hand_sizes, g.declared_points, g.tricks_won,
                                                                     g.scores)
            self._eowner[r], self._etw[r] = g.excuse_owner, g.excuse_trick_winner
            self._tlen[r] = len(g.trick)
            self._tcards[r] = 0
            self._tcards[r, :len(g.trick)] = [c for _, c in g.trick]
            led = g.led_suit()
            self._led[r] = NO_SUIT if led is None else led
            self._ntr[r] = len(g.tricks)
            self._tlog[r], self._tlead[r], self._twin[r] = 0, 0, 0
            for t, (trick, w) in enumerate(g.tricks):
                self._tlog[r, t] = [c for _, c in trick]
                self._tlead[r, t], self._twin[r, t] = trick[0][0], w
            self._nsig[r] = len(g.signals)
            self._siglog[r] = 0
            if g.signals:
                self._siglog[r, :len(g.signals)] = g.signals
            self._ctrick[r] = g.card_trick
            self._ptf[r] = _PLAYED_TRICK[g.card_trick]
            self._deck[r] = g.deck
            self._declarable[r] = g.declarable
            self._declarable4[r] = False
            if g.phase == Phase.DECLARE:
                self._declarable4[r] = unpack_cards(declarable_many(hbits, **flags), N)
            self._done_ok[r], self._dadded[r] = g.declare_done_ok, g.declared_added
            for b in r.tolist():
                self._history[b] = list(rec)  # (each row appends its own hands)
                self._final[b] = None
            self._truncated[r] = False
            self._final_scores[r] = self._final_hand[r] = 0
            self._final_winner[r] = NOT_OVER
            streams.load_into(r, g.rng)

    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, STATE]: ``OttocentoGame.state_vector`` of every row (one gather, array scalars)."""
        if out is None:
            out = np.empty((self.num_envs, self.state_size), dtype=np.float32)
        ar = self._ar
        out[:, :_STATE_GATHERED] = self._blocks[:, _SHEAD]
        out[:, _STATE_GATHERED:] = 0.0
        out[:, _STATE_TAIL_SLICE] = self._blocks[:, _STAIL]
        out[:, STATE.played_trick] = self._ptf
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
        scores, winner, rec = self._final[row]
        return _final_info(scores, winner, _result(rec))  # the AEC env's builder (tarot_env.rewards)

    def observation_of(self, seat: int) -> np.ndarray:
        """float32[B, OBS]: every row's observation of absolute seat ``seat`` (for tests and critics)."""
        if not 0 <= int(seat) < PLAYERS:
            raise ValueError(f"seat must be in 0..{PLAYERS - 1}, got {seat!r}")
        out = np.empty((self.num_envs, self.obs_size), dtype=np.float32)
        self._encode_rows(np.full(self.num_envs, int(seat), dtype=np.int64), out, False)
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
