"""Millone, batched: ``num_envs`` games of RULES.md Part D stepped together (``docs/batched.md``).

The game is written once, in :mod:`tarot_env.rules.millone` (its state ``MilloneRows``, its rules as compiled
kernels over rows and ``MilloneRows`` methods); ``MilloneGame`` runs them on one row, this engine on
``num_envs`` rows, adding what a batch of episodes needs (:class:`VecEnv`: validation, rewards, the end of
episodes and their final info, the automatic reset). Row ``i`` plays exactly ``MilloneGame(config,
seed=row_seeds[i])`` and, after each automatic reset, its ``next_game()`` (decision 7);
``tests/test_golden.py`` holds it to the games recorded before the one-engine rewrite.

A step is the kernel ``_step`` (every row's action, then, in the same pass, its next seat, observation and
mask); only the rows whose hand ended leave it, for the end-of-hand bookkeeping (``MilloneRows.end_hands``,
the rewards, the next hand and its claim check, the episode's end) and are encoded after. ``info`` holds,
valid where ``done``: ``final_scores``, ``final_winner`` (the seat, -1 a draw, -2 an ``episode="deal"``
episode that ended with the game going on), ``truncated`` (``max_hands``), ``final_hand_scores`` (the last
history entry's) and ``final_deal_scores`` (the last hand played out's, D.5: a search's value of a deal);
``final_info(row)`` is the AEC env's final info dict.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..rewards import deal_rewards
from ..rules.combos import combo_points
from ..rules.millone import (
    _GATHERED, FIRST_N, FIRST_TO, PLAY_ON, PLAYERS, SECOND_TO, TARGET, VIEWS, MilloneGame, MilloneRows, _observe_rows,
    _states, card_view, checked_deck, hand_record, pack_bits, record_arrays, unpack_bits,
)
from .base import VecEnv, VecStep

__all__ = ["MilloneVec", "pack_bits", "unpack_bits", "FIRST_TO", "SECOND_TO", "_GATHERED"]


class MilloneVec(VecEnv, MilloneRows):
    """``num_envs`` Millone games in lockstep (see the module docstring and :class:`VecEnv`); the state's
    arrays (:class:`MilloneRows`) are its attributes."""

    Game = MilloneGame
    default_reward_scale = 200.0  # tarot_env.envs.millone.raw_env's
    writes_sparse = True  # obs_format="sparse": the kernels' sparse output (MilloneRows.step_rows, encode_rows)
    CARD_VIEWS = VIEWS  # hands, trick_by, shown_void … (``rules.millone.card_view``)
    _view = card_view
    RECORD = staticmethod(hand_record)  # final_info's last_result: the last history entry, as MilloneGame.history's

    def __init__(self, num_envs: int, seed: int | None = None, **options: Any):
        VecEnv.__init__(self, num_envs, seed, **options)
        B = self.num_envs
        self._alloc(B)
        self._alloc_records(record_arrays(B))  # each row's last finished episode's last history entry
        self.final_truncated = np.zeros(B, dtype=bool)
        # the D.5 scores of the episode's last hand played out (its history entry's; ``final_hand_scores``
        # is a claim's when one followed that hand at the next deal, MIL-3)
        self.final_deal = np.zeros((B, PLAYERS), dtype=np.int64)
        self._encoded = False  # _apply has encoded every row already (VecEnv.step calls _encode next)

    # --- episodes ------------------------------------------------------------------------------------
    def _first_deals(self, dealers: np.ndarray, rows: np.ndarray | None = None) -> None:
        """``VecEnv._reset_all``: every row's (or ``rows``') first hand (MIL-2.1)."""
        rows = self._ar.copy() if rows is None else rows
        self.hands_played[rows] = 0
        claimed = self.start_hands(rows, dealers)
        assert not len(claimed), "a claim with no score is impossible (combinations < 1000)"

    def set_deck(self, row: int, dealer: int, deck) -> None:
        """Restart row ``row``'s current hand from an explicit deck (``MilloneGame.set_deck``: 62 ids
        in MIL-2.2 order; scores and hands played are kept), for tests and golden games. Call it
        between steps, then read the row from the next step's output (or ``peek()``)."""
        if not self._ready:
            raise ValueError("call reset() before set_deck()")
        deck = checked_deck(deck, dealer)
        if not 0 <= row < self.num_envs:
            raise ValueError(f"row must be in 0..{self.num_envs - 1}, got {row!r}")
        first = deck[:FIRST_N]
        seats = np.where(FIRST_TO == 0, 1 - dealer, dealer)
        claims = [int(self.scores[row, p]) + combo_points(first[seats == p].tolist(),
                                                          moors_double_count=self.mdc) for p in range(PLAYERS)]
        if max(claims) >= TARGET:
            raise ValueError(f"this deck lets a player claim the game (MIL-3: claims {claims}); "
                             "choose a deck without a claim")
        self.start_hands(np.array([row]), np.array([dealer]), deck[None])
        self._encode()

    def peek(self) -> VecStep:
        """The current outputs (seat, obs, mask …) without stepping (after ``set_deck``)."""
        return self._result()

    def _clear_records(self, rows) -> None:
        """The records of ``rows`` (an index) cleared: no history entry, no episode finished."""
        super()._clear_records(rows)
        for v in (*self.last.values(), self.final_deal, self.final_truncated):
            v[rows] = 0

    # --- one action per row ----------------------------------------------------------------------------
    def _apply(self, a: np.ndarray) -> None:
        """The kernel ``_step`` plays every row's action and encodes its next decision; the rows whose
        hand ended go through the end-of-hand bookkeeping (``_end_hand``) and are encoded after."""
        dense, sparse = self.observe and not self.sparse, self._sparse_out()
        n = self.step_rows(a, self._obs, self._mask, self._seat, dense, sparse)
        if n:
            rows = self._pending[:n].copy()
            self._end_hand(rows)
            self.encode_rows(rows, self._obs, self._mask, self._seat, dense, sparse)
        self._encoded = True

    def _end_hand(self, rows: np.ndarray) -> None:
        """After ``MilloneRows.end_hands`` (D.5, MIL-6.1): the next hand (MIL-2.1: the players deal alternately)
        and its claim (MIL-3: the claimant wins; his claim is the last result), the rewards, the end of the
        episodes (their final info; for games over, the result) and the next game (``MilloneGame.next_game``:
        seeded from the row's stream, the last hand's non-dealer deals)."""
        self._dirty = True
        cfg = self.env_config
        sc, winner = self.end_hands(rows)
        self.final_deal[rows] = sc  # (valid where an episode ends: the last hand played out)
        on = rows[winner == PLAY_ON]
        claimed = self.start_hands(on, 1 - self.dealer[on])
        winner[np.isin(rows, claimed)] = self.last["claimant"][claimed]
        if cfg.reward == "deal":
            self._step_rew[rows] += deal_rewards(sc, MilloneGame.team_of, cfg.reward_scale)
            self._step_rew[claimed] += deal_rewards(self.last["scores"][claimed], MilloneGame.team_of, cfg.reward_scale)
        over = winner != PLAY_ON
        ends = np.ones(len(rows), dtype=bool) if cfg.episode == "deal" else over
        done = rows[ends]
        self.final_truncated[done] = winner[ends] == -1  # the max_hands cap: a draw
        self._record_ends(done, over[ends], winner[ends], {k: v[done] for k, v in self.last.items()})
        if cfg.reward == "game" and over.any():
            self._game_result_rewards(rows[over], winner[over])
        if over.any():
            g = rows[over]
            self.streams.reseed(g, self.streams.next_game_seeds(g))  # default_rng(rng.integers(2**63))
            self.scores[g] = 0
            self._first_deals(1 - self.dealer[g], g)

    # --- encoders ------------------------------------------------------------------------------------
    def _encode(self) -> None:
        """Every row's acting seat, its observation and legal mask (after ``_apply``, which encoded them
        already, nothing to do)."""
        if self._encoded:
            self._encoded = False
            return
        self.encode_rows(self._ar, self._obs, self._mask, self._seat, self.observe and not self.sparse,
                         self._sparse_out())

    def _sparse_out(self) -> tuple | None:
        """The sparse output the kernels write (``obs_format="sparse"``), else None."""
        return (self._sp_cols, self._sp_vals, self._sp_counts) if self.sparse else None

    # --- full information ----------------------------------------------------------------------------
    def _state_into(self, out: np.ndarray) -> None:
        """``VecEnv.state``: ``MilloneGame.state_vector()`` of every row, from the card sets (kernel ``_states``)."""
        _states(self.s, out, self.max_hands, self._obs_scratch)

    def _observe_seat(self, seats: np.ndarray, out: np.ndarray) -> None:
        _observe_rows(self.s, self.tb, seats, out, self.max_hands, self._cc, self.mdc, self._obs_scratch)

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {**super()._info_arrays(), "truncated": self.final_truncated,
                "final_hand_scores": self.final_last["scores"], "final_deal_scores": self.final_deal}
