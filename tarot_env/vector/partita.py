"""Partita, batched: ``num_envs`` games of RULES.md Part E stepped together by the kernels of
:mod:`tarot_env.rules.partita` (``PartitaRows``), plus what a batch needs (:class:`VecEnv`: validation,
rewards, final info, automatic reset). Row ``i`` plays exactly ``PartitaGame(config, seed=row_seeds[i])``,
then its ``next_game()`` after each reset (PAR-3.3); ``tests/test_golden.py`` holds it to the recorded games.
A step: :func:`_apply_rows`, the end of the scored rows' deals (``PartitaRows.end_deals``), :func:`_encode_rows`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..rewards import deal_rewards
from ..rules.partita import (
    CELL_FIELDS, DEAL_FIELDS, OBS, PLAYERS, SET_FIELDS, TEAM_OF, PartitaGame, PartitaRows,
    _apply_rows, _deal_rows, _encode_rows, _state_rows, card_field, deal_record,
)
from .base import VecEnv


class PartitaVec(VecEnv, PartitaRows):
    """``num_envs`` Partita games in lockstep (see the module docstring and :class:`VecEnv`); the state's
    arrays (:class:`PartitaRows`) are its attributes."""

    Game = PartitaGame
    CARD_VIEWS = (*SET_FIELDS, *CELL_FIELDS)  # hands, won, shown_void … (``card_field``)
    _view = card_field
    RECORD = staticmethod(deal_record)  # final_info's last_result: the episode's last deal's full record

    def __init__(self, num_envs: int, seed: int | None = None, **options: Any):
        VecEnv.__init__(self, num_envs, seed, **options)
        B = self.num_envs
        self.signals = self.config.signals  # PAR-7.1
        self.deals_per_game = self.config.deals_per_game
        self._alloc(B)
        self._alloc_records({k: np.zeros((B,) + s, dtype=np.int64) for k, s in DEAL_FIELDS})  # the last deal's

    @property
    def hand_bits(self) -> np.ndarray:
        """uint64[B, 4]: every hand as a card set (a view of ``sets``)."""
        return self.sets[:, :PLAYERS]

    @property
    def scalars(self) -> np.ndarray:
        """float32[B, 4, 24]: every seat's scalar features (pending_signal .. phase), for the tests."""
        return self.m.obs[:, :, OBS.pending_signal.start:OBS.phase.stop]

    # --- episodes ------------------------------------------------------------------------------------
    def _first_deals(self, dealers: np.ndarray) -> None:
        """``VecEnv._reset_all``: every row's first deal (PAR-4.1)."""
        self.deals_played[:] = 0
        _deal_rows(self.s, self._ar.copy(), dealers, self.deck)

    def _end_deals(self, rows: np.ndarray) -> None:
        """After PAR-6 (scored by the kernel): the rewards, ``PartitaRows.end_deals`` (the record, the next
        deal where the game goes on), then the end of the episodes: their final info (and, for games over,
        the result under ``reward="game"``) and the next game."""
        cfg = self.env_config
        self._dirty = True  # rewards and/or ended episodes in this step
        if cfg.reward == "deal":
            self._step_rew[rows] += deal_rewards(self.deal_scores[rows], TEAM_OF, cfg.reward_scale)
        record, over, winner = self.end_deals(rows, self.deals_per_game)
        ends = np.ones(len(rows), dtype=bool) if cfg.episode == "deal" else over
        self._record_ends(rows[ends], over[ends], winner[ends], {k: v[ends] for k, v in record.items()})
        if cfg.reward == "game" and over.any():
            self._game_result_rewards(rows[over], winner[over])
        if over.any():
            self.new_games(rows[over])

    def _clear_records(self, to) -> None:
        """``VecEnv._copy_rows``: rows ``to`` start a new episode, no deal scored, no final info."""
        super()._clear_records(to)
        self.deal_over[to] = False

    # --- one step ------------------------------------------------------------------------------------
    def _apply(self, a: np.ndarray) -> None:
        """Every row's action (``_apply_rows``); the rows whose deal was scored go through the
        end-of-deal bookkeeping and are dealt again."""
        if _apply_rows(self.s, np.ascontiguousarray(a, dtype=np.int64)):
            self._end_deals(np.flatnonzero(self.deal_over))

    writes_sparse = True  # obs_format="sparse": _encode_rows writes it

    def _encode(self) -> None:
        """Every row's next decision (``_encode_rows``): the seat to act, its observation, its mask (the
        observation's nonzero features with ``obs_format="sparse"``)."""
        self._encode_into(self.current, self._seat, self._mask, self._obs, self.observe, self.sparse)

    def _encode_into(self, seats, seat, mask, obs, with_obs: bool, sparse: bool) -> None:
        _encode_rows(self.s, seats, self.deals_per_game, self.signals, seat, mask, obs, with_obs, sparse,
                     self._sp_cols, self._sp_vals, self._sp_counts)

    # --- full information ----------------------------------------------------------------------------
    def _state_into(self, out: np.ndarray) -> None:
        """``VecEnv.state``: ``PartitaGame.state_vector()`` of every row (``_state_rows``)."""
        _state_rows(self.s, self.deals_per_game, out)

    def _observe_seat(self, seats: np.ndarray, out: np.ndarray) -> None:
        seat, mask = np.zeros(self.num_envs, dtype=np.int64), np.zeros((self.num_envs, self.num_actions), dtype=bool)
        self._encode_into(seats, seat, mask, out, True, False)

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {**super()._info_arrays(), "final_deal_scores": self.final_last["scores"]}
